"""``lakectl snapshot``: the table's rows at a version or time, merged on read."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.results import brief
from lakectl.scan.plan import Scan, plan_scan, scan_of
from lakectl.scan.pruning import ScanStats
from lakectl.scan.request import OUT_FORMATS, SnapshotRequest, check_request
from lakectl.scan.target import ReadTarget
from lakectl.table.log import DATA_OPS
from lakectl.times import format_millis

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pyarrow as pa
    from pyspark.sql import DataFrame

    from lakectl.arrow.read import ArrowRead

__all__ = [
    "OUT_FORMATS",
    "ArrowRows",
    "SnapshotFrame",
    "SnapshotRequest",
    "SnapshotResult",
    "arrow_rows",
    "arrow_snapshot",
    "check_request",
    "open_scan",
    "read_arrow",
    "snapshot",
    "snapshot_dataframe",
    "snapshot_frame",
    "statements_frame",
    "time_bound_note",
    "write_out",
]


@dataclass
class SnapshotResult:
    table: str
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    version: int | None = None
    out: str | None = None
    rows_written: int | None = None
    scan: dict[str, Any] | None = None  # files/bytes read after pruning (lakectl.scan.pruning)
    read_path: str | None = (
        None  # data_source, join or none (lakectl.spark.snapshot_rows.READ_PATHS)
    )
    note: str | None = None  # why a read returned nothing, when a time bound is the reason
    order_by: list[str] = field(default_factory=list)  # the rows' sort; empty: file order

    def __repr__(self) -> str:
        return brief(self, "table", "version", "columns", "truncated", "out", "rows_written")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "table": self.table,
            "version": self.version,
            "columns": self.columns,
            "order_by": self.order_by,
        }
        if self.note is not None:
            data["note"] = self.note
        if self.scan is not None:
            data["scan"] = self.scan
        if self.read_path is not None:
            data["read_path"] = self.read_path
        if self.out:
            data.update(out=self.out, rows_written=self.rows_written)
        else:
            data["rows"] = [dict(zip(self.columns, r, strict=True)) for r in self.rows]
            data["truncated"] = self.truncated
        return data


def snapshot_frame(
    ctx: Context, target: ReadTarget, request: SnapshotRequest, *, with_identity: bool = False
) -> DataFrame:
    """The stored rows of ``target`` as a Spark DataFrame (no statement, ``--where``,
    ``--columns`` or ``--limit`` applied).

    ``with_identity`` adds each row's ACID identity (originalTransaction, bucket, rowId), for
    writers that rewrite or delete the rows they read.
    """
    from lakectl.spark.snapshot_rows import read_target

    return read_target(ctx.spark(), target, with_identity)[0]


@dataclass(frozen=True)
class SnapshotFrame:
    """A snapshot's rows as a lazy DataFrame, with what was read to plan it."""

    frame: DataFrame
    table: str
    version: int | None
    scan: ScanStats
    read_path: str  # how the rows are read (``snapshot_rows.READ_PATHS``)
    order_by: tuple[str, ...] = ()  # the sort applied (empty: file order)


def snapshot_dataframe(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> DataFrame:
    """The rows ``request`` asks for as a lazy Spark DataFrame (``--limit`` and ``--out`` do not
    apply): merged on read, Type 7 statements applied, filtered and projected."""
    return _read(ctx, table_ref, request).frame


def open_scan(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> Scan:
    """The scan ``request`` asks for (:func:`lakectl.scan.plan.plan_scan`); no Spark."""
    return plan_scan(ctx.table(table_ref), request, ctx.config.storage_options)


def _read(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> SnapshotFrame:
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark.scan_read import scan_frame

    scan = open_scan(ctx, table_ref, request)
    ctx.progress("reading")
    df, read_path = scan_frame(ctx.spark(), scan)
    return SnapshotFrame(df, scan.table, scan.version, scan.pruning, read_path, scan.order_by)


def read_arrow(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> ArrowRead:
    """``request`` resolved for an Arrow read (:func:`lakectl.arrow.read.arrow_read`; nothing
    is read from data files yet): bad requests and statements the read cannot apply are
    refused here."""
    from lakectl.arrow.read import arrow_read

    return arrow_read(open_scan(ctx, table_ref, request))


def snapshot(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> SnapshotResult:
    """Read the table and return rows (or write them to ``request.out``)."""
    read = _read(ctx, table_ref, request)
    df = read.frame
    result = SnapshotResult(
        table=read.table,
        columns=df.columns,
        types=[f.dataType.simpleString() for f in df.schema.fields],
        version=read.version,
        scan=read.scan.to_dict(),
        read_path=read.read_path,
        order_by=list(read.order_by),
    )
    if request.out:
        return write_out(df, request, result, ctx.config.storage_options)
    from lakectl.arrow.snapshot import python_rows

    limit = request.limit
    # Through Arrow, as the Arrow engine's rows: the same values (any time Spark holds,
    # 0001-01-01 included) and the same text, whatever the process's time zone.
    rows = python_rows((df.limit(limit + 1) if limit else df).toArrow().to_batches())
    if limit and len(rows) > limit:
        rows, result.truncated = rows[:limit], True
    result.rows = rows
    if not result.rows and request.as_of is not None:
        result.note = time_bound_note(ctx.table(table_ref), request.as_of)
    return result


@dataclass(frozen=True)
class ArrowRows:
    """A resolved Arrow read in the order asked for: the read, the schema of the columns
    returned, the sort applied (empty: the order of the table's files) and the batches."""

    read: ArrowRead
    schema: pa.Schema
    order_by: tuple[str, ...]
    batches: Iterable[pa.RecordBatch]


def arrow_rows(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> ArrowRows:
    """Resolve ``request`` for the Arrow reader, sorted as ``request.row_order`` says (a sort
    reads every row first); ``limit`` and ``out`` are not applied here."""
    from lakectl.arrow.snapshot import sorted_batches

    read = read_arrow(ctx, table_ref, SnapshotRequest(**{**vars(request), "order_by": ()}))
    shown = read.schema.names
    order = request.row_order(read.scan.metadata.primary_key)
    if order and not request.order_by and not set(order) <= set(shown):
        # key order with --columns leaving the key out: read the key too, sort, then drop it
        wider = (*request.columns, *(k for k in order if k not in shown))
        read = read_arrow(ctx, table_ref, replace(request, order_by=(), columns=wider))
    if not order:
        return ArrowRows(read, read.schema, order, read.batches())
    import pyarrow as pa

    schema = pa.schema([read.schema.field(n) for n in shown])
    return ArrowRows(read, schema, order, [b.select(shown) for b in sorted_batches(read, order)])


def arrow_snapshot(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> SnapshotResult:
    """:func:`snapshot` read with the Arrow engine (no Spark, no JVM)."""
    from lakectl.arrow import snapshot as arrow_out

    formats = arrow_out.OUT_FORMATS
    if request.out and request.out_format.lower() not in formats:
        raise UsageError(
            f"--format {request.out_format} is not written by the arrow engine",
            hint=f"use one of {', '.join(formats)}, or --engine spark",
        )
    ctx.progress("reading")
    rows_read = arrow_rows(ctx, table_ref, request)
    read, shown = rows_read.read, rows_read.schema.names
    meta = read.scan.metadata
    result = SnapshotResult(
        table=read.table,
        columns=shown,
        types=[meta.schema[c].type for c in shown],
        version=read.version,
        scan=read.scan.pruning.to_dict(),
        read_path="arrow",
        order_by=list(rows_read.order_by),
    )
    batches = rows_read.batches
    if request.out:
        result.out, result.rows_written = arrow_out.write_out(
            batches, rows_read.schema, request, ctx.config.storage_options
        )
        return result
    limit = request.limit
    rows: list[tuple[Any, ...]] = []
    for batch in batches:
        rows.extend(arrow_out.python_rows([batch]))
        if limit and len(rows) > limit:
            rows, result.truncated = rows[:limit], True
            break
    result.rows = rows
    if not rows and request.as_of is not None:
        result.note = time_bound_note(ctx.table(table_ref), request.as_of)
    return result


def time_bound_note(store: Any, as_of: int) -> str | None:
    """Why ``--as-of as_of`` read no rows, when loads valid only later are the reason."""
    if not store.has_log():
        return None
    later = [
        r
        for r in store.read_state().records
        if r.write_id is not None and r.operation in DATA_OPS and r.effective_time > as_of
    ]
    if not later:
        return None
    first = min(r.effective_time for r in later)
    return (
        f"no rows as of {format_millis(as_of)}: {len(later)} change(s) take effect later, "
        f"the first at {format_millis(first)} (load --effective-from)"
    )


def statements_frame(ctx: Context, target: ReadTarget, request: SnapshotRequest) -> DataFrame:
    """The stored rows of ``target`` with the Type 7 statements effective at ``--as-of``
    applied (none for ``--raw``)."""
    from lakectl.spark.scan_read import with_statements

    scan = scan_of(target, SnapshotRequest(as_of=request.as_of, raw=request.raw))
    return with_statements(snapshot_frame(ctx, target, request), scan)


def write_out(
    df: DataFrame,
    request: SnapshotRequest,
    result: SnapshotResult,
    storage_options: dict[str, Any] | None = None,
) -> SnapshotResult:
    from lakectl.spark.fsspec_orc import hadoop_url
    from lakectl.storage.fs import storage_for

    fmt = request.out_format.lower()
    storage, path = storage_for(request.out or "", storage_options)
    if request.limit:
        df = df.limit(request.limit)
    # check_request refused an existing path. "error" (not its alias "errorifexists", which
    # Spark Connect refuses): a path that appeared since then fails the write, not overwritten.
    writer = df.write.mode("error")
    result.out = storage.url(path)
    url = hadoop_url(df.sparkSession, storage, path)
    if url is None:  # Spark's Hadoop has no filesystem for the scheme (s3 without hadoop-aws)
        from lakectl.spark.fsspec_files import write_files

        result.rows_written = write_files(df, storage, path, fmt)
        return result
    if fmt == "csv":
        writer = writer.option("header", "true")
    getattr(writer, fmt)(url)
    # Count what was written (Parquet/ORC answer from footers) instead of merging again.
    reader = df.sparkSession.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
    result.rows_written = reader.load(url).count()
    return result
