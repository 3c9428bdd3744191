"""``compact``, ``compactions`` and ``clean``: Hive's compactor and cleaner."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    engine_option,
    format_option,
    make_context,
    render,
    run_operation,
)
from lakectl.errors import UsageError
from lakectl.table.properties import human_size

if TYPE_CHECKING:
    from lakectl.ops.clean import CleanResult
    from lakectl.ops.compact import Compactions, CompactResult

# --- compaction -------------------------------------------------------------------------------


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option("--minor", is_flag=True, help="Merge deltas into one delta_A_B.")
@click.option("--major", is_flag=True, help="Rewrite base + deltas into base_N.")
@click.option(
    "--auto", "auto_", is_flag=True, help="Decide per partition with Hive's thresholds (for cron)."
)
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="COL=VALUE",
    help="Only this partition (repeatable; default: all).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan with reasons; change nothing.")
@click.option(
    "--delta-num-threshold",
    type=int,
    metavar="N",
    help="For --auto: minor when more than N deltas [table property compactor.delta.num.threshold].",
)
@click.option(
    "--delta-pct-threshold",
    type=float,
    metavar="F",
    help="For --auto: major when deltas exceed F of the base [compactor.delta.pct.threshold].",
)
@click.option(
    "--aborted-threshold",
    type=int,
    metavar="N",
    help="For --auto: major when more than N aborted write ids left directories in a partition "
    "[compactor.aborted.threshold].",
)
@click.option(
    "--target-file-size",
    metavar="SIZE",
    help="About this much input per Spark task, e.g. 256MB [write.target-file-size], for "
    "the Spark rewrite; a default compaction runs one task per (partition, bucket). Files "
    "stay one per bucket, as Hive's readers need.",
)
@engine_option
@common_options
def compact(
    table: str,
    minor: bool,
    major: bool,
    auto_: bool,
    partitions: tuple[str, ...],
    dry_run: bool,
    delta_num_threshold: int | None,
    delta_pct_threshold: float | None,
    aborted_threshold: int | None,
    target_file_size: str | None,
    engine: str | None,
    settings: Settings,
) -> None:
    """Compact deltas (minor) or rewrite the base (major), as Hive's compactor does.

    Only write ids below the lowest still-open one are compacted. The result is one commit;
    loads running at the same time still commit. The replaced directories stay until `clean`.
    Running it again when nothing changed does nothing.

    \b
    Example:
      lakectl compact sales --auto --dry-run
      lakectl compact sales --major --partition create_date=2024-01-02
      lakectl compact sales --minor --engine arrow
    """
    kinds = [k for k, on in (("minor", minor), ("major", major), ("auto", auto_)) if on]
    if len(kinds) != 1:
        given = f" (not {' and '.join('--' + k for k in kinds)})" if kinds else ""
        raise UsageError(f"choose one of --minor, --major or --auto{given}")
    kind = kinds[0]
    for flag, value in (
        ("--delta-num-threshold", delta_num_threshold),
        ("--delta-pct-threshold", delta_pct_threshold),
        ("--aborted-threshold", aborted_threshold),
    ):
        if value is not None and kind != "auto":
            raise UsageError(f"{flag} applies to --auto, not --{kind}")
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).compact(
            kind,  # type: ignore[arg-type]
            partitions=partitions,
            dry_run=dry_run,
            delta_num_threshold=delta_num_threshold,
            delta_pct_threshold=delta_pct_threshold,
            aborted_threshold=aborted_threshold,
            target_file_size=target_file_size,
            engine=engine,
        ),
    )
    render(settings, result, _print_compaction)


def _print_compaction(result: CompactResult) -> None:
    rows = [
        [p.relative or "(table)", p.kind or "-", p.reason, ", ".join(p.outputs) or "-"]
        for p in result.partitions
    ]
    title = f"compaction plan for {result.table} ({result.kind}" + (
        ", dry run)" if result.dry_run else ")"
    )
    output.table(title, ["partition", "type", "reason", "output"], rows)
    if result.lowest_open_write_id is not None:
        output.note(
            f"write id {result.lowest_open_write_id} is open: nothing from it up is compacted "
            "(if its writer has died, `lakectl clean` marks it aborted)"
        )
    if result.log_seq is not None:
        output.line(
            f"compacted {len(result.chosen)} partition(s): {len(result.added)} dir(s) written, "
            f"{len(result.obsolete)} made obsolete (remove them with clean) "
            f"in {result.seconds:.1f}s"
        )
        if result.peak_memory_bytes:
            output.note(f"peak memory {human_size(result.peak_memory_bytes)}")
    elif not result.dry_run:
        output.line("nothing to compact")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(["planned", "working", "ready for cleaning", "cleaned", "failed", "damaged"]),
    help="Only compactions in this state (repeatable). `planned` (what `compact --auto` would "
    "do now) is listed only when asked for; it reads ORC footers.",
)
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="COL=VALUE",
    help="Only this partition (repeatable).",
)
@format_option
@common_options
def compactions(
    table: str | None,
    states: tuple[str, ...],
    partitions: tuple[str, ...],
    table_format: str,
    settings: Settings,
) -> None:
    """List the table's compactions, one line per partition (Hive's SHOW COMPACTIONS; no Spark).

    States: planned (what `compact --auto` would do now; only with --state planned), working,
    ready for cleaning (committed; replaced directories still on storage), cleaned, failed
    (raised, or its process died), damaged (a status file lakectl cannot use: unreadable, or
    naming paths that are not its own; `clean` refuses to run while one names such paths).

    \b
    Example:
      lakectl compactions sales --state "ready for cleaning"
      lakectl compactions sales --state planned --partition create_date=2024-01-02 --json
    """
    ctx = make_context(settings)
    entries = api_table(ctx, table).compactions(states, partitions)
    render(settings, entries, lambda e: _print_compactions(e, table_format))


def _print_compactions(entries: Compactions, table_format: str) -> None:
    if table_format != "table":
        output.records(entries.records(), table_format, entries.columns)
        return
    rows = [
        [
            "-" if e.seq is None else e.seq,
            e.partition or "-",
            e.type or "-",
            e.state,
            output.format_millis(e.started_at),
            output.format_millis(e.ended_at),
            len(e.inputs),
            ", ".join(o.rsplit("/", 1)[-1] for o in e.outputs),
            f"{human_size(e.bytes_in)} -> {human_size(e.bytes_out)}",
        ]
        for e in entries
    ]
    output.table(
        None,
        [
            "seq",
            "partition",
            "type",
            "state",
            "start (UTC)",
            "end (UTC)",
            "inputs",
            "outputs",
            "bytes",
        ],
        rows,
    )
    for e in entries:
        if e.state == "damaged":
            output.line(f"damaged: {e.error}")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--retain",
    metavar="DURATION",
    help="Keep every state current within this window, e.g. 7d, 12h "
    "[table property clean.retain, default 7d].",
)
@click.option(
    "--dry-run", is_flag=True, help="Print what would be deleted and why; delete nothing."
)
@click.option(
    "--force",
    is_flag=True,
    help="Allow a retention below the table's clean.retain.minimum (default 1h), e.g. 0s.",
)
@common_options
def clean(table: str, retain: str | None, dry_run: bool, force: bool, settings: Settings) -> None:
    """Delete directories replaced by compactions, files of aborted or dead writers, and log
    entries older than the retention window.

    A replaced directory goes only when no state current inside the retention window reads it:
    time travel inside the window keeps working, and a reader running for less than the window
    never loses files (as with Delta's VACUUM). Decided from the log's commit times, never from
    file times. A write id that never committed is cleaned only once its writer is known to be
    gone (aborted, its process dead on this host, or allocated more than a day ago). Log
    entries before the state current at the start of the window are expired once a checkpoint
    holds them (clean writes one if needed): history then starts at that checkpoint, and time
    travel to an older state is an error naming where history starts. Runs without Spark.

    Only paths of the shapes lakectl writes, inside the table, are deleted: a log record or
    compaction status file naming anything else stops clean with exit 76 before it changes
    anything, and symbolic links inside the table are never followed.

    \b
    Example:
      lakectl clean sales --dry-run
      lakectl clean sales --retain 12h
      lakectl clean sales --retain 0s --force
    """
    ctx = make_context(settings)
    result = api_table(ctx, table).clean(retain, dry_run=dry_run, force=force)
    render(settings, result, _print_clean)


def _print_clean(result: CleanResult) -> None:
    plan = result.plan
    verb = "would delete" if result.dry_run else "deleted"
    rows = [[i.path, i.kind, i.reason, human_size(i.bytes)] for i in plan.delete]
    if rows:
        output.table(f"{verb} ({result.table})", ["path", "kind", "reason", "bytes"], rows)
    kept = [[i.path, i.kind, i.reason, human_size(i.bytes)] for i in plan.keep]
    if kept:
        output.table("kept", ["path", "kind", "reason", "bytes"], kept)
    marked = "would be marked" if result.dry_run else "marked"
    for write_id in plan.abort_write_ids:
        output.note(f"write id {write_id} {marked} aborted")
    for run_id in plan.abort_runs:
        output.note(f"compaction {run_id} {marked} failed")
    if plan.log is not None and plan.log.changes_anything:
        output.note(plan.log.summary(result.dry_run))
    if plan.oldest is not None and plan.oldest.seq > 0:
        output.note(f"after cleaning, {plan.oldest.describe()}")
    total = sum(i.bytes for i in plan.delete)
    output.line(f"{verb} {len(plan.delete)} path(s), {human_size(total)} in {result.seconds:.1f}s")
