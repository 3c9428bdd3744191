"""Checking and shaping a batch before it is loaded, in pyarrow: the rules of
:mod:`lakectl.table.batch_checks` (as :mod:`lakectl.spark.batch` applies them with Spark).

The batch's columns are matched to the table's, cast to the table's types with Spark's casts
(:mod:`lakectl.arrow.casts`), and checked before anything is written: a value that does not fit
its column's type, a null key and an unknown op code are reported with counts and the first
such value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.arrow.casts import spark_cast
from lakectl.arrow.source import spark_type_of
from lakectl.arrow.types import arrow_type
from lakectl.table.batch_checks import (
    ACTION_COL,
    ORDER_COL,
    POSITION_COL,
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
    shaper = BatchShaper(raw.schema, meta, options, source)
    shaped = shaper.shape(raw)
    return shaped, shaper.finish()


@dataclass
class _Problem:
    """Values one check refuses: how many so far, and the first (as the error shows it)."""

    count: int
    first: object


class BatchShaper:
    """:func:`shape_batch_arrow` for a batch read in parts: :meth:`shape` each part in order
    (positions continue from the part before), then :meth:`finish`, which raises the error
    :func:`shape_batch_arrow` would raise for the whole batch (counts over every part, the
    first value of the first part holding one) or gives the batch's stats."""

    def __init__(
        self, schema: pa.Schema, meta: TableMetadata, options: BatchOptions, source: str
    ) -> None:
        self.meta, self.options, self.source = meta, options, source
        self.matched = batch_columns(list(schema.names), meta, options, source)
        self.source_types = {f.name: spark_type_of(f.type) for f in schema}
        self.rows = 0
        self._partitions: set[tuple[str | None, ...]] = set()
        # by check, in the order the whole batch's checks run: columns, keys, op codes
        self._problems: dict[tuple[int, int], _Problem] = {}

    def shape(self, raw: pa.Table) -> pa.Table:
        """One part of the batch, shaped (problems are kept for :meth:`finish`)."""
        import pyarrow as pa

        meta, matched = self.meta, self.matched
        typed: dict[str, pa.Array] = {}
        for at, column in enumerate(meta.schema.columns):
            typed[column.name] = self._typed_column(raw, column, at)
        for at, key in enumerate(meta.primary_key):
            name = matched.name_of(key)
            if name is not None:  # a key is never absent (batch_columns refuses it)
                self._note((1, at), raw.column(name).null_count, None)
        arrays = list(typed.values())
        names = list(typed)
        arrays.append(pa.array(range(self.rows, self.rows + raw.num_rows), pa.int64()))
        names.append(POSITION_COL)
        if matched.op_column is not None:
            arrays.append(self._actions(raw, matched.op_column))
            names.append(ACTION_COL)
        if self.options.order_by:
            arrays.append(typed[meta.schema[self.options.order_by].name])
            names.append(ORDER_COL)
        shaped = pa.table(arrays, names=names)
        self.rows += raw.num_rows
        self._partitions.update(_partitions(shaped, meta))
        return shaped

    def finish(self) -> BatchStats:
        """The batch's stats; raise the whole batch's first problem, or on an empty batch."""
        if not self.rows:
            raise empty_batch_error(self.source, columns=True)
        for (check, at), problem in sorted(self._problems.items()):
            if not problem.count:
                continue
            if check == 0:
                column = self.meta.schema.columns[at]
                raise type_error(self.source, column, problem.count, problem.first)
            if check == 1:
                raise null_key_error(self.source, self.meta.primary_key[at], problem.count)
            op_column = self.matched.op_column or ""
            mapping = self.options.op_values or {}
            raise op_code_error(self.source, op_column, problem.count, str(problem.first), mapping)
        ordered = sorted(self._partitions, key=lambda p: tuple((v is None, v or "") for v in p))
        return BatchStats(self.rows, tuple(ordered))

    def _note(self, check: tuple[int, int], count: int, first: Callable[[], object] | None) -> None:
        if not count:
            return
        known = self._problems.get(check)
        if known is None:
            self._problems[check] = _Problem(count, first() if first is not None else None)
        else:
            known.count += count

    def _typed_column(self, raw: pa.Table, column: Column, at: int) -> pa.Array:
        """``column``'s values: the batch's, cast to its type (the default for an absent
        one); values the cast turns into NULL are noted."""
        import pyarrow as pa
        import pyarrow.compute as pc

        name = self.matched.name_of(column.name)
        if name is None:
            return absent_column(column, raw.num_rows)
        values = raw.column(name).combine_chunks()
        source_type = self.source_types[name]
        if source_type == column.type:
            return values
        label = f"{self.source}: column {column.name!r}"
        cast = spark_cast(values, source_type, column.type, label)
        bad = pc.and_(pc.is_valid(values), pc.is_null(cast))
        count = pc.sum(bad).as_py() or 0

        def first() -> object:
            at_row = pc.index(bad, pa.scalar(True)).as_py()
            return spark_cast(values.slice(at_row, 1), source_type, "string", label)[0].as_py()

        self._note((0, at), count, first)
        return cast

    def _actions(self, raw: pa.Table, op_column: str) -> pa.Array:
        """Each row's action (``insert``/``update``/``delete``) from its op code; codes
        ``options.op_values`` does not know are noted."""
        import pyarrow as pa
        import pyarrow.compute as pc

        mapping = self.options.op_values or {}
        codes = spark_cast(
            raw.column(op_column),
            self.source_types[op_column],
            "string",
            f"{self.source}: {op_column!r}",
        )
        known = pa.array(list(mapping), pa.string())
        bad = pc.invert(pc.fill_null(pc.is_in(codes, value_set=known), False))
        count = pc.sum(bad).as_py() or 0

        def first() -> object:
            code = codes[pc.index(bad, pa.scalar(True)).as_py()].as_py()
            return "NULL" if code is None else code

        self._note((2, 0), count, first)
        actions = pa.array([mapping[c] for c in mapping], pa.string())
        return pc.take(actions, pc.index_in(codes, value_set=known))


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


def _partitions(shaped: pa.Table, meta: TableMetadata) -> list[tuple[str | None, ...]]:
    """The distinct partitions of the batch: each partition column's value as text (as Spark
    casts it to a string)."""
    if not meta.partition_by:
        return []
    import pyarrow as pa

    texts = {}
    for name in meta.partition_by:
        column = meta.schema[name]
        texts[column.name] = spark_cast(shaped.column(column.name), column.type, "string", name)
    distinct = pa.table(texts).group_by(list(texts)).aggregate([]).to_pylist()
    return [tuple(row[name] for name in texts) for row in distinct]


__all__ = [
    "ACTION_COL",
    "ORDER_COL",
    "POSITION_COL",
    "BatchOptions",
    "BatchShaper",
    "shape_batch_arrow",
]
