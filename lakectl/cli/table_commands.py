"""``create``, ``show``, ``history``, ``set``, ``checkpoint`` and ``config``: tables and their log
(no Spark)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    format_option,
    load_cli_config,
    make_context,
    render,
)
from lakectl.cli.table_options import (
    buckets_option,
    partition_by_option,
    primary_key_option,
    schema_option,
)
from lakectl.table.properties import human_size

# --- create -----------------------------------------------------------------------------------

if TYPE_CHECKING:
    from lakectl.ops.checkpoint import CheckpointResult
    from lakectl.ops.create import CreateResult
    from lakectl.ops.inspect import History, ShowResult
    from lakectl.ops.set_properties import SetResult


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@schema_option(required=True, help='Columns, e.g. "sell_id bigint, amt double".')
@primary_key_option()
@partition_by_option()
@buckets_option()
@common_options
def create(
    table: str,
    schema_text: str,
    primary_key: str | None,
    partition_by: str | None,
    buckets: int,
    settings: Settings,
) -> None:
    """Create an empty table.

    \b
    Example:
      lakectl create sales --schema "sell_id bigint, acct_id bigint, change_ts string, \\
          total_amt double, store_id string, create_date string" \\
          --primary-key sell_id --partition-by create_date
    """
    from lakectl.ops.create import create_table, split_columns

    ctx = make_context(settings)
    result = create_table(
        ctx.table(table),
        schema_text,
        split_columns(primary_key),
        split_columns(partition_by),
        buckets,
    )
    render(settings, result, _print_created)


def _print_created(result: CreateResult) -> None:
    meta = result.metadata
    output.line(f"created table {result.table} at {result.url}")
    output.line(f"  columns: {meta.schema.to_ddl()}")
    output.line(f"  primary key: {', '.join(meta.primary_key) or '(none)'}")
    output.line(f"  partitioned by: {', '.join(meta.partition_by) or '(none)'}")


# --- show / history ---------------------------------------------------------------------------


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option(
    "--valid-write-ids", metavar="LIST", help="For Hive-written tables: Hive's valid write-id list."
)
@format_option
@common_options
def show(
    table: str | None, valid_write_ids: str | None, table_format: str, settings: Settings
) -> None:
    """Describe a table: schema, key, partitioning, and per partition base/deltas/rows/bytes.

    Runs without Spark. Rows are exact: the live rows a read returns before Type 7 statements
    (delete events applied; partitions with delete events are merged with pyarrow, reading no
    data column but the key).

    \b
    Example:
      lakectl show sales
    """
    result = api_table(make_context(settings), table).show(valid_write_ids)
    render(settings, result, lambda r: _print_show(r, table_format))


def _print_show(result: ShowResult, table_format: str) -> None:
    columns = ["partition", "base", "deltas", "delete deltas", "rows", "bytes", "obsolete dirs"]
    if table_format != "table":  # the partition rows only (exact counts), for other programs
        partitions = [p.to_dict() for p in result.partitions]
        output.records(partitions, table_format, result.partition_columns)
        return
    output.line(f"table {result.table} ({result.kind}) at {result.url}")
    output.line(f"  version: {result.version}")
    output.line("  columns: " + ", ".join(f"{n} {t}" for n, t in result.schema))
    output.line(f"  primary key: {', '.join(result.primary_key) or '(none)'}")
    output.line(f"  partitioned by: {', '.join(result.partition_by) or '(none)'}")
    if result.buckets:
        output.line(f"  buckets: {result.buckets}")
    output.line(
        "  properties: " + ", ".join(f"{k}={v}" for k, v in sorted(result.properties.items()))
    )
    rows = [
        [
            p.partition,
            p.base or "-",
            p.deltas,
            p.delete_deltas,
            f"{p.rows:,}",
            human_size(p.bytes),
            p.obsolete_dirs,
        ]
        for p in result.partitions
    ]
    bars = [
        output.Bar("▇ deltas", [p.deltas + p.delete_deltas for p in result.partitions]),
        output.Bar("▇ bytes", [p.bytes for p in result.partitions]),
    ]
    output.table(None, columns, rows, bars=bars)
    for p in result.partitions:
        if p.list_bucketing is not None:
            output.line(f"  {p.partition}: list-bucketed by {p.list_bucketing.describe()}")
    total = result.totals
    output.line(
        f"{len(result.partitions)} partition(s), {total['rows']:,} rows, {human_size(total['bytes'])}"
    )


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option("--limit", type=int, default=None, help="Only the last N commits.")
@format_option
@common_options
def history(table: str | None, limit: int | None, table_format: str, settings: Settings) -> None:
    """List the table's commits, one line each (runs without Spark).

    \b
    Example:
      lakectl history sales --limit 20
    """
    entries = api_table(make_context(settings), table).history(limit)
    render(settings, entries, lambda e: _print_history(e, table_format))


def _print_history(entries: History, table_format: str) -> None:
    if table_format != "table":
        output.records(entries.records(), table_format, entries.columns)
        return
    rows = [
        [
            e.version if e.version is not None else "-",
            output.format_millis(e.committed_at),
            e.operation,
            ", ".join(f"{k}={v}" for k, v in e.counts.items() if v),
            e.added_dirs,
            e.info.get("source", ""),
        ]
        for e in entries
    ]
    output.table(
        None, ["version", "committed (UTC)", "operation", "counts", "dirs added", "source"], rows
    )
    if entries.history_start:
        output.note(f"{entries.history_start}: `lakectl clean` expired the older log entries")


@click.command("set", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("assignments", nargs=-1, metavar="KEY=VALUE...")
@click.option("--unset", multiple=True, metavar="KEY", help="Reset KEY to its default.")
@common_options
def set_cmd(
    table: str, assignments: tuple[str, ...], unset: tuple[str, ...], settings: Settings
) -> None:
    """Change table properties (one commit; `lakectl show` lists them). Runs without Spark.

    Keys: compactor.delta.num.threshold, compactor.delta.pct.threshold,
    compactor.aborted.threshold, clean.retain (a duration), clean.retain.minimum (the shortest
    retention clean accepts without --force), write.target-file-size (e.g. 128MB), orc.compress,
    log.checkpoint.interval (commits between log checkpoints; 0: none written automatically),
    updates.max.* (what Type 7 statements may cost a reader, each up to a ceiling that
    only a reader raises, for itself; see the time-travel guide).

    \b
    Example:
      lakectl set sales compactor.delta.num.threshold=20 clean.retain=3d
      lakectl set sales --unset write.target-file-size
    """
    result = api_table(make_context(settings), table).set_properties(assignments, unset)
    render(settings, result, _print_set)


def _print_set(result: SetResult) -> None:
    if not result.changed:
        output.line("nothing changed: the properties already have these values")
        return
    for key, value in result.changed.items():
        shown = value if value is not None else f"{result.properties[key]} (default)"
        output.line(f"{key} = {shown}")
    output.note(f"committed as log entry {result.log_seq}")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@common_options
def checkpoint(table: str, settings: Settings) -> None:
    """Write a log checkpoint of the table's newest state now (runs without Spark).

    Commands read a table's state from its newest checkpoint plus the log records after it.
    Writers add one every log.checkpoint.interval commits (see `lakectl set`); this writes one
    on demand, e.g. after bulk commits or for a table written before checkpoints existed.
    Checkpoints are never required: a missing or damaged one is skipped.

    \b
    Example:
      lakectl checkpoint sales
    """
    result = api_table(make_context(settings), table).checkpoint()
    render(settings, result, _print_checkpoint)


def _print_checkpoint(result: CheckpointResult) -> None:
    done = "wrote" if result.created else "already there:"
    output.line(f"{done} checkpoint at log entry {result.seq} ({result.records} records)")
    output.note(result.url)
    if not result.usable:
        output.note(
            "that checkpoint is damaged: readers skip it, and the next commit writes a new one"
        )


# --- config -----------------------------------------------------------------------------------


@click.command("config", context_settings=CONTEXT_SETTINGS)
@format_option
@common_options
def config_cmd(table_format: str, settings: Settings) -> None:
    """Show the effective configuration and where each value comes from.

    Precedence, highest first: command-line flags, LAKECTL_* environment variables
    (LAKECTL_WAREHOUSE, LAKECTL_TABLE, LAKECTL_MASTER, LAKECTL_REMOTE, LAKECTL_ENGINE, LAKECTL_CONFIG,
    LAKECTL_SPARK_CONF_<KEY with . as __>), ./lakectl.toml, the user's
    ~/.config/lakectl/lakectl.toml, defaults. Values named like key, secret, token, password or
    credential are masked.

    \b
    Example:
      lakectl config
      lakectl --remote sc://127.0.0.1:15002 config --json
    """
    from lakectl.config import config_files

    config = load_cli_config(settings)
    entries = config.effective()
    files = [str(path) for path in config_files()]
    result = {
        "settings": [{"name": n, "value": v, "source": s} for n, v, s in entries],
        "files": files,
    }
    render(settings, result, lambda _: _print_config(entries, files, table_format))


def _print_config(entries: list[tuple[str, str, str]], files: list[str], table_format: str) -> None:
    if table_format != "table":
        output.records(
            [{"name": n, "value": v, "source": s} for n, v, s in entries],
            table_format,
            ("name", "value", "source"),
        )
        return
    output.table(
        "effective configuration",
        ["setting", "value", "source"],
        [[name, value, source] for name, value, source in entries],
    )
    output.note("config files read: " + (", ".join(files) or "none"))
