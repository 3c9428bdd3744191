"""What ``lakectl snapshot --engine arrow`` does with the rows of an Arrow read: sorts them as
Spark's ``--order-by`` does, shows timestamps as Spark's rows hold them, and writes ``--out`` with
pyarrow as Spark lays it out: a directory (here of one ``part-00000`` file) in Parquet, ORC or
CSV.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lakectl.arrow.read import ArrowRead
from lakectl.errors import UnknownColumnError, UsageError
from lakectl.scan.request import SnapshotRequest
from lakectl.storage.fs import storage_for

if TYPE_CHECKING:
    import pyarrow as pa

OUT_FORMATS = ("parquet", "orc", "csv")


def wall_clock(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with UTC timestamps as plain date-times, as Spark's rows hold them (its session
    time zone is UTC), so that both engines print the same text."""
    import pyarrow as pa

    fields = [
        pa.field(f.name, pa.timestamp(f.type.unit)) if pa.types.is_timestamp(f.type) else f
        for f in batch.schema
    ]
    return batch.cast(pa.schema(fields)) if fields != list(batch.schema) else batch


def python_rows(batches: Iterable[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """The rows of ``batches`` as Python tuples, timestamps as plain UTC date-times
    (:func:`wall_clock`): how a snapshot's rows are printed, whichever engine read them."""
    return [tuple(row.values()) for batch in batches for row in wall_clock(batch).to_pylist()]


def sorted_batches(read: ArrowRead, order_by: tuple[str, ...]) -> list[pa.RecordBatch]:
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
    batches: Any,
    schema: pa.Schema,
    request: SnapshotRequest,
    storage_options: dict[str, Any] | None = None,
) -> tuple[str, int]:
    """Write the rows (at most ``--limit``) under ``--out``; its URL and the rows written."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from lakectl.arrow.orc_io import OrcFileWriter

    fmt = request.out_format.lower()
    storage, path = storage_for(request.out or "", storage_options)
    storage.makedirs(path)
    written = 0
    limit = request.limit
    target = storage.join(path, f"part-00000.{fmt}")
    with contextlib.ExitStack() as stack:
        if fmt == "orc":  # as Spark's writer stores dates and times (it opens the file itself)
            writer: Any = stack.enter_context(OrcFileWriter(storage, target, schema=schema))
        else:
            handle = stack.enter_context(storage.fs.open(target, "wb"))
            if fmt == "parquet":
                writer = pq.ParquetWriter(handle, schema)
            else:
                writer = pcsv.CSVWriter(handle, schema)
            stack.callback(writer.close)
        for batch in batches:
            if limit is not None and written + batch.num_rows > limit:
                batch = batch.slice(0, limit - written)
            if batch.num_rows:
                writer.write(batch)
            written += batch.num_rows
            if limit is not None and written >= limit:
                break
    return storage.url(path), written


__all__ = ["OUT_FORMATS", "sorted_batches", "wall_clock", "write_out"]
