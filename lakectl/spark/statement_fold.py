"""Folding Type 7 statements into stored rows: which rows they change and which they delete.

The rows are read with their ACID identity, the statements applied with the same compiled plan a
snapshot uses (:func:`lakectl.spark.statement_compile.apply_statements`), and the result compared with the
rows as read. Identity, not a primary key, ties the two together, so tables without a key work.
A row the statements leave as it was is not rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakectl.spark.statement_compile import apply_statements
from lakectl.table.metadata import TableMetadata

from . import event_write
from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakectl.updates.statements import Statement

CHANGE_COL = "__lakectl_change"  # "update" or "delete"
OLD = "__lakectl_old_"  # prefix of the partition values a changed row was read from
_BEFORE = "__lakectl_before"
_DELETED = "__lakectl_deleted"
_BARRIER = "__lakectl_barrier"


def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _all_equal(names: Sequence[str], before: Column) -> Column:
    same = [_col(c).eqNullSafe(before.getField(c)) for c in names]
    return reduce(lambda a, b: a & b, same)


def fold_changes(
    rows: DataFrame, statements: Sequence[Statement], meta: TableMetadata
) -> DataFrame:
    """The rows ``statements`` change or delete, labelled in :data:`CHANGE_COL`.

    ``rows`` holds the table's columns plus :data:`IDENTITY_COLUMNS`. The result has the table's
    columns (the new values of an updated row), the old partition values (``OLD`` + name), the
    identity of the stored row and the label. One pass: deleted rows are flagged, not dropped.
    """
    names = meta.schema.names
    before = F.col(_BEFORE)
    marked = rows.withColumn(_BEFORE, F.struct(*[_col(c) for c in names])).withColumn(
        _DELETED, F.lit(False)
    )
    applied = apply_statements(marked, statements, meta.schema, deleted_flag=_DELETED)
    deleted = F.col(_DELETED)
    labelled = applied.select(
        *[_col(c) for c in names],
        *[before.getField(p).alias(OLD + p) for p in meta.partition_by],
        *[F.col(c) for c in IDENTITY_COLUMNS],
        F.when(deleted, "delete")
        .when(~_all_equal(names, before), "update")
        .otherwise(None)
        .alias(CHANGE_COL),
        F.spark_partition_id().alias(_BARRIER),
    )
    # The filter reads a non-deterministic column, so the optimizer neither prunes that column
    # nor pushes the filter down into the statements' projections, where substituting every
    # column's expression into it grows the plan (and planning time) exponentially with the
    # number of statements.
    keep = F.col(CHANGE_COL).isNotNull() & (F.col(_BARRIER) >= 0)
    return labelled.where(keep).drop(_BARRIER)


def changes_to_write(changes: DataFrame, meta: TableMetadata) -> DataFrame:
    """The events that materialize the changes (:func:`lakectl.spark.event_write.change_events`):
    the new version of each updated row, a delete event for every changed or deleted one."""
    partitions = set(meta.partition_by)
    return event_write.change_events(
        changes,
        meta,
        insert=F.col(CHANGE_COL) == "update",
        delete=F.lit(True),
        old=lambda c: _col(OLD + c) if c in partitions else _col(c),
    )
