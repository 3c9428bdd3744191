"""The change feed as a Spark DataFrame: the Arrow feed's rule run in Spark tasks.

It reads a :class:`~lakectl.scan.changes.ChangeScan` by the rules written there, as the Arrow
engine does and with its code: each Spark task computes the change rows of a few units of work
(a partition the range wrote, or some of its buckets, with the same buckets of the older
snapshot) by :meth:`lakectl.arrow.changes.FeedRule.unit_changes`, the live-row kernel's
partition reader inside, Arrow batches out (``mapInArrow``); no delete event leaves its task and
no join matches events to rows. Only the pairing of a key's delete and insert by one commit
(an update) looks across partitions, a window over the change rows (the rule of
:func:`lakectl.arrow.changes.pair_updates`). The order the command prints the rows in and the
SCD2 view are presentation, written here as DataFrame operations.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from lakectl.arrow.changes import CHANGE_ORDER, PAIRED, FeedRule, FeedUnit, feed_units
from lakectl.planning.change_plan import (
    CHANGE_TYPE,
    COMMIT_TIME,
    COMMIT_VERSION,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.changes import ChangeScan

from .arrow_tasks import (
    ArrowTask,
    bucket_groups,
    plan_bytes,
    run_tasks,
    task_counts,
    task_slots,
    with_buckets,
)
from .snapshot_rows import ReadSpec, rows_ddl

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def _q(name: str) -> Column:
    return F.col(f"`{name}`")


def change_feed(spark: SparkSession, source: ChangeScan, scd2: bool = False) -> DataFrame:
    """Every row change of ``source``'s range, unsorted: the table's columns, then
    ``_change_type``, ``_commit_version`` and ``_commit_time`` (with ``scd2``, the time the
    commit's rows took effect, and an SCD2 view that starts after the empty table opens with
    the rows live at its start, as inserts of that version)."""
    meta = source.metadata
    spec = ReadSpec(
        source.store.storage,
        source.store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        source.newer_valid,
    )
    ddl = f"{rows_ddl(spec)}, `{CHANGE_TYPE}` string, `{COMMIT_VERSION}` bigint"
    struct = spark.createDataFrame([], f"{ddl}, `{COMMIT_TIME}` timestamp").schema
    rule = FeedRule.of(source, scd2)
    units = spread_units(feed_units(source, scd2), task_slots(spark))
    rows = run_tasks(spark, _FeedTask(rule, units, struct))
    return paired_updates(rows, source.metadata.primary_key)


def spread_units(units: Sequence[FeedUnit], slots: int) -> list[FeedUnit]:
    """``units`` as the tasks' units: each whole, or its buckets in a few groups (the same on
    the range's and the older snapshot's side) when it is large or there are fewer units than
    two per slot."""
    sides = [[p for p in (u.range_plan, u.older_plan) if p is not None] for u in units]
    counts = task_counts([sum(plan_bytes(p) for p in side) for side in sides], slots)
    out: list[FeedUnit] = []
    for unit, side, parts in zip(units, sides, counts, strict=True):
        groups = bucket_groups(side, parts)
        out.extend([_in_buckets(unit, g, i == 0) for i, g in enumerate(groups)] or [unit])
    return out


def _in_buckets(unit: FeedUnit, group: set[int | None], originals: bool) -> FeedUnit:
    def part(plan: PartitionReadPlan | None) -> PartitionReadPlan | None:
        return None if plan is None else with_buckets(plan, group, originals)

    return FeedUnit(part(unit.range_plan), part(unit.older_plan))


class _FeedTask(ArrowTask[FeedUnit]):
    """The function of the feed's tasks (picklable: the rule, units and a Spark type)."""

    def __init__(self, rule: FeedRule, units: list[FeedUnit], struct: StructType) -> None:
        super().__init__(units, struct)
        self.rule = rule

    def batches(self, unit: FeedUnit) -> Iterator[pa.RecordBatch]:
        yield from self.rule.unit_changes(unit).to_batches()


def paired_updates(changes: DataFrame, key: Sequence[str]) -> DataFrame:
    """:func:`lakectl.arrow.changes.pair_updates` over a DataFrame: each ``delete`` and
    ``insert`` of a key that one commit both deletes and inserts relabelled as an update."""
    if not key:
        return changes
    kind = F.col(CHANGE_TYPE)
    window = Window.partitionBy(*[_q(k) for k in key], COMMIT_VERSION)
    whole = [_q(k).isNotNull() for k in key]
    relabelled = kind
    for alone, paired in PAIRED.items():
        others = F.max((kind != alone).cast("int")).over(window) == 1
        relabelled = F.when((kind == alone) & others & _all(whole), F.lit(paired)).otherwise(
            relabelled
        )
    return changes.withColumn(CHANGE_TYPE, relabelled)


def _all(tests: Sequence[Column]) -> Column:
    out = F.lit(True)
    for test in tests:
        out = out & test
    return out


def in_commit_order(changes: DataFrame, key: Sequence[str]) -> DataFrame:
    """``changes`` sorted by version, then key, with each pre-image before its post-image."""
    kind = F.col(CHANGE_TYPE)
    rank = F.lit(len(CHANGE_ORDER))
    for i, name in reversed(list(enumerate(CHANGE_ORDER))):
        rank = F.when(kind == name, F.lit(i)).otherwise(rank)
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
