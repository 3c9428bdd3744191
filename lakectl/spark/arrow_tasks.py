"""Spark tasks that run Python's Arrow readers: one task per unit of work (a partition, or a few
of its buckets), Arrow batches out (``mapInArrow``).

The units are spread so that the cluster's task slots get about two each: a large partition,
or a table with fewer partitions than that, is read as groups of its bucket files (each group
with all of the partition's delete deltas: the delete events of one bucket may name rows of
any). The kernel's snapshot read (:mod:`lakectl.spark.kernel_read`) and the change feed
(:mod:`lakectl.spark.change_feed`) run their tasks this way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Generic, TypeVar

from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import parse_bucket_file
from lakectl.table.listing import DirListing

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

MAX_TASKS = 1000
TASK_BYTES = 64 << 20  # of data files per task, about (a partition's buckets are split up)
_MAX_GROUPS = 64  # bucket groups of one partition at most

Unit = TypeVar("Unit")


def task_slots(spark: SparkSession) -> int:
    """Task slots of the cluster (Spark Connect has no SparkContext: the shuffle partitions)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # pyspark.errors.PySparkNotImplementedError on Spark Connect
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)


def plan_bytes(plan: PartitionReadPlan) -> int:
    """The bytes of ``plan``'s data files (base, deltas, original files)."""
    return sum(f.size for d in plan.data_dirs for f in d.files) + sum(
        f.size for f in plan.originals
    )


def task_counts(sizes: Sequence[int], slots: int) -> list[int]:
    """Into how many tasks each unit of ``sizes`` (bytes) is split: about two tasks per slot
    over all units, about :data:`TASK_BYTES` each at most. The count is rounded, not rounded
    up: every task of a split unit reads all of the unit's delete deltas again, so a unit a
    little larger than its share stays whole."""
    share = max(1, sum(sizes) // max(1, 2 * slots))
    return [max(1, min(round(size / min(share, TASK_BYTES)), _MAX_GROUPS)) for size in sizes]


def bucket_groups(plans: Sequence[PartitionReadPlan], parts: int) -> list[set[int | None]]:
    """The bucket numbers of ``plans``' data files in up to ``parts`` groups; empty when
    there are fewer than two buckets (nothing to split)."""
    buckets = sorted(
        {parse_bucket_file(f.name) for p in plans for d in p.data_dirs for f in d.files},
        key=lambda b: b or -1,
    )
    if len(buckets) < 2 or parts < 2:
        return []
    return [set(buckets[i::parts]) for i in range(min(parts, len(buckets)))]


def with_buckets(
    plan: PartitionReadPlan, group: set[int | None], originals: bool
) -> PartitionReadPlan:
    """``plan`` with the data files of the buckets in ``group`` only (its original files only
    with ``originals``); all of its delete deltas."""

    def only(d: DirListing) -> DirListing:
        return replace(d, files=tuple(f for f in d.files if parse_bucket_file(f.name) in group))

    deltas = tuple(only(d) for d in plan.deltas)
    return replace(
        plan,
        base=only(plan.base) if plan.base else None,
        deltas=tuple(d for d in deltas if d.files),
        originals=plan.originals if originals else (),
    )


def task_units(plans: list[PartitionReadPlan], slots: int) -> list[PartitionReadPlan]:
    """``plans`` as the tasks' units: a partition whole, or its bucket files in a few groups
    when it is large or there are fewer partitions than two per slot (the original files stay
    with the first group)."""
    units: list[PartitionReadPlan] = []
    for plan, parts in zip(plans, task_counts([plan_bytes(p) for p in plans], slots), strict=True):
        groups = bucket_groups([plan], parts)
        units.extend([with_buckets(plan, g, i == 0) for i, g in enumerate(groups)] or [plan])
    return units


class ArrowTask(Generic[Unit]):
    """The function each task runs: the batches of its units, cast to the frame's schema.
    Subclasses say what a unit's batches are (:meth:`batches`); they must be picklable."""

    def __init__(self, units: Sequence[Unit], struct: StructType) -> None:
        self.units = list(units)
        self.struct = struct

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.struct, timezone="UTC")
        for batch in batches:
            for i in batch.column("id").to_pylist():
                for rows in self.batches(self.units[i]):
                    yield rows if rows.schema == target else rows.cast(target)

    def batches(self, unit: Unit) -> Iterator[pa.RecordBatch]:
        """The Arrow batches of one unit."""
        raise NotImplementedError


def run_tasks(spark: SparkSession, task: ArrowTask[Unit]) -> DataFrame:
    """One Spark task per unit of ``task``, its batches as the rows (of ``task.struct``)."""
    n = len(task.units)
    ids = spark.range(0, n, 1, numPartitions=max(1, min(n, MAX_TASKS)))
    return ids.mapInArrow(task, task.struct)


__all__ = [
    "MAX_TASKS",
    "TASK_BYTES",
    "ArrowTask",
    "bucket_groups",
    "plan_bytes",
    "run_tasks",
    "task_counts",
    "task_slots",
    "task_units",
    "with_buckets",
]
