"""``snapshot`` (also ``snapshot-at``): the table's rows now or at a version or time."""

from __future__ import annotations

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    common_options,
    make_context,
    parse_time_option,
    run_operation,
)

# --- snapshot ---------------------------------------------------------------------------------


@click.command(context_settings=CONTEXT_SETTINGS)
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
    "--where",
    metavar="EXPR",
    help="Row filter: one condition over the table's columns, with the operators and functions "
    "statements may use, e.g. \"create_date = '2024-01-02'\".",
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
    settings: Settings,
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
    if limit is None:
        limit = 0 if (out or settings.as_json) else 100
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
