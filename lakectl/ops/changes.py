"""``lakectl changes``: every row change between two versions (or times) of a table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.results import brief
from lakectl.ops.snapshot import SnapshotRequest
from lakectl.planning.change_plan import ChangeRange
from lakectl.scan.changes import ChangeScan, ChangesRequest, plan_change_scan

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = [
    "ArrowChanges",
    "ChangeFeed",
    "ChangesRequest",
    "ChangesResult",
    "arrow_changes",
    "arrow_list_changes",
    "change_feed",
    "changes",
    "resolve_changes",
]


@dataclass
class ChangesResult:
    table: str
    from_version: int
    to_version: int
    versions: list[int]
    columns: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    out: str | None = None
    rows_written: int | None = None

    def __repr__(self) -> str:
        return brief(
            self,
            "table",
            "from_version",
            "to_version",
            "columns",
            "truncated",
            "out",
            "rows_written",
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "versions": self.versions,
            "columns": self.columns,
        }
        if self.out:
            data.update(out=self.out, rows_written=self.rows_written)
        else:
            data["rows"] = [dict(zip(self.columns, r, strict=True)) for r in self.rows]
            data["truncated"] = self.truncated
        return data


@dataclass(frozen=True)
class ChangeFeed:
    frame: DataFrame
    table: str
    range: ChangeRange
    key: tuple[str, ...]


def resolve_changes(
    ctx: Context, table_ref: str | None, request: ChangesRequest, out_formats: tuple[str, ...] = ()
) -> ChangeScan:
    """``request`` resolved on the table (:func:`lakectl.scan.changes.plan_change_scan`)."""
    store = ctx.table(table_ref)
    return plan_change_scan(store, request, ctx.config.storage_options, out_formats)


def change_feed(ctx: Context, table_ref: str | None, request: ChangesRequest) -> ChangeFeed:
    """The row changes ``request`` asks for, as a lazy Spark DataFrame (checks first)."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark.change_feed import change_feed as feed_frame
    from lakectl.spark.change_feed import scd2_rows

    source = resolve_changes(ctx, table_ref, request)
    key = source.metadata.primary_key
    ctx.progress("reading changes")
    frame = feed_frame(ctx.spark(), source, scd2=request.scd2)
    if request.scd2:
        frame = scd2_rows(frame, key, request.current_valid_to)
    return ChangeFeed(frame, source.table, source.range, key)


def changes(ctx: Context, table_ref: str | None, request: ChangesRequest) -> ChangesResult:
    """The changes collected to the driver (at most ``limit``), or written to ``request.out``."""
    from lakectl.ops.snapshot import SnapshotResult, write_out
    from lakectl.spark.change_feed import in_commit_order, scd2_order

    if request.limit is not None and request.limit < 0:
        raise UsageError("--limit must not be negative")
    feed = change_feed(ctx, table_ref, request)
    order = scd2_order if request.scd2 else in_commit_order
    df = order(feed.frame, feed.key)
    result = ChangesResult(
        table=feed.table,
        from_version=feed.range.from_version,
        to_version=feed.range.to_version,
        versions=feed.range.write_ids,
        columns=df.columns,
    )
    if request.out:
        written = write_out(
            df,
            SnapshotRequest(limit=request.limit, out=request.out, out_format=request.out_format),
            SnapshotResult(table=feed.table, columns=df.columns, types=[]),
            ctx.config.storage_options,
        )
        result.out, result.rows_written = written.out, written.rows_written
        return result
    limit = request.limit
    rows = df.limit(limit + 1).collect() if limit else df.collect()
    if limit and len(rows) > limit:
        rows, result.truncated = rows[:limit], True
    result.rows = [tuple(r) for r in rows]
    return result


@dataclass(frozen=True)
class ArrowChanges:
    """The changes (or SCD2 rows) of a resolved request read with pyarrow, in the order
    ``lakectl changes`` prints them, and the range they cover."""

    rows: pa.Table
    table: str
    range: ChangeRange
    key: tuple[str, ...]


def arrow_changes(ctx: Context, table_ref: str | None, request: ChangesRequest) -> ArrowChanges:
    """What :func:`change_feed` returns, read with pyarrow (sorted as ``lakectl changes``
    sorts: by version and key for changes, by key and validity for SCD2)."""
    from lakectl.arrow import changes as arrow_feed
    from lakectl.arrow.snapshot import OUT_FORMATS

    source = resolve_changes(ctx, table_ref, request, OUT_FORMATS)
    ctx.progress("reading changes")
    feed = arrow_feed.change_rows(source, scd2=request.scd2)
    key = tuple(source.metadata.primary_key)
    rows = (
        arrow_feed.scd2_rows(feed, key, request.current_valid_to)
        if request.scd2
        else arrow_feed.in_commit_order(feed, key)
    )
    return ArrowChanges(rows, source.table, source.range, key)


def arrow_list_changes(
    ctx: Context, table_ref: str | None, request: ChangesRequest
) -> ChangesResult:
    """``lakectl changes --engine arrow``: :func:`changes` with pyarrow."""
    from lakectl.arrow.snapshot import wall_clock, write_out

    if request.limit is not None and request.limit < 0:
        raise UsageError("--limit must not be negative")
    feed = arrow_changes(ctx, table_ref, request)
    result = ChangesResult(
        table=feed.table,
        from_version=feed.range.from_version,
        to_version=feed.range.to_version,
        versions=feed.range.write_ids,
        columns=feed.rows.column_names,
    )
    if request.out:
        out = SnapshotRequest(limit=request.limit, out=request.out, out_format=request.out_format)
        result.out, result.rows_written = write_out(
            feed.rows.to_batches(), feed.rows.schema, out, ctx.config.storage_options
        )
        return result
    limit = request.limit
    rows = feed.rows.slice(0, limit + 1) if limit else feed.rows
    listed = [tuple(r.values()) for b in rows.to_batches() for r in wall_clock(b).to_pylist()]
    if limit and len(listed) > limit:
        listed, result.truncated = listed[:limit], True
    result.rows = listed
    return result
