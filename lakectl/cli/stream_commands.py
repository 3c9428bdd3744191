"""``lakectl stream``: parse options, run the stream in the foreground, render.

Registered on the main group by :mod:`lakectl.cli.main`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    engine_option,
    make_context,
    render,
)
from lakectl.cli.load_commands import batch_options, evolve_option

if TYPE_CHECKING:
    from lakectl.ops.stream import StreamResult


def _status_line(status: Any) -> str:
    from lakectl.cli.output import format_millis

    parts = [
        status.state,
        f"batches {status.batches:,}",
        f"files {status.files:,}",
        f"rows {status.rows:,}",
    ]
    if status.lag_seconds is not None:
        parts.append(f"lag {status.lag_seconds:.1f}s")
    if status.last_version is not None:
        parts.append(
            f"last commit v{status.last_version} at {format_millis(status.last_commit_at)}"
        )
    if status.compacting:
        parts.append("compacting")
    elif status.compactions:
        parts.append(f"compactions {status.compactions}")
    if status.bad_files:
        parts.append(f"bad files {len(status.bad_files)}")
    return " | ".join(parts)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("source_dir")
@batch_options(
    format_help="Format of the landing files (default: from the extension of a file already "
    "there).",
    mode_help="As for load. Default: cdc with --op-column, upsert when the table has a key, "
    "else append.",
    key_help="Must match the table's key when given.",
    partition_help="Must match the table's partitioning.",
)
@click.option(
    "--trigger",
    default="5s",
    show_default=True,
    help="How often Spark looks for new files (e.g. 500ms, 5s, 1m).",
)
@click.option(
    "--on-bad-file",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="fail: stop, committing nothing of the micro-batch; skip: move the file to "
    "SOURCE_DIR/_bad/ and load the rest.",
)
@click.option(
    "--max-files-per-batch",
    type=int,
    default=1000,
    show_default=True,
    help="At most this many files per micro-batch (transaction).",
)
@click.option(
    "--no-compact", is_flag=True, help="Do not run `compact --auto` between micro-batches."
)
@click.option("--max-batches", type=int, help="Stop after this many committed micro-batches.")
@click.option("--stop-after", type=float, metavar="SECONDS", help="Stop after this many seconds.")
@evolve_option
@engine_option
@common_options
def stream(
    table: str,
    source_dir: str,
    evolve: bool,
    trigger: str,
    on_bad_file: str,
    max_files_per_batch: int,
    no_compact: bool,
    max_batches: int | None,
    stop_after: float | None,
    engine: str | None,
    settings: Settings,
    **batch: Any,
) -> None:
    """Load files as they land in SOURCE_DIR, one transaction per micro-batch, until stopped.

    Spark Structured Streaming watches SOURCE_DIR; each micro-batch's files are loaded with
    `load`'s semantics and committed as one version whose log record names the files, so a
    stream killed at any moment and restarted applies every file exactly once. Producers should
    write a file under a name starting with `.` or `_` and rename it when complete. Between
    micro-batches `compact --auto` runs in the background. Ctrl-C or SIGTERM stops after the
    running micro-batch (a second Ctrl-C abandons it; nothing partial is ever committed).
    Files may lack columns that have a default (or are nullable); with --evolve, a file's new
    columns join the table in its micro-batch's commit. With --engine arrow no JVM starts:
    lakectl lists SOURCE_DIR every trigger, and loads and compacts as `load --engine arrow` and
    `compact --engine arrow` do.

    \b
    Example:
      lakectl stream sales /landing/sales --format csv --mode cdc \\
          --op-column op_code --order-by change_ts --trigger 5s --on-bad-file skip
    """
    as_json = settings.as_json
    live = not as_json and output.stderr.is_terminal
    events = (lambda text: None) if as_json else output.note
    table_api = api_table(make_context(settings), table)
    options = {
        "mode": batch["mode"],
        "format": batch["fmt"],
        "op_column": batch["op_column"],
        "op_values": batch["op_values"],
        "order_by": batch["order_by"],
        "primary_key": batch["primary_key"],
        "partition_by": batch["partition_by"],
        "evolve": evolve,
        "trigger": trigger,
        "on_bad_file": on_bad_file,
        "max_files_per_batch": max_files_per_batch,
        "compact": not no_compact,
        "max_batches": max_batches,
        "stop_after": stop_after,
        "engine": engine,
        "on_event": events,
    }
    if live:
        starting = "starting" if engine == "arrow" else "starting Spark"
        with output.stderr.status(starting) as status_line:
            last = [0.0]

            def tick(status: Any) -> None:
                if time.time() - last[0] >= 0.25:
                    last[0] = time.time()
                    status_line.update(_status_line(status))

            result = table_api.stream(source_dir, on_tick=tick, **options)
    else:
        result = table_api.stream(source_dir, **options)
    render(settings, result, _print_stream)


def _print_stream(result: StreamResult) -> None:
    s = result.status
    output.line(
        f"stream {result.source} -> {result.table} stopped ({result.stopped_by}) after "
        f"{result.seconds:.1f}s: {s.batches:,} micro-batches, {s.files:,} files, {s.rows:,} rows"
    )
    if result.engine != "spark":
        engines = ", ".join(f"{k} {v:,}" for k, v in sorted(s.engines.items()))
        output.line(
            f"  engine: {result.engine}" + (f" (micro-batches: {engines})" if engines else "")
        )
        if s.fallback_reason:
            output.line(f"  the latest micro-batch loaded by Spark: {s.fallback_reason}")
    if s.counts:
        output.line("  " + ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in s.counts.items()))
    if s.bad_files:
        output.line(f"  bad files moved aside: {', '.join(b['file'] for b in s.bad_files)}")
    output.line(
        f"  compactions: {s.compactions}; most deltas in a partition: {s.max_deltas_per_partition}"
        + (f"; last compaction error: {s.compaction_error}" if s.compaction_error else "")
    )
