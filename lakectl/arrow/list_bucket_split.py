"""``list-bucket`` in the Arrow engine: a partition's live events rewritten into a new base split
into one directory per skewed value, in this process, without a JVM.

The same output as Spark's split write (:func:`lakectl.spark.acid_write.write_compacted` with
:func:`lakectl.spark.list_bucket.split_events`): every live event (its operation, identity and
write id kept; :mod:`lakectl.kernel.live_rows` decides which are live, read by
:class:`~lakectl.arrow.bucket_compaction.BucketCompactor`) goes to
``<base>/<directory of its values>/bucket_N``, N its own bucket field, each file ordered by
(originalTransaction, bucket, rowId); a value tuple that is not skewed (or has a NULL) goes to
the default directory, and a partition without a mapping (``--off``) gets its files directly in
the base. A value's text is Spark's ``CAST(v AS STRING)`` (list bucketing allows only types whose
text is one: integers, string, date, boolean). One partition is held in memory at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lakectl.arrow.acid_writer import write_event_file
from lakectl.arrow.bucket_compaction import BucketCompactor, BucketGroup, BucketOutput
from lakectl.kernel.live_rows import IDENTITY
from lakectl.planning.list_bucket_plan import DEFAULT_SUBDIR, NO_SUBDIR, ListBucketing
from lakectl.table.layout import bucket_file_name
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import add_acid_metadata

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def subdir_numbers(rows: pa.StructArray, layout: ListBucketing) -> np.ndarray:
    """Each row's directory number: the index of its value tuple in ``layout.values``, or
    :data:`DEFAULT_SUBDIR` (a tuple not listed, or one with a NULL)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [rows.type.field(i).name.lower() for i in range(rows.type.num_fields)]
    texts = [
        pc.cast(pc.struct_field(rows, [names.index(c.lower())]), pa.string()).to_pylist()
        for c in layout.columns
    ]
    index = {values: n for n, values in enumerate(layout.values)}
    return np.fromiter(
        (index.get(values, DEFAULT_SUBDIR) for values in zip(*texts, strict=True)),
        dtype=np.int32,
        count=len(rows),
    )


def write_split_partition(
    compactor: BucketCompactor,
    meta: TableMetadata,
    groups: Sequence[BucketGroup],
    layout: ListBucketing | None,
) -> list[BucketOutput]:
    """Write the live events of one partition's ``groups`` (its major compaction's buckets) into
    their base (``groups[0].out_dir``), split by ``layout`` (None: not split). Each file gets
    Hive's ``hive.acid.*`` metadata; returns the files written."""
    import numpy as np
    import pyarrow as pa

    if not groups:
        return []
    storage, base = compactor.storage, groups[0].out_dir
    events = pa.Table.from_batches(
        [b for g in groups for b in compactor.events(g)], schema=compactor.target
    )
    if not events.num_rows:
        return []
    raw = np.asarray(events.column("bucket").to_numpy())
    buckets = np.where(raw & (1 << 29), (raw >> 16) & 0xFFF, raw)
    if layout is None:
        numbers = np.full(events.num_rows, NO_SUBDIR, dtype=np.int32)
        names = {NO_SUBDIR: ""}
    else:
        row = events.column("row").combine_chunks()
        numbers = subdir_numbers(row, layout)
        names = layout.subdir_names()
    outputs = []
    for number in sorted({int(n) for n in np.unique(numbers)}):
        directory = storage.join(base, names[number]) if names[number] else base
        in_dir = numbers == number
        for bucket in sorted({int(b) for b in np.unique(buckets[in_dir])}):
            part = events.filter(pa.array(in_dir & (buckets == bucket)))
            part = part.sort_by([(k, "ascending") for k in IDENTITY])
            storage.makedirs(directory)
            path = storage.join(directory, bucket_file_name(bucket))
            try:
                rows = write_event_file(storage, path, part, meta)
            except BaseException:
                storage.delete(path)
                raise
            add_acid_metadata(storage, path)
            outputs.append(BucketOutput(path, rows, "ok"))
    return outputs


def split_partitions(
    compactor: BucketCompactor,
    meta: TableMetadata,
    groups: Sequence[BucketGroup],
    layouts: Mapping[str, ListBucketing],
) -> tuple[set[str], int]:
    """Every partition of ``groups`` written by :func:`write_split_partition`, one after the
    other, with its mapping in ``layouts`` (none: not split). Returns the bases written (their
    storage paths; a partition left without a live row gets none) and the events written."""
    by_partition: dict[str, list[BucketGroup]] = {}
    for group in groups:
        by_partition.setdefault(group.partition, []).append(group)
    bases: set[str] = set()
    rows = 0
    for partition, mine in by_partition.items():
        written = write_split_partition(compactor, meta, mine, layouts.get(partition))
        if written:
            bases.add(mine[0].out_dir)
            rows += sum(done.rows for done in written)
    return bases, rows


__all__ = ["split_partitions", "subdir_numbers", "write_split_partition"]
