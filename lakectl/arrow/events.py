"""ACID event files as Arrow data: reading them, and the checks on their events. Shared by the
JVM-free reader (:mod:`lakectl.arrow.read`) and the pyarrow paths that run inside Spark tasks
(:mod:`lakectl.spark.bucket_rewrite`, :mod:`lakectl.spark.key_lookup`, :mod:`lakectl.spark.fsspec_orc`).

They apply the rules of :mod:`lakectl.spark.acid_read`: every event column must be set, and
only events of valid write ids count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lakectl.storage.fs import Storage
from lakectl.table.orc_files import reading_orc

if TYPE_CHECKING:
    import pyarrow as pa

EVENT_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction")


def all_event_columns_set(events: pa.Table | pa.RecordBatch) -> pa.Array:
    """Rows whose event columns are all set (acid_read's guard filter)."""
    import numpy as np
    import pyarrow as pa

    keep = all_set([events.column(name) for name in EVENT_COLUMNS])
    return keep if keep is not None else pa.array(np.ones(events.num_rows, dtype=bool))


def all_set(columns: Iterable[pa.Array]) -> pa.Array | None:
    """Rows where every one of ``columns`` is set (None: all rows are)."""
    import pyarrow.compute as pc

    keep = None
    for column in columns:
        if column.null_count:
            keep = column.is_valid() if keep is None else pc.and_(keep, column.is_valid())
    return keep


def of_valid_write_ids(
    events: pa.Table | pa.RecordBatch, high_watermark: int, exceptions: Iterable[int]
) -> pa.Array:
    """Rows whose ``currentTransaction`` is a valid write id: at most the high watermark and
    not one of the ``exceptions`` (open or aborted)."""
    return valid_write_ids(events.column("currentTransaction"), high_watermark, exceptions)


def valid_write_ids(txn: pa.Array, high_watermark: int, exceptions: Iterable[int]) -> pa.Array:
    """Which write ids of ``txn`` are valid (see :func:`of_valid_write_ids`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ok = pc.less_equal(txn, high_watermark)
    excluded = sorted(exceptions)
    if excluded:
        ok = pc.and_(ok, pc.invert(pc.is_in(txn, pa.array(excluded, pa.int64()))))
    return ok


@contextmanager
def orc_source(storage: Storage, path: str) -> Iterator[Any]:
    """What ``pyarrow.orc.ORCFile`` reads ``path`` from: the local file mapped into memory (read
    by Arrow itself, not through Python calls), or the object's bytes fetched with one GET
    (random reads on an object store cost a request each). A failure to read or decode the
    file inside the block names it (:func:`~lakectl.table.orc_files.reading_orc`)."""
    import pyarrow as pa

    with reading_orc(storage, path):
        if storage.scheme == "file":
            with pa.memory_map(path) as handle:
                yield handle
        else:
            yield pa.BufferReader(storage.cat(path))


def conform_batch(
    batch: pa.RecordBatch, target: pa.Schema, partition_values: list[str | None]
) -> pa.RecordBatch:
    """``batch`` (an event file's stripe) in ``target``'s shape: event columns matched by name
    (case-insensitive), the ``row`` fields by position (as Hive's ACID reader matches them: its
    files name them ``_colN``, and a renamed column keeps its position), cast to the target
    types, then the partition values as constant string columns."""
    import pyarrow as pa

    n = batch.num_rows
    events = len(target) - len(partition_values)
    arrays = [_conform_field(batch, field, i) for i, field in enumerate(list(target)[:events])]
    arrays += [pa.array([v] * n, pa.string()) for v in partition_values]  # None: default part.
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _child(parent: Any, name: str, position: int, by_position: bool) -> pa.Array | None:
    """The child column ``name`` of a record batch or struct array (else, or with
    ``by_position``, the one at ``position``; None when the file has fewer: a column added
    after it was written)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fields = parent.schema if isinstance(parent, pa.RecordBatch) else parent.type
    names = [field.name.lower() for field in fields]
    index = position if by_position or name.lower() not in names else names.index(name.lower())
    if index >= len(names):
        return None
    if isinstance(parent, pa.RecordBatch):
        return parent.column(index)
    return pc.struct_field(parent, [index])


def _conform(array: pa.Array, target: pa.DataType, by_position: bool = False) -> pa.Array:
    import pyarrow as pa

    if pa.types.is_struct(target):
        children = [
            _conform_field(array, target.field(i), i, by_position) for i in range(target.num_fields)
        ]
        return pa.StructArray.from_arrays(
            children, fields=list(target), mask=array.is_null() if array.null_count else None
        )
    return array if array.type == target else array.cast(target)


def _conform_field(
    parent: Any, field: pa.Field, position: int, by_position: bool = False
) -> pa.Array:
    """Field ``field`` of the record batch or struct array ``parent``: its own child, or for a
    file written before the column was added, the column's default (or nulls)."""
    import pyarrow as pa

    from lakectl.arrow.types import DEFAULT_KEY, TYPE_KEY
    from lakectl.table.evolution import default_value
    from lakectl.table.schema import Column

    child = _child(parent, field.name, position, by_position)
    if child is not None:
        is_row = isinstance(parent, pa.RecordBatch) and field.name.lower() == "row"
        return _conform(child, field.type, by_position=is_row)
    meta = field.metadata or {}
    value = None
    if DEFAULT_KEY in meta:
        column = Column(field.name, meta[TYPE_KEY].decode(), True, meta[DEFAULT_KEY].decode())
        value = default_value(column)
    return pa.array(
        [value] * parent.num_rows if isinstance(parent, pa.RecordBatch) else [value] * len(parent),
        field.type,
    )
