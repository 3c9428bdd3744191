"""Hive original files (plain ORC, from tables converted to full ACID) as ACID events.

Hive 3 gives their rows synthetic row ids: write id 0, the bucket from the file name, and a
rowId counted across a bucket's files in order (``_copy_N`` after the base file). The partition
reader (:mod:`lakectl.arrow.partition_reader`, in process and in Spark's tasks) reads them so.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakectl.arrow.orc_io import read_file, read_stripe
from lakectl.errors import FormatError
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import encode_bucket, parse_original_file
from lakectl.table.listing import FileEntry
from lakectl.table.orc_files import reading_orc
from lakectl.table.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa

OriginalFile = tuple[PartitionReadPlan, FileEntry]


def original_events(
    storage: Storage,
    data_schema: Schema,
    partition_names: Sequence[str],
    originals: Sequence[OriginalFile],
) -> pa.Table | None:
    """The rows of ``originals`` with their synthetic identity: columns originalTransaction,
    bucket (encoded), rowId, currentTransaction, the data columns (as the files type them),
    then the partition columns as strings (None for none). None when there is no file."""
    import pyarrow as pa
    import pyarrow.orc as orc

    by_bucket = _by_bucket(storage, originals)
    tables = []
    for (_, bucket), entries in by_bucket:
        offset = 0
        for plan, entry in entries:
            with reading_orc(storage, entry.path), storage.fs.open(entry.path, "rb") as handle:
                table = read_file(orc.ORCFile(handle), handle)
            names = {n.lower(): n for n in table.column_names}
            arrays = {}
            for col in data_schema.names:
                src = names.get(col.lower())
                if src is None:
                    raise FormatError(f"original file {entry.name} has no column {col!r}")
                arrays[col] = table.column(src)
            n = table.num_rows
            tables.append(
                pa.table(
                    {
                        "originalTransaction": pa.array([0] * n, pa.int64()),
                        "bucket": pa.array([encode_bucket(bucket)] * n, pa.int32()),
                        "rowId": pa.array(range(offset, offset + n), pa.int64()),
                        "currentTransaction": pa.array([0] * n, pa.int64()),
                        **arrays,
                        **{
                            c: pa.array([v] * n, pa.string())
                            for c, v in zip(partition_names, plan.values, strict=True)
                        },
                    }
                )
            )
            offset += n
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="default")


def _by_bucket(
    storage: Storage, originals: Sequence[OriginalFile]
) -> list[tuple[tuple[str, int], list[OriginalFile]]]:
    """``originals`` by (partition, bucket), each bucket's files in row-id order (the base
    file, then ``_copy_1``, ``_copy_2``, ...)."""
    by_bucket: dict[tuple[str, int], list[tuple[int, OriginalFile]]] = {}
    for plan, entry in originals:
        parsed = parse_original_file(entry.name)
        if parsed is None:
            raise FormatError(
                f"{storage.url(entry.path)}: not an ACID directory and not a Hive original "
                "file name (NNNNNN_N[_copy_N])"
            )
        bucket, copy = parsed
        by_bucket.setdefault((plan.relative, bucket), []).append((copy, (plan, entry)))
    return [
        (key, [f for _, f in sorted(entries, key=lambda e: e[0])])
        for key, entries in sorted(by_bucket.items())
    ]


def original_stripes(
    storage: Storage, plan: PartitionReadPlan, names: Sequence[str]
) -> Iterator[tuple[int, int, int, list[pa.Array]]]:
    """The stripes of the partition's original files in row-id order: (encoded bucket, the
    first row's synthetic rowId, rows, its columns ``names``, matched case-insensitively)."""
    import pyarrow.orc as orc

    for (_, bucket), entries in _by_bucket(storage, [(plan, f) for f in plan.originals]):
        offset = 0
        for _, entry in entries:
            with reading_orc(storage, entry.path), storage.fs.open(entry.path, "rb") as handle:
                reader = orc.ORCFile(handle)
                found = {n.lower(): n for n in reader.schema.names}
                missing = [c for c in names if c.lower() not in found]
                if missing:
                    raise FormatError(f"original file {entry.name} has no column {missing[0]!r}")
                columns = [found[c.lower()] for c in names]
                for stripe in range(reader.nstripes):
                    wanted = columns or reader.schema.names[:1]
                    batch = read_stripe(reader, handle, stripe, wanted)
                    arrays = [batch.column(c) for c in columns]
                    yield encode_bucket(bucket), offset, batch.num_rows, arrays
                    offset += batch.num_rows


__all__ = ["OriginalFile", "original_events", "original_stripes"]
