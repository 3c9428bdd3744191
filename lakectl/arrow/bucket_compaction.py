"""Compaction of one (partition, bucket) at a time, in pyarrow: Hive's compactor per bucket file.

Every input file of a compaction is already ordered by (originalTransaction, bucket, rowId): a
base is, and each delta holds one write id, higher than any row of the base and of older deltas.
Read in that order (base, then deltas by write id), the events of one bucket come out in the
order the output file needs, so no sort of the whole input is needed.

A :class:`BucketGroup` is one output file: the inputs of one bucket of one partition.
:class:`BucketCompactor` writes it:

- ``major``: the bucket's live events of its base and deltas (:mod:`lakectl.kernel.live_rows`;
  files of an older schema read in today's by :mod:`lakectl.kernel.schema_map`) into
  ``<partition>/<base>/bucket_N``;
- ``inserts`` (minor): the insert events of valid write ids of the bucket's deltas, kept whole
  (no delete applied), into ``<partition>/delta_N_M/bucket_N``;
- ``deletes`` (minor): the valid delete events of the bucket's delete deltas into
  ``<partition>/delete_delta_N_M/bucket_N``, sorted by identity.

Every event keeps its identity and write id. Order is checked as the events stream; if an input
breaks it (a list-bucketed base: one bucket in several subdirectories), the bucket is reread and
sorted. A bucket whose events carry the bucket field of another bucket is reported
(``mixed buckets``): :meth:`BucketCompactor.compact_partition` then writes that partition's
events by their own bucket field, holding the partition in memory.

Spark tasks run this (:mod:`lakectl.spark.bucket_rewrite`), and the Arrow engine runs it in
process, one bucket at a time (:func:`compact_groups`): no pyspark import here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lakectl.arrow.acid_writer import bloom_filter_ids
from lakectl.arrow.events import orc_source
from lakectl.arrow.orc_io import OrcFileWriter, read_stripe
from lakectl.arrow.types import event_schema
from lakectl.kernel.live_rows import (
    EVENT_COLUMNS,
    IDENTITY,
    DeleteSet,
    delete_events,
    insert_events,
    live_rows,
)
from lakectl.kernel.schema_map import conform_batch
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import bucket_file_name, decode_bucket, parse_bucket_file
from lakectl.table.orc_files import add_acid_metadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.properties import ORC_DICTIONARY_THRESHOLD
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

# What a group writes: a major compaction's base, or a minor one's delta or delete delta.
MAJOR, INSERTS, DELETES = "major", "inserts", "deletes"
# Row types this path writes back exactly as Spark's ORC writer would; others go through Spark.
_SAFE_TYPE = re.compile(
    r"^(bigint|int|smallint|tinyint|string|double|float|boolean|date|binary|decimal\(\d+,\s*\d+\))$"
)
OK, MIXED, UNORDERED = "ok", "mixed buckets", "unordered"


@dataclass(frozen=True)
class BucketGroup:
    """One output file: the inputs of one bucket of one partition, in write-id order."""

    partition: str
    bucket: int
    base_files: tuple[str, ...]
    delta_files: tuple[str, ...]  # validity applies to these (a base is taken whole)
    delete_files: tuple[str, ...]  # major: every delete delta file of the partition
    out_dir: str  # storage path of the directory to write bucket_N in
    size: int
    kind: str = MAJOR


@dataclass(frozen=True)
class BucketOutput:
    """What one group wrote: the file (None when no event was left), its events, and
    :data:`OK`, or why nothing was kept (:data:`MIXED`)."""

    path: str | None
    rows: int
    status: str


@dataclass(frozen=True)
class MergeResult:
    dirs: set[str]  # relative paths of the directories written
    rows: int
    task_cpu_ms: int = 0  # CPU of the Python tasks (Spark's executor CPU metric leaves it out)
    peak_memory_bytes: int = 0  # the process's peak resident memory (in-process runs only)


def eligible(data_schema: Schema) -> bool:
    """Whether every data column has a type this path hands to and from Spark's tasks as
    tested (not timestamps: Spark's tasks leave them to Spark)."""
    return unsafe_type(data_schema, timestamps=False) is None


def unsafe_type(data_schema: Schema, *, timestamps: bool = True) -> str | None:
    """The first data column whose type this path cannot write as Spark does, as a phrase
    (``"column ts has type timestamp_ntz"``); None when every type is safe. ``timestamps``:
    whether ``timestamp`` columns are safe (every time Spark stores is read and written,
    :mod:`lakectl.arrow.orc_io`)."""
    for c in data_schema.columns:
        kind = c.type.strip().lower()
        if not (_SAFE_TYPE.match(kind) or (timestamps and kind == "timestamp")):
            return f"column {c.name} has type {c.type}"
    return None


def _by_bucket(dirs: Sequence[Any]) -> dict[int, tuple[list[str], list[str], list[int]]] | None:
    """Files of ``dirs`` (directory listings) by bucket: (base files, delta files, [bytes]);
    None when a file is not named ``bucket_N``."""
    out: dict[int, tuple[list[str], list[str], list[int]]] = {}
    for d in dirs:
        for f in d.files:
            bucket = parse_bucket_file(f.name)
            if bucket is None:
                return None
            base, delta, size = out.setdefault(bucket, ([], [], [0]))
            (base if d.acid.is_base else delta).append(f.path)
            size[0] += f.size
    return out


def _out_dir(storage: Storage, root: str, partition: str, name: str) -> str:
    rel = f"{partition}/{name}" if partition else name
    return table_path(storage, root, rel, Shape.DATA_DIR, source="the compaction plan")


def bucket_groups(
    storage: Storage, root: str, plans: Sequence[PartitionReadPlan], out_dirs: Mapping[str, str]
) -> list[BucketGroup] | None:
    """The (partition, bucket) groups of a major compaction of ``plans``; ``None`` if a file is
    not named ``bucket_N``. ``out_dirs`` maps a partition to the directory name to create in
    it."""
    groups: list[BucketGroup] = []
    for plan in plans:
        deletes = tuple(f.path for d in plan.delete_deltas for f in d.files)
        by_bucket = _by_bucket(plan.data_dirs)
        if by_bucket is None:
            return None
        out_dir = _out_dir(storage, root, plan.relative, out_dirs[plan.relative])
        for bucket, (base, delta, size) in sorted(by_bucket.items()):
            groups.append(
                BucketGroup(
                    plan.relative, bucket, tuple(base), tuple(delta), deletes, out_dir, size[0]
                )
            )
    return groups


def minor_groups(
    storage: Storage,
    root: str,
    plans: Sequence[PartitionReadPlan],
    delta_dirs: Mapping[str, str],
    delete_dirs: Mapping[str, str],
) -> list[BucketGroup] | None:
    """The (partition, bucket) groups of a minor compaction: the deltas' buckets into the
    partition's ``delta_dirs`` name, the delete deltas' into its ``delete_dirs`` name. ``None``
    if a file is not named ``bucket_N``."""
    groups: list[BucketGroup] = []
    for plan in plans:
        for kind, dirs, names in (
            (INSERTS, plan.deltas, delta_dirs),
            (DELETES, plan.delete_deltas, delete_dirs),
        ):
            by_bucket = _by_bucket(dirs)
            if by_bucket is None:
                return None
            if not by_bucket:
                continue
            out_dir = _out_dir(storage, root, plan.relative, names[plan.relative])
            for bucket, (_, files, size) in sorted(by_bucket.items()):
                groups.append(
                    BucketGroup(plan.relative, bucket, (), tuple(files), (), out_dir, size[0], kind)
                )
    return groups


class BucketCompactor:
    """Writes :class:`BucketGroup` files (picklable: storage and plain values only, so that
    Spark tasks can carry it)."""

    def __init__(
        self,
        storage: Storage,
        data_schema: Schema,
        valid: ValidWriteIds,
        *,
        key: str | None,
        compression: str,
    ) -> None:
        """``key``: the key column that must be set in a live row (None: the row must be);
        ``compression``: pyarrow's ORC codec name."""
        self.storage = storage
        self.data_schema = data_schema  # its defaults fill columns older files lack
        self.valid = valid
        self.key = key
        self.compression = compression
        self._deletes: tuple[tuple[str, ...], DeleteSet] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_deletes": None}

    @property
    def target(self) -> pa.Schema:
        """The schema of the files written: the event columns and today's ``row``."""
        return event_schema(self.data_schema)

    def compact(self, group: BucketGroup) -> BucketOutput:
        """Write ``group``'s file; nothing is left behind unless the status is :data:`OK` and
        some event was written."""
        out = self.storage.join(group.out_dir, bucket_file_name(group.bucket))
        try:
            rows, status = self._write(group, self._events(group), out, sort=group.kind == DELETES)
            if status == UNORDERED:
                rows, status = self._write(group, self._events(group), out, sort=True)
        except BaseException:
            self.storage.delete(out)
            raise
        if status != OK or rows == 0:
            self.storage.delete(out)
            return BucketOutput(None, 0, status)
        return BucketOutput(out, rows, status)

    def compact_partition(self, groups: Sequence[BucketGroup]) -> list[BucketOutput]:
        """Write the events of ``groups`` (one partition's groups of one kind) into the bucket
        files their own bucket fields name: for inputs whose files hold events of other
        buckets. The partition's events are held in memory."""
        import numpy as np
        import pyarrow as pa

        target = self.target
        whole = pa.Table.from_batches([b for g in groups for b in self._events(g)], schema=target)
        if not whole.num_rows:
            return []
        raw = np.asarray(whole.column("bucket").to_numpy())
        buckets = np.where(raw & (1 << 29), (raw >> 16) & 0xFFF, raw)
        outputs = []
        for bucket in sorted({int(b) for b in np.unique(buckets)}):
            group = replace(groups[0], bucket=bucket)
            part = whole.filter(pa.array(buckets == bucket))
            out = self.storage.join(group.out_dir, bucket_file_name(bucket))
            try:
                rows, _ = self._write(group, iter(part.to_batches()), out, sort=True)
            except BaseException:
                self.storage.delete(out)
                raise
            outputs.append(BucketOutput(out if rows else None, rows, OK))
        return outputs

    def events(self, group: BucketGroup) -> Iterator[pa.RecordBatch]:
        """The events ``group`` keeps (a major group's: its live events), in file order, as
        :attr:`target` batches: for a writer that places them itself (list bucketing)."""
        return self._events(group)

    # --- one bucket ---------------------------------------------------------------------------

    def _events(self, group: BucketGroup) -> Iterator[pa.RecordBatch]:
        """The events ``group`` keeps, in file order."""
        if group.kind == DELETES:
            return self._deletes_of(group)
        if group.kind == INSERTS:
            return self._kept(group, None)
        return self._kept(group, self._delete_set(group.delete_files))

    def _kept(self, group: BucketGroup, deletes: DeleteSet | None) -> Iterator[pa.RecordBatch]:
        """The bucket's insert events (live rows when ``deletes`` is given: see
        :func:`~lakectl.kernel.live_rows.live_rows`)."""
        import pyarrow.compute as pc

        target = self.target
        key_index = self._key_index(target)
        files = [(p, False) for p in group.base_files] + [(p, True) for p in group.delta_files]
        for path, is_delta in files:
            for batch in self._read(path, target):
                row = batch.column("row")
                present = row.is_valid()
                if key_index is not None:
                    key = pc.struct_field(row, [key_index])
                    present = pc.and_(present, key.is_valid())
                valid = self.valid if is_delta else None
                if deletes is None:
                    keep: Any = insert_events(_events(batch), present, valid)
                    if keep.true_count == len(keep):
                        keep = None
                else:
                    keep = live_rows(_events(batch), present, valid, deletes)
                yield batch if keep is None else batch.filter(keep)

    def _deletes_of(self, group: BucketGroup) -> Iterator[pa.RecordBatch]:
        """The valid delete events of the bucket's delete delta files."""
        target = self.target
        for path in group.delta_files:
            for batch in self._read(path, target):
                keep = delete_events(_events(batch), batch.column("row").is_valid(), self.valid)
                yield batch.filter(keep)

    def _delete_set(self, files: tuple[str, ...]) -> DeleteSet:
        """The identities the partition's valid delete events name (the last partition's set is
        kept: groups come partition by partition)."""
        if self._deletes is not None and self._deletes[0] == files:
            return self._deletes[1]
        target = self.target
        events = (
            (_events(batch), batch.column("row").is_valid())
            for path in files
            for batch in self._read(path, target)
        )
        found = DeleteSet.of_events(events, self.valid)
        self._deletes = (files, found)
        return found

    def _write(
        self,
        group: BucketGroup,
        events: Iterator[pa.RecordBatch],
        out: str,
        *,
        sort: bool,
    ) -> tuple[int, str]:
        import numpy as np
        import pyarrow as pa

        target = self.target
        keys_order = (*IDENTITY, "currentTransaction") if group.kind == DELETES else IDENTITY
        if sort:
            whole = pa.Table.from_batches(list(events), schema=target)
            events = iter(whole.sort_by([(k, "ascending") for k in keys_order]).to_batches())
        rows = 0
        last: tuple[int, int, int] | None = None
        writer: OrcFileWriter | None = None
        try:
            for batch in events:
                if not batch.num_rows:
                    continue
                buckets = {decode_bucket(b) for b in batch.column("bucket").unique().to_pylist()}
                if buckets != {group.bucket}:
                    return 0, MIXED
                keys = [batch.column(k).to_numpy() for k in IDENTITY]
                first = (int(keys[0][0]), int(keys[1][0]), int(keys[2][0]))
                if not sort and ((last is not None and first < last) or not _ordered(np, keys)):
                    return 0, UNORDERED
                last = (int(keys[0][-1]), int(keys[1][-1]), int(keys[2][-1]))
                if writer is None:
                    self.storage.makedirs(group.out_dir)
                    bloom = self.key if group.kind != DELETES else None
                    writer = OrcFileWriter(
                        self.storage,
                        out,
                        compression=self.compression,
                        bloom_filter_columns=bloom_filter_ids(target, bloom),
                        dictionary_key_size_threshold=ORC_DICTIONARY_THRESHOLD,
                    )
                writer.write(batch)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        return rows, OK

    def _key_index(self, target: pa.Schema) -> int | None:
        if self.key is None:
            return None
        row_type = target.field("row").type
        names = [row_type.field(i).name.lower() for i in range(row_type.num_fields)]
        return names.index(str(self.key).lower())

    def _read(self, path: str, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        import pyarrow.orc as orc

        with orc_source(self.storage, path) as source:
            reader = orc.ORCFile(source)
            for stripe in range(reader.nstripes):
                yield conform_batch(read_stripe(reader, source, stripe), target, [])


def compact_groups(
    compactor: BucketCompactor, root: str, groups: Sequence[BucketGroup]
) -> MergeResult:
    """Write every group in this process, one bucket at a time (the Arrow engine); a partition
    whose files hold events of other buckets is rewritten whole by
    :meth:`BucketCompactor.compact_partition`. Each file written gets Hive's ``hive.acid.*``
    metadata."""
    started = time.process_time()
    outputs: list[BucketOutput] = []
    mixed: dict[tuple[str, str], list[BucketGroup]] = {}
    for group in groups:
        done = compactor.compact(group)
        if done.status == MIXED:
            mixed.setdefault((group.partition, group.kind), [])
        outputs.append(done)
    if mixed:
        for group in groups:
            if (group.partition, group.kind) in mixed:
                mixed[(group.partition, group.kind)].append(group)
        redo = {g.out_dir for gs in mixed.values() for g in gs}
        for done in outputs:  # the partition's files are written again, whole
            if done.path and done.path.rsplit("/", 1)[0] in redo:
                compactor.storage.delete(done.path)
        outputs = [o for o in outputs if not o.path or o.path.rsplit("/", 1)[0] not in redo]
        for same in mixed.values():
            outputs += compactor.compact_partition(same)
    return finish(
        compactor.storage,
        root,
        outputs,
        task_cpu_ms=round((time.process_time() - started) * 1000),
        peak_memory_bytes=peak_memory_bytes(),
    )


def finish(
    storage: Storage, root: str, outputs: Sequence[BucketOutput], **extra: int
) -> MergeResult:
    """Give every written file Hive's ``hive.acid.*`` metadata; the directories written and the
    events they hold."""
    dirs = set()
    for done in outputs:
        if done.path:
            add_acid_metadata(storage, done.path)
            dirs.add(done.path[len(root) + 1 :].rsplit("/", 1)[0])
    return MergeResult(dirs, sum(o.rows for o in outputs), **extra)


def peak_memory_bytes() -> int:
    """This process's peak resident memory so far; 0 where the platform does not say.

    On Linux, the high-water mark of the process's own memory (``VmHWM``): the rusage figure
    there also counts the memory of the process that started this one, when it was larger.
    Elsewhere the rusage figure (macOS reports bytes, other systems kilobytes)."""
    import sys

    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # not a Unix
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


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


__all__ = [
    "DELETES",
    "INSERTS",
    "MAJOR",
    "BucketCompactor",
    "BucketGroup",
    "BucketOutput",
    "MergeResult",
    "bucket_groups",
    "compact_groups",
    "eligible",
    "finish",
    "minor_groups",
    "peak_memory_bytes",
    "unsafe_type",
]
