"""Compaction as Hive's compactor does it: one Spark task per (partition, bucket), no shuffle.

Every input file of a compaction is already in the order the output file needs (see
:mod:`lakectl.arrow.bucket_compaction`), so a Spark shuffle and sort of every row (what
:func:`lakectl.spark.acid_write.write_compacted` does, for any input) is wasted work.

Here each Spark task takes one (partition, bucket) and runs
:class:`~lakectl.arrow.bucket_compaction.BucketCompactor` on it, the code the Arrow engine runs
in process: a major compaction's new base, or a minor one's merged delta and delete delta. A
bucket whose rows carry a bucket field of another bucket cannot be written by one task alone:
then nothing of this path is kept and the caller rewrites through Spark.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from lakectl.arrow.bucket_compaction import (
    OK,
    BucketCompactor,
    BucketGroup,
    BucketOutput,
    MergeResult,
    bucket_groups,
    eligible,
    finish,
    minor_groups,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.properties import pyarrow_orc_codec
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

from .session import wait_for_running_tasks

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

_MAX_TASKS = 1000
# ``false`` makes every compaction take the Spark rewrite (to compare the two, or as an
# escape hatch): ``lakectl --conf spark.lakectl.compact.bucketMerge=false compact ...``.
ENABLED_CONF = "spark.lakectl.compact.bucketMerge"
_RESULT_DDL = "path string, rows bigint, status string, cpu_ms bigint"


def merge_major(
    spark: SparkSession,
    storage: Storage,
    root: str,
    plans: Sequence[PartitionReadPlan],
    out_dirs: Mapping[str, str],
    data_schema: Schema,
    valid: ValidWriteIds,
    *,
    key: str | None,
    compression: str,
) -> MergeResult | None:
    """Write the new bases of ``plans``, one task per bucket file; ``None`` (and nothing left
    behind) when this path does not apply, for the caller to rewrite through Spark."""
    if not _enabled(spark, data_schema):
        return None
    groups = bucket_groups(storage, root, plans, out_dirs)
    compactor = BucketCompactor(
        storage, data_schema, valid, key=key, compression=pyarrow_orc_codec(compression)
    )
    return _run(spark, root, compactor, groups)


def merge_minor(
    spark: SparkSession,
    storage: Storage,
    root: str,
    plans: Sequence[PartitionReadPlan],
    delta_dirs: Mapping[str, str],
    delete_dirs: Mapping[str, str],
    data_schema: Schema,
    valid: ValidWriteIds,
    *,
    key: str | None,
    compression: str,
) -> MergeResult | None:
    """Write the merged deltas and delete deltas of ``plans`` (the minor compaction's inputs),
    one task per bucket file; ``None`` (nothing left behind) when this path does not apply."""
    if not _enabled(spark, data_schema):
        return None
    groups = minor_groups(storage, root, plans, delta_dirs, delete_dirs)
    compactor = BucketCompactor(
        storage, data_schema, valid, key=key, compression=pyarrow_orc_codec(compression)
    )
    return _run(spark, root, compactor, groups)


def _enabled(spark: SparkSession, data_schema: Schema) -> bool:
    if (spark.conf.get(ENABLED_CONF, "true") or "true").lower() == "false":
        return False
    return eligible(data_schema)


def _run(
    spark: SparkSession,
    root: str,
    compactor: BucketCompactor,
    groups: list[BucketGroup] | None,
) -> MergeResult | None:
    if groups is None:
        return None
    if not groups:
        return MergeResult(set(), 0)
    storage = compactor.storage
    # Largest first: the long tasks start early.
    groups = sorted(groups, key=lambda g: -g.size)
    task = _MergeTask(compactor, groups)
    n = len(groups)
    ids = spark.range(0, n, 1, numPartitions=min(n, _MAX_TASKS))
    try:
        results = ids.mapInArrow(task, _RESULT_DDL).collect()
    except Exception:
        # A task failed (a damaged input file, say): the others are being killed and may
        # still be writing; the caller removes the outputs once they have stopped.
        wait_for_running_tasks(spark)
        raise
    written = [r for r in results if r["path"]]
    if any(r["status"] != OK for r in results):
        for r in written:
            storage.delete(r["path"])
        return None
    outputs = [BucketOutput(r["path"], int(r["rows"]), OK) for r in written]
    merged = finish(storage, root, outputs)
    return MergeResult(merged.dirs, merged.rows, sum(int(r["cpu_ms"]) for r in results))


class _MergeTask:
    """The function each task runs (picklable: the compactor and plain values only)."""

    def __init__(self, compactor: BucketCompactor, groups: list[BucketGroup]) -> None:
        self.compactor = compactor
        self.groups = groups

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = pa.schema(
            [
                ("path", pa.string()),
                ("rows", pa.int64()),
                ("status", pa.string()),
                ("cpu_ms", pa.int64()),
            ]
        )
        for batch in batches:
            for i in batch.column("id").to_pylist():
                started = time.process_time()
                done = self.compactor.compact(self.groups[i])
                cpu_ms = round((time.process_time() - started) * 1000)
                yield pa.RecordBatch.from_pydict(
                    {
                        "path": [done.path],
                        "rows": [done.rows],
                        "status": [done.status],
                        "cpu_ms": [cpu_ms],
                    },
                    schema=schema,
                )


__all__ = ["ENABLED_CONF", "BucketGroup", "MergeResult", "eligible", "merge_major", "merge_minor"]
