"""``lakectl snapshot --engine arrow``: the snapshot read without Spark or a JVM.

It answers as :func:`lakectl.ops.snapshot.snapshot` does (the same result object), reading
through :mod:`lakectl.arrow.read`; ``--out`` is written with pyarrow, as Spark lays it out: a
directory (here of one ``part-00000`` file) in Parquet, ORC or CSV.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lakectl.arrow.read import ArrowRead, read_arrow
from lakectl.errors import UnknownColumnError, UsageError
from lakectl.ops.context import Context
from lakectl.ops.snapshot import SnapshotRequest, SnapshotResult, time_bound_note
from lakectl.storage.fs import storage_for

if TYPE_CHECKING:
    import pyarrow as pa

OUT_FORMATS = ("parquet", "orc", "csv")


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
    read = read_arrow(ctx, table_ref, SnapshotRequest(**{**vars(request), "order_by": ()}))
    meta = read.target.metadata
    shown = read.schema.names
    order = request.row_order(meta.primary_key)
    if order and not request.order_by and not set(order) <= set(shown):
        # key order with --columns leaving the key out: read the key too, sort, then drop it
        wider = (*request.columns, *(k for k in order if k not in shown))
        read = read_arrow(ctx, table_ref, replace(request, order_by=(), columns=wider))
    schema = read.schema
    if not order:
        return ArrowRows(read, schema, order, read.batches())
    import pyarrow as pa

    schema = pa.schema([read.schema.field(n) for n in shown])
    return ArrowRows(read, schema, order, [b.select(shown) for b in _sorted(read, order)])


def arrow_snapshot(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> SnapshotResult:
    """Read the table with the Arrow reader and return rows (or write them to ``request.out``)."""
    if request.out and request.out_format.lower() not in OUT_FORMATS:
        raise UsageError(
            f"--format {request.out_format} is not written by the arrow engine",
            hint=f"use one of {', '.join(OUT_FORMATS)}, or --engine spark",
        )
    ctx.progress("reading")
    rows_read = arrow_rows(ctx, table_ref, request)
    read, shown = rows_read.read, rows_read.schema.names
    meta = read.target.metadata
    result = SnapshotResult(
        table=read.table,
        columns=shown,
        types=[meta.schema[c].type for c in shown],
        version=read.version,
        scan=read.scan.to_dict(),
        read_path="arrow",
        order_by=list(rows_read.order_by),
    )
    batches = rows_read.batches
    if request.out:
        result.out, result.rows_written = write_out(batches, rows_read.schema, request, ctx)
        return result
    limit = request.limit
    rows: list[tuple[Any, ...]] = []
    for batch in batches:
        rows.extend(tuple(r.values()) for r in wall_clock(batch).to_pylist())
        if limit and len(rows) > limit:
            rows, result.truncated = rows[:limit], True
            break
    result.rows = rows
    if not rows and request.as_of is not None:
        result.note = time_bound_note(ctx.table(table_ref), request.as_of)
    return result


def wall_clock(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with UTC timestamps as plain date-times, as Spark's rows hold them (its session
    time zone is UTC), so that both engines print the same text."""
    import pyarrow as pa

    fields = [
        pa.field(f.name, pa.timestamp(f.type.unit)) if pa.types.is_timestamp(f.type) else f
        for f in batch.schema
    ]
    return batch.cast(pa.schema(fields)) if fields != list(batch.schema) else batch


def _sorted(read: ArrowRead, order_by: tuple[str, ...]) -> list[pa.RecordBatch]:
    """The rows sorted as Spark's ``--order-by`` sorts them: nulls first ascending, last
    descending (pyarrow before 25 places nulls once for all keys: there, every key must go
    the same way)."""
    import pyarrow as pa

    by_lower = {n.lower(): n for n in read.schema.names}
    keys: list[tuple[str, str, str]] = []
    for item in order_by:
        name, _, direction = item.strip().partition(" ")
        direction = direction.strip().lower() or "asc"
        column = by_lower.get(name.lower())
        if column is None:
            raise UnknownColumnError(
                f"--order-by {item!r}: unknown column {name!r}; the columns read are: "
                f"{', '.join(read.schema.names)}"
            )
        if direction not in ("asc", "desc"):
            raise UsageError(
                f"--order-by {item!r}: expected COLUMN, COLUMN asc or COLUMN desc over the "
                f"columns read ({', '.join(read.schema.names)})"
            )
        up = direction == "asc"
        keys.append((column, "ascending" if up else "descending", "at_start" if up else "at_end"))
    table = pa.Table.from_batches(list(read.batches()), schema=read.schema)
    if int(pa.__version__.split(".")[0]) >= 25:
        return table.sort_by(keys).to_batches()
    if len({k[1] for k in keys}) > 1:
        raise UsageError(
            "--order-by: with this pyarrow the arrow engine sorts every column the same way",
            hint="use --engine spark for mixed directions, or pyarrow 25 or later",
        )
    return table.sort_by([k[:2] for k in keys], null_placement=keys[0][2]).to_batches()


def write_out(
    batches: Any, schema: pa.Schema, request: SnapshotRequest, ctx: Context
) -> tuple[str, int]:
    """Write the rows (at most ``--limit``) under ``--out``; its URL and the rows written."""
    import pyarrow.csv as pcsv
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    fmt = request.out_format.lower()
    storage, path = storage_for(request.out or "", ctx.config.storage_options)
    storage.makedirs(path)
    written = 0
    limit = request.limit
    with storage.fs.open(storage.join(path, f"part-00000.{fmt}"), "wb") as handle:
        if fmt == "parquet":
            writer: Any = pq.ParquetWriter(handle, schema)
        elif fmt == "orc":
            writer = orc.ORCWriter(handle)
        else:
            writer = pcsv.CSVWriter(handle, schema)
        for batch in batches:
            if limit is not None and written + batch.num_rows > limit:
                batch = batch.slice(0, limit - written)
            if batch.num_rows:
                writer.write(batch if fmt != "orc" else _table(batch))
            written += batch.num_rows
            if limit is not None and written >= limit:
                break
        writer.close()
    return storage.url(path), written


def _table(batch: pa.RecordBatch) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_batches([batch])


__all__ = ["OUT_FORMATS", "ArrowRows", "arrow_rows", "arrow_snapshot", "wall_clock", "write_out"]
