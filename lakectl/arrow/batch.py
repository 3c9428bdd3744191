"""Checking and shaping a batch before it is loaded, in pyarrow: the rules of
:mod:`lakectl.table.batch_checks` (as :mod:`lakectl.spark.batch` applies them with Spark).

The batch's columns are matched to the table's, cast to the table's types with Spark's casts
(:mod:`lakectl.arrow.casts`), and checked before anything is written: a value that does not fit
its column's type, a null key and an unknown op code are reported with counts and the first
such value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakectl.arrow.casts import spark_cast
from lakectl.arrow.source import spark_type_of
from lakectl.arrow.types import arrow_type
from lakectl.table.batch_checks import (
    ACTION_COL,
    ORDER_COL,
    POSITION_COL,
    BatchColumns,
    BatchOptions,
    BatchStats,
    batch_columns,
    empty_batch_error,
    null_key_error,
    op_code_error,
    type_error,
)
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.table.schema import Column


def shape_batch_arrow(
    raw: pa.Table, meta: TableMetadata, options: BatchOptions, source: str
) -> tuple[pa.Table, BatchStats]:
    """The batch as the table's columns (in order, typed as
    :func:`lakectl.arrow.types.arrow_schema` types them), then :data:`POSITION_COL` (the row's
    position in the batch), :data:`ACTION_COL` (``insert``/``update``/``delete``, a CDC batch)
    and :data:`ORDER_COL` (the ``--order-by`` column's values); raise
    :class:`~lakectl.errors.BadInputError` on bad input, as the Spark engine does."""
    import pyarrow as pa

    matched = batch_columns(list(raw.schema.names), meta, options, source)
    if not raw.num_rows:
        raise empty_batch_error(source, columns=True)
    source_types = {f.name: spark_type_of(f.type) for f in raw.schema}
    typed: dict[str, pa.Array] = {}
    for column in meta.schema.columns:
        typed[column.name] = _typed_column(raw, matched, source_types, column, source)
    _check_keys(raw, meta, matched, source)
    arrays = list(typed.values())
    names = list(typed)
    arrays.append(pa.array(range(raw.num_rows), pa.int64()))
    names.append(POSITION_COL)
    if matched.op_column is not None:
        arrays.append(_actions(raw, matched.op_column, source_types, options, source))
        names.append(ACTION_COL)
    if options.order_by:
        arrays.append(typed[meta.schema[options.order_by].name])
        names.append(ORDER_COL)
    shaped = pa.table(arrays, names=names)
    return shaped, BatchStats(raw.num_rows, _partitions(shaped, meta))


def _typed_column(
    raw: pa.Table,
    matched: BatchColumns,
    source_types: dict[str, str],
    column: Column,
    source: str,
) -> pa.Array:
    """``column``'s values: the batch's, cast to its type (the default for an absent one);
    raise naming values the cast turns into NULL."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name = matched.name_of(column.name)
    if name is None:
        return absent_column(column, raw.num_rows)
    values = raw.column(name).combine_chunks()
    source_type = source_types[name]
    if source_type == column.type:
        return values
    label = f"{source}: column {column.name!r}"
    cast = spark_cast(values, source_type, column.type, label)
    bad = pc.and_(pc.is_valid(values), pc.is_null(cast))
    count = pc.sum(bad).as_py() or 0
    if count:
        first = pc.index(bad, pa.scalar(True)).as_py()
        text = spark_cast(values.slice(first, 1), source_type, "string", label)
        raise type_error(source, column, count, text[0].as_py())
    return cast


def absent_column(column: Column, rows: int) -> pa.Array:
    """A column of ``column``'s default (NULL without one), as the Spark engine fills it."""
    import pyarrow as pa

    from lakectl.expr.convert import default_value

    value = default_value(column)
    target = arrow_type(column.type)
    if value is None:
        return pa.nulls(rows, target)
    scalar = _default_scalar(value, column.type)
    return pa.array([scalar] * rows, target)


def _default_scalar(value: object, type_name: str) -> object:
    """A default's Python value as pyarrow takes it (timestamps are UTC)."""
    import datetime as dt

    if type_name == "timestamp" and isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC)
    return value


def _check_keys(raw: pa.Table, meta: TableMetadata, matched: BatchColumns, source: str) -> None:
    for key in meta.primary_key:
        name = matched.name_of(key)
        if name is None:
            continue  # a key is never absent (batch_columns refuses it)
        nulls = raw.column(name).null_count
        if nulls:
            raise null_key_error(source, key, nulls)


def _actions(
    raw: pa.Table,
    op_column: str,
    source_types: dict[str, str],
    options: BatchOptions,
    source: str,
) -> pa.Array:
    """Each row's action (``insert``/``update``/``delete``) from its op code; raise naming
    codes ``options.op_values`` does not know."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mapping = options.op_values or {}
    codes = spark_cast(
        raw.column(op_column), source_types[op_column], "string", f"{source}: {op_column!r}"
    )
    known = pa.array(list(mapping), pa.string())
    bad = pc.invert(pc.fill_null(pc.is_in(codes, value_set=known), False))
    count = pc.sum(bad).as_py() or 0
    if count:
        first = codes[pc.index(bad, pa.scalar(True)).as_py()].as_py()
        raise op_code_error(source, op_column, count, "NULL" if first is None else first, mapping)
    actions = pa.array([mapping[c] for c in mapping], pa.string())
    return pc.take(actions, pc.index_in(codes, value_set=known))


def _partitions(shaped: pa.Table, meta: TableMetadata) -> tuple[tuple[str | None, ...], ...]:
    """The distinct partitions of the batch: each partition column's value as text (as Spark
    casts it to a string), in sorted order."""
    if not meta.partition_by:
        return ()
    import pyarrow as pa

    texts = {}
    for name in meta.partition_by:
        column = meta.schema[name]
        texts[column.name] = spark_cast(shaped.column(column.name), column.type, "string", name)
    distinct = pa.table(texts).group_by(list(texts)).aggregate([]).to_pylist()
    rows = [tuple(row[name] for name in texts) for row in distinct]
    return tuple(sorted(rows, key=lambda p: tuple((v is None, v or "") for v in p)))


__all__ = ["ACTION_COL", "ORDER_COL", "POSITION_COL", "BatchOptions", "shape_batch_arrow"]
