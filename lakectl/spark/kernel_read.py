"""Spark's read where lakectl's data source cannot serve it: the live-row kernel in Spark tasks.

The data source (:mod:`lakectl.spark.native_read`) is Spark's fast path; it cannot serve every
read (no jar on the session's class path, as on a Connect server without it; timestamp
columns; partition values it would have to parse; Hive original files; a filesystem without a
Hadoop client, as S3 without hadoop-aws). Then each Spark task takes a few buckets of one
partition and reads them with the Arrow engine's partition reader
(:mod:`lakectl.arrow.partition_reader`): pyarrow's ORC reader through the table's fsspec
filesystem, the live-row rule and schema mapping of :mod:`lakectl.kernel`, Arrow batches out
(``mapInArrow``). No join, no shuffle, no delete event leaves its task: the rule is the one every
Python reader applies, not a second one written in Spark's terms.

The Spark jobs that rewrite stored events read them here too (:func:`kernel_events`): a
compaction that Spark's writer finishes (list-bucketing splits, types the per-bucket merge does
not write) and the key lookup of loads that the per-partition lookup does not serve.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING

from lakectl.arrow.partition_reader import (
    MergeSpec,
    event_identities,
    partition_batches,
    stored_events,
)
from lakectl.kernel.live_rows import EVENT_COLUMNS
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.schema import Schema

from .arrow_tasks import ArrowTask, run_tasks, task_slots, task_units
from .snapshot_rows import ReadSpec, rows_ddl
from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


class EventKind(Enum):
    """What :func:`kernel_events` reads: a major compaction's live insert events, a minor one's
    insert events (no delete applied) or its delete events."""

    LIVE = "live"
    INSERTS = "inserts"
    DELETES = "deletes"


LIVE, INSERTS, DELETES = EventKind.LIVE, EventKind.INSERTS, EventKind.DELETES


def kernel_rows(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool = False,
    columns: Sequence[str] | None = None,
) -> DataFrame | None:
    """The snapshot's rows as :func:`lakectl.spark.snapshot_rows.read_rows` returns them, read by
    the kernel in Spark tasks; ``columns``: only those data columns (in the table's order; None:
    all). None when there is no file to read."""
    units = task_units([p for p in plans if not p.is_empty], task_slots(spark))
    if not units:
        return None
    merge = _merge_spec(spec, columns)
    if columns is not None:
        wanted = {c.lower() for c in columns}
        read = Schema(tuple(c for c in spec.data_schema.columns if c.name.lower() in wanted))
        spec = replace(spec, data_schema=read)
    struct = spark.createDataFrame([], _task_ddl(spec, with_identity)).schema
    rows = run_tasks(spark, _KernelTask(merge, units, struct, with_identity))
    names = [*spec.data_schema.names, *spec.partition_schema.names]
    if with_identity:
        names += IDENTITY_COLUMNS
    return rows.select(*[f"`{n}`" for n in names])


def kernel_events(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    kind: EventKind,
) -> DataFrame | None:
    """Stored events of ``plans`` as a compaction's writer takes them
    (:func:`lakectl.spark.acid_write.write_compacted`), read by the kernel in Spark tasks: the
    event columns, ``row`` (the data columns' struct; null for delete events), then the
    partition columns. ``kind``: :data:`LIVE`, the live insert events of bases, deltas and
    original files (a major compaction's); :data:`INSERTS`, the insert events of the deltas for
    valid write ids, no delete applied (a minor compaction's); :data:`DELETES`, the valid delete
    events of the delete deltas. None when there is no such file."""
    from pyspark.sql import functions as F

    if kind == DELETES:  # whole partitions: a delete delta's events name rows of any bucket
        units = [p for p in plans if p.delete_deltas]
    else:
        chosen = [p for p in plans if (p.data_dirs if kind == INSERTS else not p.is_empty)]
        units = task_units(chosen, task_slots(spark))
    if not units:
        return None
    data = "" if kind == DELETES else rows_ddl(replace(spec, partition_schema=Schema(())))
    plain = rows_ddl(replace(spec, data_schema=Schema(())))
    events = "operation int, originalTransaction bigint, bucket int, rowId bigint, "
    events += "currentTransaction bigint"
    struct = spark.createDataFrame([], ", ".join(x for x in (events, data, plain) if x)).schema
    found = run_tasks(spark, _EventTask(_merge_spec(spec), units, struct, kind))
    if kind == DELETES:
        fields = ", ".join(f"`{c.name}`: {c.type}" for c in spec.data_schema.columns)
        row = F.lit(None).cast(f"struct<{fields}>")
    else:
        row = F.struct(*[F.col(f"`{n}`") for n in spec.data_schema.names])
    return found.select(
        *EVENT_COLUMNS, row.alias("row"), *[F.col(f"`{n}`") for n in spec.partition_schema.names]
    )


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
    return run_tasks(
        spark, _IdentityTask(_merge_spec(spec), chosen, struct, deletes, first_write_id)
    )


def _merge_spec(spec: ReadSpec, columns: Sequence[str] | None = None) -> MergeSpec:
    """The partition reader's description of ``spec``'s rows (``columns``: the data columns
    read; None: all)."""
    return MergeSpec(
        spec.storage,
        spec.data_schema,
        spec.partition_schema,
        spec.valid,
        spec.not_null_column,
        columns=None if columns is None else tuple(columns),
    )


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


class _EventTask(_KernelTask):
    """The function of :func:`kernel_events`' tasks."""

    def __init__(
        self,
        spec: MergeSpec,
        units: list[PartitionReadPlan],
        struct: StructType,
        kind: EventKind,
    ) -> None:
        super().__init__(spec, units, struct, with_identity=True)
        self.kind = kind

    def batches(self, unit: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        if self.kind == LIVE:
            return partition_batches(self.spec, unit, events=True)
        return stored_events(self.spec, unit, deletes=self.kind == DELETES, head=EVENT_COLUMNS)


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


__all__ = [
    "DELETES",
    "INSERTS",
    "LIVE",
    "EventKind",
    "kernel_events",
    "kernel_identities",
    "kernel_rows",
]
