"""The change feed as a Spark DataFrame: row changes from a range's insert and delete events.

It reads a :class:`~lakectl.scan.changes.ChangeScan` by the rules written there. A commit ``w``
stores the rows it inserts as insert events and the rows it deletes as delete events naming the
deleted row's identity (partition, originalTransaction, bucket, rowId). The deleted row's values
(its pre-image) are the row with that identity in the older snapshot, or a row inserted earlier
in the range; only the range's first delete event of an identity counts (a later one repeats a
deletion). A delete and an insert of the same key by one commit are an update:
``update_preimage`` and ``update_postimage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from lakectl.planning.change_plan import (
    CHANGE_TYPE,
    COMMIT_TIME,
    COMMIT_VERSION,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.changes import ChangeScan, initial_rows_time
from lakectl.spark.acid_read import delete_event_rows, insert_events
from lakectl.spark.snapshot_rows import ReadSpec, read_target
from lakectl.spark.types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PAIRED = "__lakectl_paired"
_DELETE_PREFIX = "__lakectl_d_"


def _q(name: str) -> Column:
    return F.col(f"`{name}`")


def _user_columns(spec: ReadSpec) -> list[str]:
    return [*spec.data_schema.names, *spec.partition_schema.names]


def _range_inserts(
    spark: SparkSession, spec: ReadSpec, plans: Sequence[PartitionReadPlan], write_ids: list[int]
) -> DataFrame | None:
    """Rows the range's commits inserted: user columns, identity, ``_commit_version``."""
    events = insert_events(spark, plans, spec)
    if events is None:
        return None
    return events.where(F.col("currentTransaction").isin(write_ids)).select(
        *[F.col(f"row.`{c}`").alias(c) for c in spec.data_schema.names],
        *[_q(c) for c in spec.partition_schema.names],
        *[F.col(c) for c in IDENTITY_COLUMNS],
        F.col("currentTransaction").cast("bigint").alias(COMMIT_VERSION),
    )


def _range_deletes(
    spark: SparkSession, spec: ReadSpec, plans: Sequence[PartitionReadPlan], write_ids: list[int]
) -> DataFrame | None:
    """Delete events of the range's commits: partition columns (prefixed), identity, version."""
    files = [f for p in plans for d in p.delete_deltas for f in d.files]
    if not files:
        return None
    events = delete_event_rows(spark, spec, files)
    named = [
        *[_q(c).alias(_DELETE_PREFIX + c) for c in spec.partition_schema.names],
        *[F.col(c).alias(_DELETE_PREFIX + c) for c in IDENTITY_COLUMNS],
    ]
    version = F.col("currentTransaction").cast("bigint")
    # Only the first delete event of an identity deletes a live row (lakectl.scan.changes).
    first = events.where(F.col("currentTransaction").isin(write_ids)).select(
        *named, version.alias(COMMIT_VERSION)
    )
    return first.groupBy(*[F.col(f"`{c}`") for c in first.columns[:-1]]).agg(
        F.min(COMMIT_VERSION).alias(COMMIT_VERSION)
    )


def _pre_images(deletes: DataFrame, pool: DataFrame, spec: ReadSpec) -> DataFrame:
    """The deleted rows' values: each delete event joined to the row it names."""
    conds = [F.col(_DELETE_PREFIX + c) == F.col(c) for c in IDENTITY_COLUMNS]
    conds += [F.col(_DELETE_PREFIX + c).eqNullSafe(_q(c)) for c in spec.partition_schema.names]
    joined = deletes.join(pool, reduce(lambda a, b: a & b, conds), "inner")
    return joined.select(*[_q(c) for c in _user_columns(spec)], COMMIT_VERSION)


def _classified(
    rows: DataFrame, other: DataFrame, key: Sequence[str], paired: str, alone: str
) -> DataFrame:
    """``rows`` with ``_change_type``: ``paired`` where ``other`` has the same key and version."""
    if not key:
        return rows.withColumn(CHANGE_TYPE, F.lit(alone))
    keys = other.select(*[_q(k) for k in key], COMMIT_VERSION).distinct()
    flagged = rows.join(keys.withColumn(_PAIRED, F.lit(True)), [*key, COMMIT_VERSION], "left")
    kind = F.when(F.col(_PAIRED).isNotNull(), F.lit(paired)).otherwise(F.lit(alone))
    return flagged.withColumn(CHANGE_TYPE, kind).drop(_PAIRED)


def change_feed(spark: SparkSession, source: ChangeScan, scd2: bool = False) -> DataFrame:
    """Every row change of ``source``'s range, unsorted: the table's columns, then
    ``_change_type``, ``_commit_version`` and ``_commit_time`` (with ``scd2``, the time the
    commit's rows took effect, and an SCD2 view that starts after the empty table opens with
    the rows live at its start, as inserts of that version)."""
    meta, rng = source.metadata, source.range
    spec = ReadSpec(
        source.store.storage,
        source.store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        source.newer_valid,
    )
    older_rows = read_target(spark, source.older.target, with_identity=True)[0]
    return _feed(
        spark,
        spec,
        source.range_plans,
        older_rows,
        rng.valid_times if scd2 else rng.commit_times,
        meta.primary_key,
        initial_rows_time(source) if scd2 else {},
    )


def _feed(
    spark: SparkSession,
    spec: ReadSpec,
    plans: Sequence[PartitionReadPlan],
    older_rows: DataFrame,
    commit_times: Mapping[int, int],
    key: Sequence[str],
    initial: Mapping[int, int] | None = None,
) -> DataFrame:
    """:func:`change_feed` of the commits in ``commit_times`` (write id -> time, ms):
    ``plans`` hold the range's delta and delete-delta directories, ``older_rows`` is the older
    snapshot with identity columns, ``initial`` its version -> time for an SCD2 view."""
    user = _user_columns(spec)
    write_ids = sorted(commit_times)
    inserts = _range_inserts(spark, spec, plans, write_ids) if write_ids else None
    deletes = _range_deletes(spark, spec, plans, write_ids) if write_ids else None
    frames = []
    for version in initial or {}:
        frames.append(
            older_rows.select(*[_q(c) for c in user])
            .withColumn(CHANGE_TYPE, F.lit("insert"))
            .withColumn(COMMIT_VERSION, F.lit(version).cast("bigint"))
        )
    commit_times = {**commit_times, **(initial or {})}
    deleted: DataFrame | None = None
    if deletes is not None:
        pool = older_rows.select(*[_q(c) for c in (*user, *IDENTITY_COLUMNS)])
        if inserts is not None:
            pool = pool.unionByName(inserts.drop(COMMIT_VERSION))
        deleted = _pre_images(deletes, pool, spec)
        other = inserts if inserts is not None else deleted.limit(0)
        frames.append(_classified(deleted, other, key, "update_preimage", "delete"))
    if inserts is not None:
        inserted = inserts.drop(*IDENTITY_COLUMNS)
        other = deleted if deleted is not None else inserted.limit(0)
        frames.append(_classified(inserted, other, key, "update_postimage", "insert"))
    columns = [*user, CHANGE_TYPE, COMMIT_VERSION]
    if not frames:
        empty = older_rows.select(*[_q(c) for c in user]).limit(0)
        frames.append(
            empty.withColumn(CHANGE_TYPE, F.lit(None).cast("string")).withColumn(
                COMMIT_VERSION, F.lit(None).cast("bigint")
            )
        )
    changes = reduce(lambda a, b: a.unionByName(b), [f.select(*columns) for f in frames])
    times = spark.createDataFrame(
        [(int(w), int(t)) for w, t in commit_times.items()] or [(-1, 0)],
        f"`{COMMIT_VERSION}` bigint, __lakectl_millis bigint",
    )
    with_time = changes.join(F.broadcast(times), COMMIT_VERSION, "left")
    return with_time.select(
        *[_q(c) for c in user],
        CHANGE_TYPE,
        COMMIT_VERSION,
        F.timestamp_millis(F.col("__lakectl_millis")).alias(COMMIT_TIME),
    )


def in_commit_order(changes: DataFrame, key: Sequence[str]) -> DataFrame:
    """``changes`` sorted by version, then key, with each pre-image before its post-image."""
    kind = F.col(CHANGE_TYPE)
    rank = (
        F.when(kind == "delete", 0)
        .when(kind == "update_preimage", 1)
        .when(kind == "update_postimage", 2)
        .otherwise(3)
    )
    return changes.orderBy(COMMIT_VERSION, *[_q(k) for k in key], rank)


def scd2_rows(
    changes: DataFrame, key: Sequence[str], current_valid_to: int | None = None
) -> DataFrame:
    """A slowly changing dimension of Type 2 from a feed that starts at the empty table.

    One row per version of each key: the row an ``insert`` or ``update_postimage`` added,
    ``valid_from`` its ``_commit_time`` (the time the commit took effect, as the caller gives
    it), ``valid_to`` that of the key's next change (the
    ``update_preimage`` or ``delete`` that replaced it; NULL while current, or
    ``current_valid_to`` (epoch ms) when given), ``is_current``.
    """
    opens = F.col(CHANGE_TYPE).isin("insert", "update_postimage")
    # In one commit the pre-image (the close) comes before the post-image (the next open).
    order = F.when(opens, F.lit(1)).otherwise(F.lit(0))
    window = Window.partitionBy(*[_q(k) for k in key]).orderBy(COMMIT_VERSION, order)
    user = [c for c in changes.columns if c not in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIME)]
    events = changes.withColumn(VALID_TO, F.lead(COMMIT_TIME).over(window))
    return events.where(opens).select(
        *[_q(c) for c in user],
        F.col(COMMIT_TIME).alias(VALID_FROM),
        _current_sentinel(F.col(VALID_TO), current_valid_to).alias(VALID_TO),
        F.col(VALID_TO).isNull().alias(IS_CURRENT),
    )


def _current_sentinel(valid_to: Column, millis: int | None) -> Column:
    """``valid_to``, with ``millis`` (as a timestamp) in place of NULL when given."""
    if millis is None:
        return valid_to
    return F.coalesce(valid_to, F.timestamp_millis(F.lit(int(millis))))


def scd2_order(rows: DataFrame, key: Sequence[str]) -> DataFrame:
    """SCD2 rows sorted by key, then validity."""
    return rows.orderBy(*[_q(k) for k in key], VALID_FROM)
