"""Spark's read where lakectl's data source cannot serve it: the live-row kernel in Spark tasks.

The data source (:mod:`lakectl.spark.native_read`) is Spark's fast path; it cannot serve every
read (no jar on the session's class path, as on a Connect server without it; timestamp
columns; partition values it would have to parse; Hive original files; a filesystem without a
Hadoop client, as S3 without hadoop-aws). Then each Spark task takes a few buckets of one
partition and reads them with the Arrow engine's partition reader
(:mod:`lakectl.arrow.partition_reader`): pyarrow's ORC reader through the table's fsspec
filesystem, the live-row rule and schema mapping of :mod:`lakectl.kernel`, Arrow batches out
(``mapInArrow``). No join, no shuffle, no delete event leaves its task: the rule is the one every
Python reader applies, not a second one written in Spark's terms. Spark's joins
(:mod:`lakectl.spark.acid_read`) read only what the kernel does not (:func:`join_reason`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lakectl.arrow.partition_reader import MergeSpec, event_identities, partition_batches
from lakectl.errors import FormatError
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import parse_bucket_file
from lakectl.table.listing import DirListing

from .snapshot_rows import ReadSpec, rows_ddl
from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Where reads the data source cannot serve go: ``auto`` (the default) and ``true`` through the
# kernel in Spark tasks (unless :func:`join_reason`); ``false`` through Spark's ORC scan and joins
# (``lakectl --conf spark.lakectl.read.kernel=false ...``).
ENABLED_CONF = "spark.lakectl.read.kernel"
_MAX_TASKS = 1000
_TASK_BYTES = 64 << 20  # of data files per task, about (a partition's buckets are split up)


def kernel_rows(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool = False,
) -> DataFrame | None:
    """The snapshot's rows as :func:`lakectl.spark.snapshot_rows.read_rows` returns them, read by
    the kernel in Spark tasks; None where it does not run (:func:`join_reason`), for the
    caller's joins."""
    mode = (spark.conf.get(ENABLED_CONF, "auto") or "auto").lower()
    if join_reason(spec) is not None or mode == "false":
        return None
    units = _units([p for p in plans if not p.is_empty], _slots(spark))
    if not units:
        return None
    ddl = _task_ddl(spec, with_identity)
    struct = spark.createDataFrame([], ddl).schema
    merge = MergeSpec(
        spec.storage, spec.data_schema, spec.partition_schema, spec.valid, spec.not_null_column
    )
    rows = _run(spark, _KernelTask(merge, units, struct, with_identity))
    names = [*spec.data_schema.names, *spec.partition_schema.names]
    if with_identity:
        names += IDENTITY_COLUMNS
    return rows.select(*[f"`{n}`" for n in names])


def kernel_identities(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    *,
    deletes: bool,
    first_write_id: int = 0,
) -> DataFrame | None:
    """The identities of the valid delete events of ``plans`` (``deletes``), or of their
    insert events first written by ``first_write_id`` or later (delete events not applied),
    read by the kernel in Spark tasks (:func:`~lakectl.arrow.partition_reader.event_identities`):
    identity columns, then the partition columns. None when there is no such file."""
    chosen = [p for p in plans if (p.delete_deltas if deletes else p.data_dirs)]
    if not chosen:
        return None
    plain = rows_ddl(replace(spec, data_schema=type(spec.data_schema)(())))
    ddl = ", ".join(x for x in ("originalTransaction bigint, bucket int, rowId bigint", plain) if x)
    struct = spark.createDataFrame([], ddl).schema
    merge = MergeSpec(
        spec.storage, spec.data_schema, spec.partition_schema, spec.valid, spec.not_null_column
    )
    return _run(spark, _IdentityTask(merge, chosen, struct, deletes, first_write_id))


def join_reason(spec: ReadSpec) -> str | None:
    """Why a read of ``spec`` the data source cannot serve goes through Spark's joins instead
    of the kernel (None: it does not): a column type with no Arrow reading."""
    from lakectl.arrow.types import arrow_schema

    try:
        arrow_schema(spec.data_schema)
        arrow_schema(spec.partition_schema)
    except FormatError as exc:
        return f"a column type the kernel cannot read ({exc})"
    return None


def _run(spark: SparkSession, task: _KernelTask) -> DataFrame:
    """One Spark task per unit of ``task``, its batches as the rows."""
    n = len(task.units)
    ids = spark.range(0, n, 1, numPartitions=max(1, min(n, _MAX_TASKS)))
    return ids.mapInArrow(task, task.struct)


def _task_ddl(spec: ReadSpec, with_identity: bool) -> str:
    """The DDL of a task's batches: identity columns first (as the partition reader gives
    them), then the data and partition columns."""
    plain = rows_ddl(spec)
    if not with_identity:
        return plain
    return f"originalTransaction bigint, bucket int, rowId bigint, {plain}"


def _slots(spark: SparkSession) -> int:
    """Task slots of the cluster (Spark Connect has no SparkContext: the shuffle partitions)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # pyspark.errors.PySparkNotImplementedError on Spark Connect
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)


def _units(plans: list[PartitionReadPlan], slots: int) -> list[PartitionReadPlan]:
    """``plans`` as the tasks' units: a partition whole, or its bucket files in a few groups
    when it is large or there are fewer partitions than two per slot (each group reads the
    partition's delete deltas: the delete events of one bucket may name rows of any)."""
    units = []
    total = sum(_size(p) for p in plans)
    share = max(1, total // max(1, 2 * slots))
    for plan in plans:
        parts = max(1, min(-(-_size(plan) // min(share, _TASK_BYTES)), 64))
        units.extend(_by_bucket(plan, parts) if parts > 1 else [plan])
    return units


def _size(plan: PartitionReadPlan) -> int:
    return sum(f.size for d in plan.data_dirs for f in d.files) + sum(
        f.size for f in plan.originals
    )


def _by_bucket(plan: PartitionReadPlan, parts: int) -> list[PartitionReadPlan]:
    """``plan`` in up to ``parts`` plans, each with the data files of some buckets (the
    original files stay with the first); every one keeps all delete deltas."""
    buckets = sorted(
        {parse_bucket_file(f.name) for d in plan.data_dirs for f in d.files}, key=lambda b: b or -1
    )
    if len(buckets) < 2:
        return [plan]
    groups = [set(buckets[i::parts]) for i in range(min(parts, len(buckets)))]

    def only(d: DirListing, group: set[int | None]) -> DirListing:
        return replace(d, files=tuple(f for f in d.files if parse_bucket_file(f.name) in group))

    out = []
    for i, group in enumerate(groups):
        base = only(plan.base, group) if plan.base else None
        deltas = tuple(only(d, group) for d in plan.deltas)
        out.append(
            replace(
                plan,
                base=base,
                deltas=tuple(d for d in deltas if d.files),
                originals=plan.originals if i == 0 else (),
            )
        )
    return out


class _KernelTask:
    """The function each task runs (picklable: the spec, plans and a Spark type)."""

    def __init__(
        self,
        spec: MergeSpec,
        units: list[PartitionReadPlan],
        struct: StructType,
        with_identity: bool,
    ) -> None:
        self.spec = spec
        self.units = units
        self.struct = struct
        self.with_identity = with_identity

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.struct, timezone="UTC")
        for batch in batches:
            for i in batch.column("id").to_pylist():
                for rows in self._batches(self.units[i]):
                    yield rows if rows.schema == target else rows.cast(target)

    def _batches(self, plan: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        return partition_batches(self.spec, plan, self.with_identity)


class _IdentityTask(_KernelTask):
    """The function of :func:`kernel_identities`' tasks."""

    def __init__(
        self,
        spec: MergeSpec,
        units: list[PartitionReadPlan],
        struct: StructType,
        deletes: bool,
        first_write_id: int,
    ) -> None:
        super().__init__(spec, units, struct, with_identity=True)
        self.deletes = deletes
        self.first_write_id = first_write_id

    def _batches(self, plan: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        return event_identities(
            self.spec, plan, deletes=self.deletes, first_write_id=self.first_write_id
        )


__all__ = ["ENABLED_CONF", "join_reason", "kernel_identities", "kernel_rows"]
