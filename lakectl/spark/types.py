"""Spark schemas for ACID files: the event struct around a table's row type."""

from __future__ import annotations

from lakectl.table.schema import Schema

ACID_META_DDL = (
    "operation int, originalTransaction bigint, bucket int, rowId bigint, currentTransaction bigint"
)
IDENTITY_COLUMNS = ("originalTransaction", "bucket", "rowId")


def row_struct_ddl(data_schema: Schema) -> str:
    """``struct<`a`:int,`b`:string>`` for the ``row`` field."""
    return "struct<" + ",".join(f"`{c.name}`:{c.type}" for c in data_schema.columns) + ">"


def event_schema_ddl(data_schema: Schema, partition_schema: Schema) -> str:
    """DDL of an ACID event file as Spark reads it, plus the partition columns from the path."""
    parts = [ACID_META_DDL, f"`row` {row_struct_ddl(data_schema)}"]
    parts += [f"`{c.name}` {c.type}" for c in partition_schema.columns]
    return ", ".join(parts)
