"""Major compaction as Hive's compactor does it: one task per (partition, bucket), no shuffle.

Every input file of a major compaction is already ordered by (originalTransaction, bucket,
rowId): a base is, and each delta holds one write id, higher than any row of the base and of
older deltas. Read in that order (base, then deltas by write id), the live events of one bucket
come out already in the order the output file needs, so a Spark shuffle and sort of every row
(what :func:`lakectl.spark.acid_write.write_compacted` does, for any input) is wasted work.

Here each Spark task takes one (partition, bucket): it reads that bucket's base and delta files
with pyarrow (through the table's fsspec filesystem, like :mod:`lakectl.spark.fsspec_orc`), keeps its live events
(:mod:`lakectl.kernel.live_rows`; files of an older schema in today's by
:mod:`lakectl.kernel.schema_map`), and streams them into ``<partition>/<base>/bucket_N``. Order is checked as the
events stream; if some input breaks it (a list-bucketed base: one bucket in several
subdirectories), the task rereads its bucket and sorts it. A bucket whose rows carry a bucket
field of another bucket cannot be written by one task alone: then nothing of this path is kept
and the caller rewrites through Spark.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.acid_writer import bloom_filter_ids
from lakectl.arrow.events import orc_source
from lakectl.kernel.live_rows import EVENT_COLUMNS, IDENTITY, DeleteSet, live_rows
from lakectl.kernel.schema_map import conform_batch
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import bucket_file_name, decode_bucket, parse_bucket_file
from lakectl.table.orc_files import add_acid_metadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.properties import ORC_DICTIONARY_THRESHOLD, pyarrow_orc_codec
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

from .session import wait_for_running_tasks
from .types import event_schema_ddl

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

_SORT_KEYS = IDENTITY
# Row types this path writes back exactly as Spark's ORC writer would; others go through Spark.
_SAFE_TYPE = re.compile(
    r"^(bigint|int|smallint|tinyint|string|double|float|boolean|date|binary|decimal\(\d+,\s*\d+\))$"
)
_MAX_TASKS = 1000
# ``false`` makes every major compaction take the Spark rewrite (to compare the two, or as an
# escape hatch): ``lakectl --conf spark.lakectl.compact.bucketMerge=false compact ...``.
ENABLED_CONF = "spark.lakectl.compact.bucketMerge"
_RESULT_DDL = "path string, rows bigint, status string, cpu_ms bigint"


@dataclass(frozen=True)
class BucketGroup:
    """One output file: the inputs of one bucket of one partition, in write-id order."""

    partition: str
    bucket: int
    base_files: tuple[str, ...]
    delta_files: tuple[str, ...]  # validity applies to these (a base is taken whole)
    delete_files: tuple[str, ...]  # every delete delta file of the partition
    out_dir: str  # storage path of the new base directory
    size: int


@dataclass(frozen=True)
class MergeResult:
    dirs: set[str]  # relative paths of the directories written
    rows: int
    task_cpu_ms: int = 0  # CPU of the Python tasks (Spark's executor CPU metric leaves it out)


def eligible(data_schema: Schema) -> bool:
    """Whether every data column has a type this path round-trips exactly."""
    return all(_SAFE_TYPE.match(c.type.strip().lower()) for c in data_schema.columns)


def bucket_groups(
    storage: Storage, root: str, plans: Sequence[PartitionReadPlan], out_dirs: Mapping[str, str]
) -> list[BucketGroup] | None:
    """The (partition, bucket) groups of ``plans``; ``None`` if a file is not named
    ``bucket_N``. ``out_dirs`` maps a partition to the directory name to create in it."""
    groups: list[BucketGroup] = []
    for plan in plans:
        deletes = tuple(f.path for d in plan.delete_deltas for f in d.files)
        by_bucket: dict[int, tuple[list[str], list[str], list[int]]] = {}
        for d in plan.data_dirs:
            for f in d.files:
                bucket = parse_bucket_file(f.name)
                if bucket is None:
                    return None
                base, delta, size = by_bucket.setdefault(bucket, ([], [], [0]))
                (base if d.acid.is_base else delta).append(f.path)
                size[0] += f.size
        rel_dir = f"{plan.relative}/{out_dirs[plan.relative]}" if plan.relative else out_dirs[""]
        for bucket, (base, delta, size) in sorted(by_bucket.items()):
            groups.append(
                BucketGroup(
                    plan.relative,
                    bucket,
                    tuple(base),
                    tuple(delta),
                    deletes,
                    table_path(storage, root, rel_dir, Shape.DATA_DIR, source="the merge plan"),
                    size[0],
                )
            )
    return groups


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
    if (spark.conf.get(ENABLED_CONF, "true") or "true").lower() == "false":
        return None
    if not eligible(data_schema):
        return None
    groups = bucket_groups(storage, root, plans, out_dirs)
    if groups is None:
        return None
    if not groups:
        return MergeResult(set(), 0)
    # Largest first: the long tasks start early.
    groups.sort(key=lambda g: -g.size)
    struct = spark.createDataFrame([], event_schema_ddl(data_schema, Schema(()))).schema
    task = _MergeTask(
        storage,
        groups,
        struct,
        valid,
        pyarrow_orc_codec(compression),
        key,
        data_schema,
    )
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
    if any(r["status"] != "ok" for r in results):
        for r in written:
            storage.delete(r["path"])
        return None
    dirs = set()
    for r in written:
        add_acid_metadata(storage, r["path"])  # Hive's hive.acid.* items, as Spark's path does
        rel = r["path"][len(root) + 1 :].rsplit("/", 1)[0]
        dirs.add(rel)
    return MergeResult(
        dirs, sum(int(r["rows"]) for r in results), sum(int(r["cpu_ms"]) for r in results)
    )


class _MergeTask:
    """The function each task runs (picklable: storage and plain values only)."""

    def __init__(
        self,
        storage: Storage,
        groups: list[BucketGroup],
        struct: StructType,
        valid: ValidWriteIds,
        compression: str,
        key: str | None,
        data_schema: Schema | None = None,
    ) -> None:
        self.storage = storage
        self.data_schema = data_schema  # its defaults fill columns older files lack
        self.groups = groups
        self.struct = struct
        self.valid = valid
        self.compression = compression
        self.key = key

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from lakectl.arrow.types import with_row_defaults

        target = to_arrow_schema(self.struct, timezone="UTC")
        if self.data_schema is not None:
            target = with_row_defaults(target, self.data_schema)
        for batch in batches:
            for i in batch.column("id").to_pylist():
                started = time.process_time()
                path, rows, status = self._merge(self.groups[i], target)
                cpu_ms = round((time.process_time() - started) * 1000)
                yield pa.RecordBatch.from_pydict(
                    {"path": [path], "rows": [rows], "status": [status], "cpu_ms": [cpu_ms]},
                    schema=pa.schema(
                        [
                            ("path", pa.string()),
                            ("rows", pa.int64()),
                            ("status", pa.string()),
                            ("cpu_ms", pa.int64()),
                        ]
                    ),
                )

    # --- one bucket ---------------------------------------------------------------------------

    def _merge(self, group: BucketGroup, target: pa.Schema) -> tuple[str | None, int, str]:
        deletes = self._delete_keys(group, target)
        out = self.storage.join(group.out_dir, bucket_file_name(group.bucket))
        try:
            rows, status = self._write(group, target, deletes, out, sort=False)
            if status == "unordered":
                rows, status = self._write(group, target, deletes, out, sort=True)
        except BaseException:
            self.storage.delete(out)
            raise
        if status != "ok" or rows == 0:
            self.storage.delete(out)
            return None, 0, status
        return out, rows, status

    def _write(
        self,
        group: BucketGroup,
        target: pa.Schema,
        deletes: DeleteSet,
        out: str,
        *,
        sort: bool,
    ) -> tuple[int, str]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.orc as orc

        events = self._live(group, target, deletes)
        if sort:
            whole = pa.Table.from_batches(list(events), schema=target)
            order = [(k, "ascending") for k in _SORT_KEYS]
            events = iter(whole.sort_by(order).to_batches())
        rows = 0
        last: tuple[int, int, int] | None = None
        writer = handle = None
        try:
            for batch in events:
                if not batch.num_rows:
                    continue
                buckets = {decode_bucket(b) for b in batch.column("bucket").unique().to_pylist()}
                if buckets != {group.bucket}:
                    return 0, "mixed buckets"
                keys = [batch.column(k).to_numpy() for k in _SORT_KEYS]
                first = (int(keys[0][0]), int(keys[1][0]), int(keys[2][0]))
                if not sort and ((last is not None and first < last) or not _ordered(np, keys)):
                    return 0, "unordered"
                last = (int(keys[0][-1]), int(keys[1][-1]), int(keys[2][-1]))
                if writer is None:
                    self.storage.makedirs(group.out_dir)
                    handle = self.storage.fs.open(out, "wb")
                    writer = orc.ORCWriter(
                        handle,
                        compression=self.compression,
                        bloom_filter_columns=bloom_filter_ids(target, self.key),
                        dictionary_key_size_threshold=ORC_DICTIONARY_THRESHOLD,
                    )
                writer.write(pa.Table.from_batches([batch]))
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
            if handle is not None:
                handle.close()
        return rows, "ok"

    def _live(
        self, group: BucketGroup, target: pa.Schema, deletes: DeleteSet
    ) -> Iterator[pa.RecordBatch]:
        """The bucket's live events (:func:`~lakectl.kernel.live_rows.live_rows`), in file
        order."""
        import pyarrow.compute as pc

        files = [(p, False) for p in group.base_files] + [(p, True) for p in group.delta_files]
        for path, is_delta in files:
            for batch in self._read(path, target):
                row = batch.column("row")
                present = row.is_valid()
                if self.key is not None:
                    key = pc.struct_field(row, [self._key_index(target)])
                    present = pc.and_(present, key.is_valid())
                valid = self.valid if is_delta else None
                keep = live_rows(_events(batch), present, valid, deletes)
                yield batch if keep is None else batch.filter(keep)

    def _delete_keys(self, group: BucketGroup, target: pa.Schema) -> DeleteSet:
        """The identities the partition's valid delete events name."""
        events = (
            (_events(batch), batch.column("row").is_valid())
            for path in group.delete_files
            for batch in self._read(path, target)
        )
        return DeleteSet.of_events(events, self.valid)

    def _key_index(self, target: pa.Schema) -> int:
        row_type = target.field("row").type
        names = [row_type.field(i).name.lower() for i in range(row_type.num_fields)]
        return names.index(str(self.key).lower())

    def _read(self, path: str, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        import pyarrow.orc as orc

        with orc_source(self.storage, path) as source:
            reader = orc.ORCFile(source)
            for stripe in range(reader.nstripes):
                yield conform_batch(reader.read_stripe(stripe), target, [])


def _events(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: batch.column(name) for name in EVENT_COLUMNS}


def _ordered(np: Any, keys: list[Any]) -> bool:
    """Whether rows are in (originalTransaction, bucket, rowId) order."""
    if len(keys[0]) < 2:
        return True
    greater = np.zeros(len(keys[0]) - 1, dtype=bool)  # strictly greater on an earlier key
    equal = np.ones(len(keys[0]) - 1, dtype=bool)
    for k in keys:
        head, tail = k[:-1], k[1:]
        greater |= equal & (tail > head)
        equal &= tail == head
    return bool(np.all(greater | equal))


__all__ = ["ENABLED_CONF", "BucketGroup", "MergeResult", "bucket_groups", "eligible", "merge_major"]
