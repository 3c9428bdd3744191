"""Arrow types of the table's columns (Spark SQL type names, :mod:`lakectl.table.schema`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lakectl.errors import FormatError
from lakectl.kernel.schema_map import DEFAULT_KEY, TYPE_KEY
from lakectl.table.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa

_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


def arrow_type(spark_type: str) -> pa.DataType:
    """The Arrow type a column of ``spark_type`` reads as (timestamps in microseconds, UTC,
    as Spark hands them to Arrow)."""
    import pyarrow as pa

    simple = {
        "tinyint": pa.int8(),
        "smallint": pa.int16(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "string": pa.string(),
        "binary": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
    }
    t = spark_type.replace(" ", "").lower()
    if t in simple:
        return simple[t]
    m = _DECIMAL.match(t)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    raise FormatError(f"column type {spark_type} cannot be read into Arrow")


def arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of ``schema``'s columns, in order."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in schema.columns])


def with_row_defaults(events: pa.Schema, data_schema: Schema) -> pa.Schema:
    """``events`` (an event file's schema, e.g. from Spark's struct) with the ``row`` fields'
    defaults of :func:`event_schema`, so that files written before a column was added read its
    default."""
    import pyarrow as pa

    row = event_schema(data_schema).field("row")
    index = events.get_field_index("row")
    return events.set(index, pa.field("row", row.type, events.field(index).nullable))


def event_schema(data_schema: Schema) -> pa.Schema:
    """An ACID event file's schema: the event columns and the ``row`` struct of the data (its
    fields carry their column's default, see :data:`DEFAULT_KEY`)."""
    import pyarrow as pa

    fields = [
        field.with_metadata({DEFAULT_KEY: column.default.encode(), TYPE_KEY: column.type.encode()})
        if column.default is not None
        else field
        for field, column in zip(arrow_schema(data_schema), data_schema.columns, strict=True)
    ]

    return pa.schema(
        [
            ("operation", pa.int32()),
            ("originalTransaction", pa.int64()),
            ("bucket", pa.int32()),
            ("rowId", pa.int64()),
            ("currentTransaction", pa.int64()),
            ("row", pa.struct(fields)),
        ]
    )


__all__ = ["arrow_schema", "arrow_type", "event_schema", "with_row_defaults"]
