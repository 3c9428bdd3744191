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

from .arrow_tasks import ArrowTask, run_tasks, task_slots, task_units
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
    units = task_units([p for p in plans if not p.is_empty], task_slots(spark))
    if not units:
        return None
    ddl = _task_ddl(spec, with_identity)
    struct = spark.createDataFrame([], ddl).schema
    merge = MergeSpec(
        spec.storage, spec.data_schema, spec.partition_schema, spec.valid, spec.not_null_column
    )
    rows = run_tasks(spark, _KernelTask(merge, units, struct, with_identity))
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
    return run_tasks(spark, _IdentityTask(merge, chosen, struct, deletes, first_write_id))


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


def _task_ddl(spec: ReadSpec, with_identity: bool) -> str:
    """The DDL of a task's batches: identity columns first (as the partition reader gives
    them), then the data and partition columns."""
    plain = rows_ddl(spec)
    if not with_identity:
        return plain
    return f"originalTransaction bigint, bucket int, rowId bigint, {plain}"


class _KernelTask(ArrowTask[PartitionReadPlan]):
    """The function each task runs (picklable: the spec, plans and a Spark type)."""

    def __init__(
        self,
        spec: MergeSpec,
        units: list[PartitionReadPlan],
        struct: StructType,
        with_identity: bool,
    ) -> None:
        super().__init__(units, struct)
        self.spec = spec
        self.with_identity = with_identity

    def batches(self, unit: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        return partition_batches(self.spec, unit, self.with_identity)


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

    def batches(self, unit: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        return event_identities(
            self.spec, unit, deletes=self.deletes, first_write_id=self.first_write_id
        )


__all__ = ["ENABLED_CONF", "join_reason", "kernel_identities", "kernel_rows"]
