"""``lakectl snapshot``: the table's rows at a version or time, merged on read."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.errors import BadInputError, UnknownColumnError, UsageError
from lakectl.expr import bind_where
from lakectl.ops.context import Context
from lakectl.ops.pruning import ScanStats, prune_target
from lakectl.ops.reading import ReadTarget, open_for_read
from lakectl.ops.results import brief
from lakectl.planning.prune import where_reads_only_unassigned
from lakectl.table.log import DATA_OPS
from lakectl.table.schema import Schema
from lakectl.updates.times import format_millis

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakectl.updates.statements import Statement

OUT_FORMATS = ("parquet", "orc", "csv", "json")


@dataclass(frozen=True)
class SnapshotRequest:
    version: int | None = None
    as_of: int | None = None
    known_at: int | None = None
    where: str | None = None
    columns: tuple[str, ...] = ()
    limit: int | None = None
    out: str | None = None
    out_format: str = "parquet"
    valid_write_ids: str | None = None
    raw: bool = False
    # ``--order-by``: column names, each optionally followed by `` desc`` (or `` asc``).
    order_by: tuple[str, ...] = ()
    # Without ``order_by``, rows returned (not written to ``out``) in primary-key order when the
    # table has a key.
    key_order: bool = False

    def row_order(self, primary_key: Sequence[str]) -> tuple[str, ...]:
        """The sort the read applies: ``order_by``, else the key (see ``key_order``), else
        none (the order of the table's files)."""
        if self.order_by:
            return self.order_by
        return tuple(primary_key) if self.key_order and not self.out else ()

    def __post_init__(self) -> None:
        # A negative valid time (``--as-of -1``) asks for the raw data, without statements.
        if self.as_of is not None and self.as_of < 0:
            object.__setattr__(self, "as_of", None)
            object.__setattr__(self, "raw", True)


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
    scan: dict[str, Any] | None = None  # files/bytes read after pruning (lakectl.ops.pruning)
    read_path: str | None = None  # data_source, join or none (lakectl.spark.acid_read.READ_PATHS)
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
    """The snapshot as a Spark DataFrame (before --where/--columns/--limit).

    ``with_identity`` adds each row's ACID identity (originalTransaction, bucket, rowId), for
    writers that rewrite or delete the rows they read.
    """
    return _snapshot_frame_and_path(ctx, target, with_identity)[0]


def _snapshot_frame_and_path(
    ctx: Context, target: ReadTarget, with_identity: bool = False
) -> tuple[DataFrame, str]:
    """:func:`snapshot_frame`, and how it reads (``acid_read.READ_PATHS``)."""
    from lakectl.spark import acid_read

    return acid_read.read_rows_and_path(ctx.spark(), target.plans, read_spec(target), with_identity)


def read_spec(target: ReadTarget) -> Any:
    """The Spark reader's description of ``target``: storage, schemas, valid write ids, key."""
    from lakectl.spark import acid_read

    meta = target.metadata
    key = next((k for k in meta.primary_key if k not in meta.partition_by), None)
    return acid_read.ReadSpec(
        target.store.storage,
        target.store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        target.valid,
        key,
    )


@dataclass(frozen=True)
class SnapshotFrame:
    """A snapshot's rows as a lazy DataFrame, with what was read to plan it."""

    frame: DataFrame
    table: str
    version: int | None
    scan: ScanStats
    read_path: str  # how the rows are read (``acid_read.READ_PATHS``)
    order_by: tuple[str, ...] = ()  # the sort applied (empty: file order)


def snapshot_dataframe(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> DataFrame:
    """The rows ``request`` asks for as a lazy Spark DataFrame (``--limit`` and ``--out`` do not
    apply): merged on read, Type 7 statements applied, filtered and projected."""
    return _read(ctx, table_ref, request).frame


def open_request(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> ReadTarget:
    """The table state ``request`` reads (version, times, valid write ids), with the request
    checked against its schema; no Spark."""
    target = open_for_read(
        ctx.table(table_ref),
        version=request.version,
        known_at=request.known_at,
        as_of=request.as_of,
        valid_write_ids=request.valid_write_ids,
        raw=request.raw,
    )
    check_request(target.metadata.schema, request, ctx.config.storage_options)
    return target


def _read(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> SnapshotFrame:
    from pyspark.sql import functions as F

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)

    target = open_request(ctx, table_ref, request)
    target, scan, statements = _prune(target, request)
    ctx.progress("reading")
    df, read_path = _snapshot_frame_and_path(ctx, target)
    # Statements change rows one at a time, so a predicate on columns none of them sets selects
    # the same rows before them as after: filtering first lets Spark push it into the scan.
    where = request.where or None
    early = where is not None and where_reads_only_unassigned(where, statements)
    if where is not None and early:
        df = _filtered(df, where, target.metadata.schema)
    df = df if request.raw else _apply_statements(df, target, request)
    if where is not None and not early:
        df = _filtered(df, where, target.metadata.schema)
    order = request.row_order(target.metadata.primary_key)
    if order:
        df = df.orderBy(*sort_columns(order, target.metadata.schema.names))
    if request.columns:
        df = df.select(*[F.col(f"`{target.metadata.schema[c].name}`") for c in request.columns])
    version = target.state.max_write_id if target.state is not None else None
    store = target.store
    return SnapshotFrame(df, store.name or store.url, version, scan, read_path, order)


def check_request(
    schema: Schema, request: SnapshotRequest, storage_options: dict[str, Any] | None = None
) -> None:
    """Refuse what is wrong with ``request`` for a table of ``schema`` before Spark starts:
    ``--where`` (bound once: :func:`lakectl.expr.bind_where`), unknown ``--columns``, an
    unknown ``--format`` or an ``--out`` path that exists."""
    from lakectl.storage.fs import storage_for

    if request.where is not None:
        bind_where(request.where, schema)
    unknown = [c for c in request.columns if c not in schema]
    if unknown:
        raise UnknownColumnError(
            f"--columns: unknown column(s) {', '.join(unknown)} (columns: {', '.join(schema.names)})"
        )
    if request.out:
        fmt = request.out_format.lower()
        if fmt not in OUT_FORMATS:
            raise UsageError(f"--format {fmt!r}: use one of {', '.join(OUT_FORMATS)}")
        storage, path = storage_for(request.out, storage_options)
        if storage.exists(path):
            raise BadInputError(
                f"--out {request.out} already exists; lakectl does not overwrite it",
                hint="choose a new path, or remove the old output first",
            )


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
    limit = request.limit
    rows = df.limit(limit + 1).collect() if limit else df.collect()
    if limit and len(rows) > limit:
        rows, result.truncated = rows[:limit], True
    result.rows = [tuple(r) for r in rows]
    if not result.rows and request.as_of is not None:
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


def sort_columns(order_by: tuple[str, ...], names: tuple[str, ...] | list[str]) -> list[Any]:
    """Spark sort columns for ``--order-by a,b desc``; unknown names are a usage error. Nulls
    sort first ascending and last descending, as in Spark SQL."""
    from pyspark.sql import functions as F

    by_lower = {n.lower(): n for n in names}
    out, unknown = [], []
    for item in order_by:
        name, _, direction = item.strip().partition(" ")
        direction = direction.strip().lower()
        if direction not in ("", "asc", "desc"):
            raise UsageError(
                f"--order-by {item!r}: expected COLUMN, COLUMN asc or COLUMN desc",
                hint='e.g. --order-by "create_date,sell_id desc"',
            )
        column = by_lower.get(name.lower())
        if column is None:
            unknown.append(name)
            continue
        ref = F.col(f"`{column}`")
        out.append(ref.desc() if direction == "desc" else ref.asc())
    if unknown:
        raise UnknownColumnError(
            f"--order-by: unknown column(s) {', '.join(unknown)} (columns: {', '.join(names)})"
        )
    return out


def _filtered(df: DataFrame, where: str, schema: Schema) -> DataFrame:
    """``df`` filtered by the user's ``--where``, bound once to the table's schema and built as
    Spark Columns (the text never reaches Spark's parser)."""
    from lakectl.expr.compile_spark import spark_column

    return df.where(spark_column(bind_where(where, schema)))


def _prune(target: ReadTarget, request: SnapshotRequest) -> tuple[ReadTarget, ScanStats, list[str]]:
    """Skip partitions and list-bucketing directories ``--where`` cannot match; also returns the
    text of the statements the read applies (read only when there is a ``--where``)."""
    statements: list[str] = []
    if request.where and not request.raw:
        statements = [s.sql for s in _statements_for(target, request)]
    pruned, scan = prune_target(target, request.where, statements)
    return pruned, scan, statements


def statements_frame(ctx: Context, target: ReadTarget, request: SnapshotRequest) -> DataFrame:
    """The snapshot with its Type 7 statements applied (none for ``--raw``)."""
    df = snapshot_frame(ctx, target, request)
    return df if request.raw else _apply_statements(df, target, request)


def _statements_for(target: ReadTarget, request: SnapshotRequest) -> list[Statement]:
    """The statements effective at ``--as-of`` (default now), in install order."""
    from lakectl.ops.updates import statements_for_read

    as_of = request.as_of if request.as_of is not None else int(time.time() * 1000)
    return statements_for_read(target.store, target.state, target.metadata, as_of)


def _apply_statements(df: DataFrame, target: ReadTarget, request: SnapshotRequest) -> DataFrame:
    """Type 7: apply the statements effective at ``--as-of`` (default now), in install order."""
    from lakectl.spark.statement_compile import apply_statements

    effective = _statements_for(target, request)
    return apply_statements(df, effective, target.metadata.schema) if effective else df


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
