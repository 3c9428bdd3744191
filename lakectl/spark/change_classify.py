"""Deciding, per key, whether a change is an insert, an update, a delete or ignored.

The batch is reduced to the last change per key (by ``--order-by``, then file position), joined
with the stored rows' keys and identities (never their other columns), and classified. A change
that is not newer than the stored version (by ``--order-by``) is ignored, so a late, older change
never overwrites a newer one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Observation, Window
from pyspark.sql import functions as F

from lakectl.kernel.change_classify import OLD, RESULT_COL, RESULTS
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata

from . import acid_write
from .batch import ACTION_COL, ORDER_COL, POSITION_COL
from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakectl.arrow.acid_writer import WrittenChanges


def has_repeated_keys(batch: DataFrame, meta: TableMetadata) -> bool:
    """Does any key occur more than once in the batch? (A shuffle of the key columns only.)"""
    keys = [F.col(f"`{k}`") for k in meta.primary_key]
    return bool(batch.groupBy(*keys).count().where(F.col("count") > 1).limit(1).collect())


def latest_per_key(batch: DataFrame, meta: TableMetadata, has_order: bool) -> DataFrame:
    """Keep the newest change of each key in the batch."""
    order = [F.col(ORDER_COL).desc_nulls_first()] if has_order else []
    window = Window.partitionBy(*[F.col(f"`{k}`") for k in meta.primary_key]).orderBy(
        *order, F.col(POSITION_COL).desc()
    )
    return batch.withColumn("__rn", F.row_number().over(window)).where("__rn = 1").drop("__rn")


def classify(
    latest: DataFrame,
    existing: DataFrame,
    meta: TableMetadata,
    *,
    mode: LoadMode,
    order_by: str | None,
    broadcast_existing: bool = False,
) -> DataFrame:
    """Join the batch with stored keys and label each change (``RESULT_COL``).

    ``existing`` holds at most one row per key of the batch; with ``broadcast_existing`` it is
    joined by broadcast, so the batch rows are not sorted for a sort-merge join.
    """
    keep = [*meta.primary_key, *meta.partition_by, *IDENTITY_COLUMNS]
    if order_by:
        keep.append(order_by)
    seen: set[str] = set()
    old_cols = []
    for c in keep:
        if c.lower() not in seen:
            seen.add(c.lower())
            old_cols.append(F.col(f"`{c}`").alias(OLD + c))
    old = existing.select(*old_cols)
    cond = None
    for k in meta.primary_key:
        same = F.col(f"`{k}`") == F.col(f"`{OLD + k}`")
        cond = same if cond is None else cond & same
    joined = latest.join(F.broadcast(old) if broadcast_existing else old, cond, "left")
    exists = F.col(f"`{OLD}rowId`").isNotNull()
    if order_by:
        stored = F.col(f"`{OLD}{order_by}`")
        newer = stored.isNull() | (F.col(ORDER_COL) > stored)
    else:
        newer = F.lit(True)
    if mode == LoadMode.CDC:
        op = F.col(ACTION_COL)
        result = (
            F.when(op == "delete", F.when(exists & newer, "delete").otherwise("ignored"))
            .when(exists & newer, "update")
            .when(exists, "ignored")
            .otherwise("insert")
        )
    else:  # upsert
        result = F.when(exists & newer, "update").when(exists, "ignored").otherwise("insert")
    return joined.withColumn(RESULT_COL, result)


def changes_to_write(classified: DataFrame, meta: TableMetadata) -> DataFrame:
    """The events a load writes (:func:`lakectl.spark.acid_write.change_events`): the new
    version of inserted and updated keys, a delete event for each updated or deleted row."""
    result = F.col(RESULT_COL)
    return acid_write.change_events(
        classified,
        meta,
        insert=result.isin("insert", "update"),
        delete=result.isin("update", "delete"),
        old=lambda c: F.col(f"`{OLD + c}`"),
    )


def observe_results(classified: DataFrame, name: str) -> tuple[DataFrame, Observation]:
    """``classified``, counting its rows by result while the next action runs (no extra job)."""
    observation = Observation(name)
    metrics = [F.count(F.when(F.col(RESULT_COL) == r, True)).alias(r) for r in RESULTS]
    return classified.observe(observation, *metrics), observation


def observed_counts(observation: Observation, written: WrittenChanges) -> dict[str, Any]:
    """The metrics :func:`observe_results` collected while ``written`` was written; empty
    when the write job wrote nothing.

    When no row reaches the write (every change ignored, as in a replayed batch), Spark's
    adaptive execution can replace the plan with an empty one, and the observed metrics go
    with it: classic PySpark's ``Observation.get`` then fails on the empty row it gets, and
    Spark Connect's returns no metrics at all. So they are not asked for then.
    """
    if written.inserts == 0 and written.deletes == 0:
        return {}
    return dict(observation.get)


def count_results(classified: DataFrame) -> dict[str, int]:
    """Rows of ``classified`` by result, counted by a job of their own."""
    found = {r[0]: r[1] for r in classified.groupBy(RESULT_COL).count().collect()}
    return {r: int(found.get(r, 0)) for r in RESULTS}


def checked_counts(
    observed: dict[str, Any], written: WrittenChanges, rows: int
) -> dict[str, int] | None:
    """The observed counts (:func:`observe_results`) if the written files confirm them.

    Spark's observed metrics can count a task twice when it is recomputed (a lost shuffle, a
    cancelled stage), so they are only taken when they agree with the events in the files:
    inserts + updates new rows, updates + deletes delete events, no more than ``rows`` in all.
    ``None`` means: count again (:func:`count_results`), as when nothing was observed.
    """
    if not observed:
        return None
    counts = {r: int(observed.get(r) or 0) for r in RESULTS}
    agrees = (
        counts["insert"] + counts["update"] == written.inserts
        and counts["update"] + counts["delete"] == written.deletes
        and sum(counts.values()) <= rows
    )
    return counts if agrees else None
