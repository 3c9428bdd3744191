"""``snapshot`` (also ``snapshot-at``): the table's rows now or at a version or time; ``changes``:
the row changes between two versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    make_context,
    parse_time_option,
    render,
    run_operation,
)
from lakectl.errors import UsageError

# --- snapshot ---------------------------------------------------------------------------------

if TYPE_CHECKING:
    from lakectl.api import Table
    from lakectl.ops.changes import ChangesResult
    from lakectl.ops.snapshot import SnapshotResult
    from lakectl.table_reads import Changes, Scan


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
    type=click.IntRange(min=0),
    default=None,
    help="Rows to show [default: 100 with --format table, else all; 0: all].",
)
@click.option(
    "--order-by",
    metavar="COLS",
    help='Sort the rows (comma-separated; a column may end in " desc"), e.g. "create_date,sell_id" '
    "[default: the primary key, when the table has one, except with --out].",
)
@click.option("--out", metavar="PATH", help="Write the rows to PATH instead of showing them.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*output.TABLE_FORMATS, "parquet", "orc"]),
    default=None,
    help="Without --out, how to print the rows: table [default; fitted to the terminal's "
    "width, or plain aligned rows, one line each, when stdout is not a terminal], csv, tsv or "
    "json (an array of objects). With --out, "
    "the file format: parquet [default], orc, csv or json.",
)
@click.option(
    "--valid-write-ids", metavar="LIST", help="For Hive-written tables: Hive's valid write-id list."
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "arrow"]),
    default="spark",
    show_default=True,
    help="spark: read with Spark. arrow: read with pyarrow, without starting a JVM; --where and "
    "Type 7 statements may use comparisons, AND, OR, NOT, IS NULL, IN, BETWEEN and LIKE "
    "(else the read is refused, naming what); --out writes parquet, orc or csv.",
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
    order_by: str | None,
    out: str | None,
    fmt: str | None,
    valid_write_ids: str | None,
    engine: str,
    settings: Settings,
) -> None:
    """Show the table's rows (merge-on-read), now or at a version or time.

    Also available as `snapshot-at`.

    \b
    Examples:
      lakectl snapshot sales --where "store_id = 'S1'" --limit 20
      lakectl snapshot doctors --as-of 2014-09-01
      lakectl snapshot sales --order-by sell_id --format csv > sales.csv
      lakectl snapshot sales --version 3 --out /tmp/sales_v3 --format parquet
      lakectl snapshot sales --engine arrow --format csv > sales.csv
    """
    from lakectl.ops.create import split_columns
    from lakectl.times import resolve_zone

    fmt = snapshot_format(fmt, out)
    resolve_zone(timezone)  # an unknown zone is an error even when no time needs it
    if columns is not None and not split_columns(columns):
        raise UsageError(
            "--columns is empty", hint="name columns, e.g. --columns sell_id,total_amt"
        )
    as_of_ms = parse_time_option(as_of, "--as-of", timezone)
    known_at_ms = parse_time_option(known_at, "--known-at", timezone)
    if limit is None:
        limit = 0 if (out or settings.as_json or fmt != "table") else 100
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: _read_rows(
            api_table(ctx, table).scan(
                version=version,
                as_of=as_of_ms,
                known_at=known_at_ms,
                where=where,
                columns=columns,
                raw=raw,
                limit=limit or None,
                valid_write_ids=valid_write_ids,
                order_by=order_by,
                engine="arrow" if engine == "arrow" else "spark",
                key_order=True,
            ),
            out,
            fmt,
        ),
    )
    times = SnapshotTimes(as_of_ms, known_at_ms, raw or (as_of_ms is not None and as_of_ms < 0))
    render(settings, result, lambda r: _print_snapshot(r, fmt, times, bool(order_by)))


def _read_rows(read: Scan | Changes, out: str | None, fmt: str) -> Any:
    """The rows of ``read`` as the command shows them, or written to ``--out``."""
    return read.write(out, format=fmt) if out else read.collect()


@dataclass(frozen=True)
class SnapshotTimes:
    """The times a snapshot was asked for, for its footer."""

    as_of: int | None
    known_at: int | None
    raw: bool

    def describe(self) -> str:
        """``as of now``, ``as of 2014-01-01T00:00:00Z``, ``raw data``; ``, known at ...``."""
        from lakectl.times import format_millis

        if self.raw:
            valid = "raw data (no statements applied)"
        else:
            valid = "as of " + ("now" if self.as_of is None else format_millis(self.as_of))
        known = "" if self.known_at is None else f", known at {format_millis(self.known_at)}"
        return valid + known


def _print_snapshot(result: SnapshotResult, fmt: str, times: SnapshotTimes, sorted_: bool) -> None:
    if result.out:
        output.line(f"wrote {result.rows_written:,} rows to {result.out}")
        return
    title = f"{result.table}" + (
        f" @ version {result.version}" if result.version is not None else ""
    )
    output.table(title, result.columns, [list(r) for r in result.rows], fmt)
    more = " (more rows: raise --limit or use --out)" if result.truncated else ""
    footer = f"{len(result.rows)} row(s){more}"
    if output.stderr.is_terminal:  # piped or redirected, the footer stays as scripts know it
        version = "the newest state" if result.version is None else f"version {result.version}"
        footer += f" of {version} {times.describe()}; {_order(result, sorted_)}"
    output.note(footer)
    if result.note:
        output.note(result.note)


def _order(result: SnapshotResult, sorted_: bool) -> str:
    """How the rows are sorted, for the footer."""
    if sorted_:
        return "ordered by " + ", ".join(result.order_by)
    if result.order_by:
        return f"in key order ({', '.join(result.order_by)})"
    return "in file order (the table has no primary key; --order-by COLS sorts)"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@click.option("--from-version", type=int, help="Changes after this version (0: the empty table).")
@click.option("--to-version", type=int, help="Up to and including this version [default: newest].")
@click.option("--from-time", metavar="TIME", help="Changes after the state known at TIME.")
@click.option("--to-time", metavar="TIME", help="Up to the state known at TIME.")
@click.option(
    "--scd2",
    is_flag=True,
    help="Instead of changes, one row per version of each key since the table was created, "
    "with valid_from, valid_to (NULL for the current one) and is_current: a Type 2 dimension.",
)
@click.option(
    "--current-valid-to",
    metavar="TIME",
    help="With --scd2: the valid_to of each key's current row, e.g. 9999-12-31 [default: NULL].",
)
@click.option("--timezone", metavar="TZ", help="Zone for times without an offset (default UTC).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="Rows to show [default: 100 with --format table, else all; 0: all].",
)
@click.option("--out", metavar="PATH", help="Write the changes to PATH instead of showing them.")
@click.option(
    "--engine",
    type=click.Choice(["spark", "arrow"]),
    default="spark",
    show_default=True,
    help="spark: read with Spark. arrow: read with pyarrow, without starting a JVM; --out "
    "writes parquet, orc or csv.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*output.TABLE_FORMATS, "parquet", "orc"]),
    default=None,
    help="Without --out, how to print the rows: table [default], csv, tsv or json. With --out, "
    "the file format: parquet [default], orc, csv or json.",
)
@common_options
def changes(
    table: str | None,
    from_version: int | None,
    to_version: int | None,
    from_time: str | None,
    to_time: str | None,
    scd2: bool,
    current_valid_to: str | None,
    timezone: str | None,
    limit: int | None,
    out: str | None,
    engine: str,
    fmt: str | None,
    settings: Settings,
) -> None:
    """Show every row change between two versions (or times) of the table: the change feed.

    Each row is a row of the table plus _change_type (insert, update_preimage,
    update_postimage, delete), _commit_version and _commit_time. The range starts after
    --from-version (or the state known at --from-time) and ends with --to-version (or
    --to-time; default: the newest version). A key deleted and inserted by one commit is an
    update (its old and new row). Type 7 statements change no stored rows and do not appear;
    a materialize that folds them in does. Ranges whose files were compacted and cleaned away
    are refused. With --scd2, the rows of every key over time instead (valid_from and valid_to
    are when changes took effect: a load's --effective-from, else its commit time; the table
    needs a primary key; once clean removed the oldest versions, it starts at the oldest one
    kept, whose rows are valid from its time).

    \b
    Examples:
      lakectl changes sales --from-version 3
      lakectl changes sales --scd2 --format csv
      lakectl changes sales --from-version 3 --to-version 5 --format csv > changes.csv
      lakectl changes sales --from-time 2024-06-01 --out /tmp/sales_changes --format parquet
      lakectl changes sales --from-version 3 --engine arrow
    """
    from lakectl.times import resolve_zone

    fmt = snapshot_format(fmt, out)
    resolve_zone(timezone)
    if limit is None:
        limit = 0 if (out or settings.as_json or fmt != "table") else 100
    from_ms = parse_time_option(from_time, "--from-time", timezone)
    to_ms = parse_time_option(to_time, "--to-time", timezone)
    valid_to_ms = parse_time_option(current_valid_to, "--current-valid-to", timezone)

    def _change_feed(api: Table) -> Changes:
        feed = api.changes(
            from_version=from_version,
            to_version=to_version,
            from_time=from_ms,
            to_time=to_ms,
            limit=limit or None,
            engine="arrow" if engine == "arrow" else "spark",
        )
        if scd2:
            return feed.scd2(current_valid_to=valid_to_ms)
        if valid_to_ms is not None:
            raise UsageError("--current-valid-to needs --scd2")
        return feed

    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: _read_rows(_change_feed(api_table(ctx, table)), out, fmt),
    )
    render(settings, result, lambda r: _print_changes(r, fmt, scd2))


def _print_changes(result: ChangesResult, fmt: str, scd2: bool) -> None:
    if result.out:
        output.line(f"wrote {result.rows_written:,} rows to {result.out}")
        return
    title = f"{result.table}: versions {result.from_version} to {result.to_version}"
    output.table(title, result.columns, [list(r) for r in result.rows], fmt)
    more = " (more rows: raise --limit or use --out)" if result.truncated else ""
    what = "row version(s)" if scd2 else "change(s)"
    output.note(f"{len(result.rows)} {what} by {len(result.versions)} commit(s){more}")
    if scd2 and result.from_version:
        output.note(
            f"starts at version {result.from_version}, the oldest one clean kept: the rows "
            "live then are valid from its time"
        )


def snapshot_format(fmt: str | None, out: str | None) -> str:
    """``--format``: a file format with ``--out`` (default parquet), else how rows are printed
    (default table); a value for the other case is a usage error."""
    if out:
        if fmt in ("table", "tsv"):
            raise UsageError(
                f"--format {fmt} prints rows; with --out PATH use parquet, orc, csv or json"
            )
        return fmt or "parquet"
    if fmt in ("parquet", "orc"):
        raise UsageError(
            f"--format {fmt} is a file format: give --out PATH",
            hint="to print the rows use --format table, csv, tsv or json",
        )
    return fmt or "table"
