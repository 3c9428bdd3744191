"""A file written with an older schema, read in today's (:mod:`lakectl.table.evolution`).

The ``row`` struct of an ACID event file keeps the columns it was written with: columns are only
added at the end, widened or renamed since. Its fields are matched to today's data columns *by
position*, as Hive's ACID reader matches them (its files name them ``_colN``; a renamed column
keeps its position): today's column ``i`` is the file's field ``i``. A widened column is cast to
today's type; a column the file lacks (added after it was written) reads its default, or nulls.
Event columns are matched by name, case-insensitively.

Today's columns come as Arrow fields; a field may carry its column's default in its metadata
(:data:`DEFAULT_KEY`, with the column's type under :data:`TYPE_KEY` to parse it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakectl.kernel.orc_dates import from_orc

if TYPE_CHECKING:
    import pyarrow as pa

# Field metadata of a ``row`` field with a default: what a file written before the column was
# added reads, with the column's type for parsing it.
DEFAULT_KEY = b"lakectl.default"
TYPE_KEY = b"lakectl.type"


def row_source(position: int, file_fields: int) -> int | None:
    """The index in a file's ``row`` struct (of ``file_fields`` fields) of today's data column
    at ``position``: the same position, or None when the file was written before the column
    was added."""
    return position if position < file_fields else None


def field_default(field: pa.Field) -> object:
    """The default ``field`` carries in its metadata (:data:`DEFAULT_KEY`), or None."""
    from lakectl.expr.convert import default_value
    from lakectl.table.schema import Column

    meta = field.metadata or {}
    if DEFAULT_KEY not in meta:
        return None
    column = Column(field.name, meta[TYPE_KEY].decode(), True, meta[DEFAULT_KEY].decode())
    return default_value(column)


def conformed(array: pa.Array | None, field: pa.Field, fill: object, rows: int) -> pa.Array:
    """A file's column ``array`` as today's ``field``: its dates in Arrow's calendar
    (:func:`~lakectl.kernel.orc_dates.from_orc`), cast where the type was widened since, or,
    when the file lacks the column (None), ``rows`` copies of ``fill`` (its default)."""
    import pyarrow as pa

    if array is None:
        return pa.array([fill] * rows, field.type)
    array = from_orc(array)
    return array if array.type == field.type else array.cast(field.type)


def conform_batch(
    batch: pa.RecordBatch, target: pa.Schema, partition_values: list[str | None]
) -> pa.RecordBatch:
    """``batch`` (an event file's stripe) in ``target``'s shape (an event file's schema today,
    then partition columns): event columns matched by name (case-insensitive), the ``row``
    fields by position, cast to the target types, the fields a file lacks at their default;
    then the partition values as constant string columns."""
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
    if by_position or name.lower() not in names:
        index = row_source(position, len(names))
    else:
        index = names.index(name.lower())
    if index is None:
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
    return conformed(array, pa.field("", target), None, len(array))


def _conform_field(
    parent: Any, field: pa.Field, position: int, by_position: bool = False
) -> pa.Array:
    """Field ``field`` of the record batch or struct array ``parent``: its own child, or for a
    file written before the column was added, the column's default (or nulls)."""
    import pyarrow as pa

    child = _child(parent, field.name, position, by_position)
    if child is not None:
        is_row = isinstance(parent, pa.RecordBatch) and field.name.lower() == "row"
        return _conform(child, field.type, by_position=is_row)
    rows = parent.num_rows if isinstance(parent, pa.RecordBatch) else len(parent)
    return conformed(None, field, field_default(field), rows)


__all__ = [
    "DEFAULT_KEY",
    "TYPE_KEY",
    "conform_batch",
    "conformed",
    "field_default",
    "row_source",
]
