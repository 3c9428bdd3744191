"""The ``lakectl`` command line: parse options, call one operation, render its result.

Every command shares ``--json``, ``--warehouse``, ``--master``, ``--remote`` and ``--conf``;
errors are mapped to exit codes in :func:`main` and nowhere else.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import click

from lakectl.cli import install_commands, output
from lakectl.errors import LakectlError, UsageError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class AliasedGroup(click.Group):
    """A group that accepts ``snapshot-at`` for ``snapshot``."""

    aliases: ClassVar[dict[str, str]] = {"snapshot-at": "snapshot"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[Any, Any, list[str]]:
        _, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else None), cmd, rest


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options every command takes (also accepted before the command name)."""

    @click.option(
        "--json", "as_json", is_flag=True, default=None, help="Print the result (or error) as JSON."
    )
    @click.option(
        "--warehouse",
        metavar="URL",
        help="Root for table names [env LAKECTL_WAREHOUSE; default ./warehouse].",
    )
    @click.option(
        "--master", metavar="URL", help="Spark master, e.g. local[*] or spark://host:7077."
    )
    @click.option(
        "--remote", metavar="URL", help="Spark Connect server, e.g. sc://127.0.0.1:15002."
    )
    @click.option(
        "--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable)."
    )
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        as_json: bool | None,
        warehouse: str | None,
        master: str | None,
        remote: str | None,
        confs: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        ctx = click.get_current_context()
        root = ctx.find_root().params
        settings = {
            "as_json": bool(as_json if as_json is not None else root.get("as_json")),
            "warehouse": warehouse or root.get("warehouse"),
            "master": master or root.get("master"),
            "remote": remote or root.get("remote"),
            "confs": tuple(root.get("confs") or ()) + confs,
        }
        ctx.meta["lakectl.json"] = settings["as_json"]
        return func(*args, settings=settings, **kwargs)

    return wrapper


def make_context(settings: dict[str, Any]):  # -> Context
    from lakectl.config import load_config
    from lakectl.ops.context import Context

    config = load_config(
        warehouse=settings["warehouse"],
        master=settings["master"],
        remote=settings["remote"],
        conf=settings["confs"],
    )
    return Context(config=config)


def run_operation(
    settings: dict[str, Any], ctx: Any, operation: Callable[..., Any], *args: Any
) -> Any:
    """Run a Spark operation with a status line on a terminal; in --json mode print its result
    and return None, else return the result for the command to render."""
    with output.progress(not settings["as_json"]) as report:
        ctx.progress = report
        result = operation(ctx, *args)
    if settings["as_json"]:
        output.emit_json(result.to_json())
        return None
    return result


def parse_time_option(value: str | None, option: str, timezone: str | None = None) -> int | None:
    if value is None:
        return None
    from lakectl.updates.times import parse_time

    try:
        parsed = parse_time(value, timezone)
    except LakectlError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from exc
    if parsed.warning:
        output.note(f"warning: {option}: {parsed.warning}")
    return parsed.millis


@click.group(cls=AliasedGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=install_commands.print_version,
    help="Show the version and whether the Spark data source was found, then exit.",
)
@click.option(
    "--json", "as_json", is_flag=True, default=False, help="Print results and errors as JSON."
)
@click.option(
    "--warehouse",
    metavar="URL",
    help="Root for table names [env LAKECTL_WAREHOUSE; default ./warehouse].",
)
@click.option("--master", metavar="URL", help="Spark master (default local[*]).")
@click.option("--remote", metavar="URL", help="Spark Connect server, e.g. sc://127.0.0.1:15002.")
@click.option(
    "--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable)."
)
def cli(**_: Any) -> None:
    """Maintain Hive-ACID-layout tables on local disks, S3 or HDFS with Spark.

    TABLE is a name under the warehouse (--warehouse, LAKECTL_WAREHOUSE, lakectl.toml; default
    ./warehouse) or a location (/path, file://, s3://, hdfs://).

    \b
    Example:
      lakectl create sales --schema "sell_id bigint, total_amt double, create_date string" \\
          --primary-key sell_id --partition-by create_date
      lakectl load sales batch1.csv --mode cdc --op-column op_code --order-by change_ts
      lakectl snapshot sales --where "create_date = '2024-01-02'"
    """


# --- create -----------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--schema", "schema_text", required=True, help='Columns, e.g. "sell_id bigint, amt double".'
)
@click.option("--primary-key", metavar="COLS", help="Key columns (comma-separated).")
@click.option("--partition-by", metavar="COLS", help="Partition columns (comma-separated).")
@click.option(
    "--buckets",
    type=int,
    default=0,
    show_default=True,
    help="Bucket files per partition, hashed by key (0: no bucketing).",
)
@common_options
def create(
    table: str,
    schema_text: str,
    primary_key: str | None,
    partition_by: str | None,
    buckets: int,
    settings: dict[str, Any],
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
    if settings["as_json"]:
        output.emit_json(result.to_json())
        return
    meta = result.metadata
    output.line(f"created table {result.table} at {result.url}")
    output.line(f"  columns: {meta.schema.to_ddl()}")
    output.line(f"  primary key: {', '.join(meta.primary_key) or '(none)'}")
    output.line(f"  partitioned by: {', '.join(meta.partition_by) or '(none)'}")


# --- load -------------------------------------------------------------------------------------


def batch_options(
    *, format_help: str, mode_help: str, key_help: str, partition_help: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options ``load`` and ``stream`` share: format, mode, key, partitioning, op codes and
    change order (``fmt``, ``mode``, ``primary_key``, ``partition_by``, ``op_column``,
    ``op_values``, ``order_by``)."""
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["csv", "json", "parquet", "orc", "avro"]),
            help=format_help,
        ),
        click.option(
            "--mode", type=click.Choice(["append", "upsert", "cdc"]), default=None, help=mode_help
        ),
        click.option("--primary-key", metavar="COLS", help=key_help),
        click.option("--partition-by", metavar="COLS", help=partition_help),
        click.option("--op-column", metavar="COL", help="CDC op code column [default op_code]."),
        click.option(
            "--op-values",
            default="I=insert,U=update,D=delete",
            show_default=True,
            help="Op code meanings.",
        ),
        click.option(
            "--order-by",
            metavar="COL",
            help="Change-order column: a change older than the stored version is ignored.",
        ),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def load_options(
    ctx: Any,
    table: str,
    source: str,
    *,
    fmt: str | None,
    mode: str | None,
    primary_key: str | None,
    partition_by: str | None,
    op_column: str | None,
    op_values: str,
    order_by: str | None,
    effective_at: int | None = None,
) -> Any:
    """The ``LoadOptions`` of :func:`batch_options`' values (a command takes them as
    ``**batch`` and passes them on). Without ``--mode``: cdc with an op
    column, upsert when the table (or ``--primary-key``) has a key, else append."""
    from lakectl.ops.create import split_columns
    from lakectl.ops.load import LoadOptions

    if mode is None:
        if op_column:
            mode = "cdc"
        else:
            store = ctx.table(table)
            has_key = bool(primary_key) or (store.has_log() and store.read_state().metadata.has_key)
            mode = "upsert" if has_key else "append"
    return LoadOptions(
        source=source,
        format=fmt,
        mode=mode,
        primary_key=split_columns(primary_key),
        partition_by=split_columns(partition_by),
        op_column=op_column,
        op_values=op_values,
        order_by=order_by,
        effective_at=effective_at,
    )


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("source")
@batch_options(
    format_help="Source format (default: from the file extension).",
    mode_help="append: insert only; upsert: insert or replace by key; cdc: rows carry an op "
    "code. Default: cdc with --op-column, upsert with a key, else append.",
    key_help="Key columns (when the load creates the table).",
    partition_help="Partition columns (when the load creates the table).",
)
@click.option(
    "--effective-from",
    metavar="TIME",
    help="Valid time of the loaded rows for --as-of reads (default: commit time).",
)
@common_options
def load(
    table: str,
    source: str,
    effective_from: str | None,
    settings: dict[str, Any],
    **batch: Any,
) -> None:
    """Load a batch (insert/update/delete) as one transaction.

    Writes new delta and delete-delta directories only; existing files are never rewritten.

    \b
    Example:
      lakectl load sales sample_data/sales/cdc_batch_1.csv --mode cdc \\
          --op-column op_code --order-by change_ts
    """
    from lakectl.ops.load import load as run_load

    ctx = make_context(settings)
    options = load_options(
        ctx,
        table,
        source,
        effective_at=parse_time_option(effective_from, "--effective-from"),
        **batch,
    )
    result = run_operation(settings, ctx, run_load, table, options)
    if result is None:
        return
    c = result.counts
    created = " (table created)" if result.created_table else ""
    output.line(
        f"loaded {source} into {result.table} as version {result.write_id}{created} in {result.seconds:.1f}s"
    )
    output.line("  " + ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in c.items()))


# --- snapshot ---------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option("--version", type=int, help="State right after this version (write id).")
@click.option(
    "--as-of",
    metavar="TIME",
    help="Valid time: loads and statements effective at TIME (-1: raw data).",
)
@click.option(
    "--known-at", metavar="TIME", help="Transaction time: only what was committed by TIME."
)
@click.option("--raw", is_flag=True, help="Apply no Type 7 statements.")
@click.option("--timezone", metavar="TZ", help="Zone for times without an offset (default UTC).")
@click.option(
    "--where", metavar="EXPR", help="Row filter (Spark SQL), e.g. \"create_date = '2024-01-02'\"."
)
@click.option("--columns", metavar="COLS", help="Columns to return (comma-separated).")
@click.option(
    "--limit",
    type=int,
    default=None,
    help="Rows to show [default: 100 in the text table, all with --json or --out; 0: all].",
)
@click.option("--out", metavar="PATH", help="Write the rows to PATH instead of showing them.")
@click.option(
    "--format",
    "out_format",
    type=click.Choice(["parquet", "orc", "csv", "json"]),
    default="parquet",
    show_default=True,
    help="Format for --out.",
)
@click.option(
    "--valid-write-ids", metavar="LIST", help="For Hive-written tables: Hive's valid write-id list."
)
@common_options
def snapshot(
    table: str | None,
    version: int | None,
    as_of: str | None,
    known_at: str | None,
    raw: bool,
    timezone: str | None,
    where: str | None,
    columns: str | None,
    limit: int | None,
    out: str | None,
    out_format: str,
    valid_write_ids: str | None,
    settings: dict[str, Any],
) -> None:
    """Show the table's rows (merge-on-read), now or at a version or time.

    Also available as `snapshot-at`.

    \b
    Examples:
      lakectl snapshot sales --where "store_id = 'S1'" --limit 20
      lakectl snapshot doctors --as-of 2014-09-01
      lakectl snapshot sales --version 3 --out /tmp/sales_v3 --format parquet
    """
    from lakectl.ops.create import split_columns
    from lakectl.ops.snapshot import SnapshotRequest
    from lakectl.ops.snapshot import snapshot as run_snapshot

    ctx = make_context(settings)
    as_of_ms = parse_time_option(as_of, "--as-of", timezone)
    if as_of_ms is not None and as_of_ms < 0:
        raw, as_of_ms = True, None
    if limit is None:
        limit = 0 if (out or settings["as_json"]) else 100
    request = SnapshotRequest(
        version=version,
        as_of=as_of_ms,
        known_at=parse_time_option(known_at, "--known-at", timezone),
        where=where,
        columns=split_columns(columns),
        limit=limit or None,
        out=out,
        out_format=out_format,
        valid_write_ids=valid_write_ids,
        raw=raw,
    )
    result = run_operation(settings, ctx, run_snapshot, table, request)
    if result is None:
        return
    if result.out:
        output.line(f"wrote {result.written:,} rows to {result.out}")
        return
    title = f"{result.table}" + (
        f" @ version {result.version}" if result.version is not None else ""
    )
    output.table(title, result.columns, [list(r) for r in result.rows])
    more = " (more rows: raise --limit or use --out)" if result.truncated else ""
    output.note(f"{len(result.rows)} row(s){more}")


# --- show / history ---------------------------------------------------------------------------


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option(
    "--valid-write-ids", metavar="LIST", help="For Hive-written tables: Hive's valid write-id list."
)
@common_options
def show(table: str | None, valid_write_ids: str | None, settings: dict[str, Any]) -> None:
    """Describe a table: schema, key, partitioning, and per partition base/deltas/rows/bytes.

    Runs without Spark.

    \b
    Example:
      lakectl show sales
    """
    from lakectl.ops.inspect import show as run_show

    ctx = make_context(settings)
    result = run_show(ctx.table(table), valid_write_ids)
    if settings["as_json"]:
        output.emit_json(result.to_json())
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
            _size(p.bytes),
            p.obsolete_dirs,
        ]
        for p in result.partitions
    ]
    output.table(
        None,
        ["partition", "base", "deltas", "delete deltas", "rows", "bytes", "obsolete dirs"],
        rows,
    )
    for p in result.partitions:
        if p.list_bucketing is not None:
            output.line(f"  {p.partition}: list-bucketed by {p.list_bucketing.describe()}")
    total = result.to_json()["totals"]
    output.line(
        f"{len(result.partitions)} partition(s), {total['rows']:,} rows, {_size(total['bytes'])}"
    )


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option("--limit", type=int, default=None, help="Only the last N commits.")
@common_options
def history(table: str | None, limit: int | None, settings: dict[str, Any]) -> None:
    """List the table's commits, one line each (runs without Spark).

    \b
    Example:
      lakectl history sales --limit 20
    """
    from lakectl.ops.inspect import history as run_history

    ctx = make_context(settings)
    entries = run_history(ctx.table(table), limit)
    if settings["as_json"]:
        output.emit_json([e.to_json() for e in entries])
        return
    rows = [
        [
            e.version if e.version is not None else "-",
            output.format_millis(e.committed_at),
            e.operation,
            ", ".join(f"{k}={v}" for k, v in e.counts.items() if v),
            e.added,
            e.info.get("source", ""),
        ]
        for e in entries
    ]
    output.table(
        None, ["version", "committed (UTC)", "operation", "counts", "dirs added", "source"], rows
    )


# --- Type 7 statements -------------------------------------------------------------------------


@cli.command("apply-updates", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("file", required=False)
@click.option("--timezone", metavar="TZ", help="Zone for times without an offset (default UTC).")
@click.option(
    "--materialize",
    is_flag=True,
    help="Fold the statements effective by --until into the data and retire them (Spark).",
)
@click.option(
    "--until", metavar="TIME", help="With --materialize: fold statements effective by TIME."
)
@common_options
def apply_updates(
    table: str,
    file: str | None,
    timezone: str | None,
    materialize: bool,
    until: str | None,
    settings: dict[str, Any],
) -> None:
    """Install the UPDATE/DELETE statements of FILE as the table's Type 7 statements.

    FILE uses seed 000's format: statements end with ';', `-- time=VALUE` lines set the effective
    time of the statements after them (epoch ms, yyyy-MM-dd or ISO date-time; none: time 0).
    Every statement is checked first (columns, types, allowed functions); nothing is installed
    unless all pass. Runs without Spark.

    With --materialize --until TIME (no FILE), the active statements effective at or before TIME
    are written into the data as one transaction and retired: reads at TIME or later are
    unchanged, reads --as-of an earlier time still apply them to the original rows.

    \b
    Examples:
      lakectl apply-updates doctors sample_data/doctors/updates.sql
      lakectl snapshot doctors --as-of 2014-01-01
      lakectl apply-updates doctors --materialize --until 2014-09-01
    """
    from lakectl.ops.updates import install

    if materialize or until is not None:
        _materialize_updates(table, file, until, timezone, settings)
        return
    if file is None:
        raise UsageError(
            "apply-updates needs FILE (or --materialize --until TIME)",
            hint="lakectl apply-updates TABLE FILE",
        )
    ctx = make_context(settings)
    result = install(ctx, table, file, timezone)
    for warning in result.warnings:
        output.note(f"warning: {warning}")
    if settings["as_json"]:
        output.emit_json(result.to_json())
        return
    output.line(
        f"installed {result.installed} statement(s) into {result.table} as version {result.version}; "
        f"{result.total_active} active"
    )


def _materialize_updates(
    table: str, file: str | None, until: str | None, timezone: str | None, settings: dict[str, Any]
) -> None:
    from lakectl.ops.materialize import materialize

    if file is not None:
        raise UsageError("--materialize takes no FILE: install and materialize separately")
    until_ms = parse_time_option(until, "--until", timezone)
    if until_ms is None:
        raise UsageError(
            "--materialize needs --until TIME", hint="e.g. --until 2014-09-01 (epoch ms or a date)"
        )
    ctx = make_context(settings)
    result = run_operation(settings, ctx, materialize, table, until_ms)
    if result is None:
        return
    if result.version is None:
        output.line(
            f"nothing to materialize in {result.table}: no active statement is effective at "
            f"or before {output.format_millis(until_ms)} ({result.remaining} active); "
            "nothing was committed"
        )
    else:
        counts = result.counts
        output.line(
            f"materialized {result.retired} statement(s) into {result.table} as version "
            f"{result.version}: {counts['rewritten']} row(s) rewritten, {counts['deleted']} "
            f"deleted; {result.remaining} statement(s) still active"
        )
    if result.held_back:
        output.note(
            f"note: {result.held_back} statement(s) effective by --until stay active: they "
            "follow a later-effective statement in install order"
        )


@cli.command("updates", context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@common_options
def updates_cmd(table: str | None, settings: dict[str, Any]) -> None:
    """List the table's installed Type 7 statements with their effective times (no Spark).

    \b
    Example:
      lakectl updates doctors
    """
    from lakectl.ops.updates import list_installed

    ctx = make_context(settings)
    entries = list_installed(ctx.table(table))
    if settings["as_json"]:
        output.emit_json([e.to_json() for e in entries])
        return
    rows = [
        [e.to_json()["effective"], e.statement.sql, e.version, output.format_millis(e.installed_at)]
        for e in entries
    ]
    output.table(None, ["effective (UTC)", "statement", "version", "installed (UTC)"], rows)


# --- compaction -------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT_SETTINGS)
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
    "minor compactions and the Spark rewrite; a default major compaction runs one task per "
    "(partition, bucket). Files stay one per bucket, as Hive's readers need.",
)
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
    settings: dict[str, Any],
) -> None:
    """Compact deltas (minor) or rewrite the base (major), as Hive's compactor does.

    Only write ids below the lowest still-open one are compacted. The result is one commit;
    loads running at the same time still commit. The replaced directories stay until `clean`.
    Running it again when nothing changed does nothing.

    \b
    Example:
      lakectl compact sales --auto --dry-run
      lakectl compact sales --major --partition create_date=2024-01-02
    """
    from lakectl.ops.compact import CompactOptions
    from lakectl.ops.compact import compact as run_compact

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
    ctx = make_context(settings)
    options = CompactOptions(
        kind=kind,
        partitions=partitions,
        dry_run=dry_run,
        delta_num_threshold=delta_num_threshold,
        delta_pct_threshold=delta_pct_threshold,
        aborted_threshold=aborted_threshold,
        target_file_size=target_file_size,
    )
    result = run_operation(settings, ctx, run_compact, table, options)
    if result is None:
        return
    rows = [
        [p.relative or "(table)", p.kind or "-", p.reason, ", ".join(p.outputs) or "-"]
        for p in result.partitions
    ]
    title = f"compaction plan for {result.table} ({result.kind}" + (
        ", dry run)" if dry_run else ")"
    )
    output.table(title, ["partition", "type", "reason", "output"], rows)
    if result.lowest_open_write_id is not None:
        output.note(
            f"write id {result.lowest_open_write_id} is open: nothing from it up is compacted "
            "(if its writer has died, `lakectl clean` marks it aborted)"
        )
    if result.committed_seq is not None:
        output.line(
            f"compacted {len(result.chosen)} partition(s): {len(result.added)} dir(s) written, "
            f"{len(result.obsolete)} made obsolete (remove them with clean) "
            f"in {result.seconds:.1f}s"
        )
    elif not dry_run:
        output.line("nothing to compact")


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(["planned", "working", "ready for cleaning", "cleaned", "failed"]),
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
@common_options
def compactions(
    table: str | None,
    states: tuple[str, ...],
    partitions: tuple[str, ...],
    settings: dict[str, Any],
) -> None:
    """List the table's compactions, one line per partition (Hive's SHOW COMPACTIONS; no Spark).

    States: planned (what `compact --auto` would do now; only with --state planned), working,
    ready for cleaning (committed; replaced directories still on storage), cleaned, failed
    (raised, or its process died).

    \b
    Example:
      lakectl compactions sales --state "ready for cleaning"
      lakectl compactions sales --state planned --partition create_date=2024-01-02 --json
    """
    from lakectl.ops.compact import compactions as run_compactions

    ctx = make_context(settings)
    entries = run_compactions(ctx.table(table), states, partitions)
    if settings["as_json"]:
        output.emit_json([e.to_json() for e in entries])
        return
    rows = [
        [
            "-" if e.seq is None else e.seq,
            e.partition,
            e.type,
            e.state,
            output.format_millis(e.started_at),
            output.format_millis(e.ended_at),
            len(e.inputs),
            ", ".join(o.rsplit("/", 1)[-1] for o in e.outputs),
            f"{_size(e.bytes_in)} -> {_size(e.bytes_out)}",
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


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--retain",
    metavar="DURATION",
    help="Keep every state current within this window, e.g. 7d, 12h, 0s "
    "[table property clean.retain, default 7d].",
)
@click.option(
    "--dry-run", is_flag=True, help="Print what would be deleted and why; delete nothing."
)
@common_options
def clean(table: str, retain: str | None, dry_run: bool, settings: dict[str, Any]) -> None:
    """Delete directories replaced by compactions, and files of aborted or dead writers.

    A replaced directory goes only when no state current inside the retention window reads it:
    time travel inside the window keeps working, and a reader running for less than the window
    never loses files (as with Delta's VACUUM). Decided from the log's commit times, never from
    file times. A write id that never committed is cleaned only once its writer is known to be
    gone (aborted, its process dead on this host, or allocated more than a day ago). Runs
    without Spark.

    \b
    Example:
      lakectl clean sales --dry-run
      lakectl clean sales --retain 12h
    """
    from lakectl.ops.clean import CleanOptions
    from lakectl.ops.clean import clean as run_clean

    ctx = make_context(settings)
    result = run_clean(ctx, table, CleanOptions(retain=retain, dry_run=dry_run))
    if settings["as_json"]:
        output.emit_json(result.to_json())
        return
    plan = result.plan
    verb = "would delete" if dry_run else "deleted"
    rows = [[i.path, i.kind, i.reason, _size(i.bytes)] for i in plan.delete]
    if rows:
        output.table(f"{verb} ({result.table})", ["path", "kind", "reason", "bytes"], rows)
    kept = [[i.path, i.kind, i.reason, _size(i.bytes)] for i in plan.keep]
    if kept:
        output.table("kept", ["path", "kind", "reason", "bytes"], kept)
    for write_id in plan.abort_write_ids:
        output.note(f"write id {write_id} {'would be marked' if dry_run else 'marked'} aborted")
    if plan.oldest is not None and plan.oldest.seq > 0:
        output.note(f"after cleaning, {plan.oldest.describe()}")
    total = sum(i.bytes for i in plan.delete)
    output.line(f"{verb} {len(plan.delete)} path(s), {_size(total)} in {result.seconds:.1f}s")


@cli.command("set", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("assignments", nargs=-1, metavar="KEY=VALUE...")
@click.option("--unset", multiple=True, metavar="KEY", help="Reset KEY to its default.")
@common_options
def set_cmd(
    table: str, assignments: tuple[str, ...], unset: tuple[str, ...], settings: dict[str, Any]
) -> None:
    """Change table properties (one commit; `lakectl show` lists them). Runs without Spark.

    Keys: compactor.delta.num.threshold, compactor.delta.pct.threshold,
    compactor.aborted.threshold, clean.retain (a duration), write.target-file-size (e.g. 128MB),
    orc.compress.

    \b
    Example:
      lakectl set sales compactor.delta.num.threshold=20 clean.retain=3d
      lakectl set sales --unset write.target-file-size
    """
    from lakectl.ops.set_properties import set_properties

    ctx = make_context(settings)
    result = set_properties(ctx.table(table), assignments, unset)
    if settings["as_json"]:
        output.emit_json(result.to_json())
        return
    if not result.changed:
        output.line("nothing changed: the properties already have these values")
        return
    for key, value in result.changed.items():
        shown = value if value is not None else f"{result.properties[key]} (default)"
        output.line(f"{key} = {shown}")
    output.note(f"committed as log entry {result.log_seq}")


# --- config -----------------------------------------------------------------------------------


@cli.command("config", context_settings=CONTEXT_SETTINGS)
@common_options
def config_cmd(settings: dict[str, Any]) -> None:
    """Show the effective configuration and where each value comes from.

    Precedence, highest first: command-line flags, LAKECTL_* environment variables
    (LAKECTL_WAREHOUSE, LAKECTL_TABLE, LAKECTL_MASTER, LAKECTL_REMOTE, LAKECTL_CONFIG,
    LAKECTL_SPARK_CONF_<KEY with . as __>), ./lakectl.toml, the user's
    ~/.config/lakectl/lakectl.toml, defaults. Values named like key, secret, token, password or
    credential are masked.

    \b
    Example:
      lakectl config
      lakectl --remote sc://127.0.0.1:15002 config --json
    """
    from lakectl.config import config_files, load_config

    config = load_config(
        warehouse=settings["warehouse"],
        master=settings["master"],
        remote=settings["remote"],
        conf=settings["confs"],
    )
    entries = config.effective()
    files = [str(path) for path in config_files()]
    if settings["as_json"]:
        output.emit_json(
            {
                "settings": [{"name": n, "value": v, "source": s} for n, v, s in entries],
                "files": files,
            }
        )
        return
    output.table(
        "effective configuration",
        ["setting", "value", "source"],
        [[name, value, source] for name, value, source in entries],
    )
    output.note("config files read: " + (", ".join(files) or "none"))


# --- skew and list bucketing (lakectl/cli/skew_commands.py) -------------------------------------

from lakectl.cli import skew_commands  # noqa: E402  (it needs the names above)

# mypy cannot type names imported through the cycle
cli.add_command(skew_commands.skew)  # type: ignore[has-type]
cli.add_command(skew_commands.list_bucket)  # type: ignore[has-type]

from lakectl.cli import server_commands  # noqa: E402

cli.add_command(server_commands.server)  # type: ignore[has-type]

from lakectl.cli import stream_commands  # noqa: E402

cli.add_command(stream_commands.stream)  # type: ignore[has-type]
cli.add_command(install_commands.completion)


# --- entry point ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; map errors to exit codes (0 ok, 2 usage, 65 bad input, 75 conflict, ...)."""
    try:
        cli.main(args=argv, prog_name="lakectl", standalone_mode=False)
        return 0
    except LakectlError as exc:
        output.emit_error(exc, _wants_json(argv))
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        output.emit_error(UsageError(exc.format_message()), _wants_json(argv))
        return 2
    except click.exceptions.Abort:
        output.stderr.print("aborted")
        return 130
    except KeyboardInterrupt:
        output.stderr.print("interrupted")
        return 130


def _wants_json(argv: list[str] | None) -> bool:
    return "--json" in (argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
