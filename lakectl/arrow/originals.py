"""Hive original files (plain ORC, from tables converted to full ACID) as ACID events.

Hive 3 gives their rows synthetic row ids: write id 0, the bucket from the file name, and a
rowId counted across a bucket's files in order (``_copy_N`` after the base file). Both readers
use this: :mod:`lakectl.arrow.read` directly, :mod:`lakectl.spark.acid_read` through Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakectl.errors import FormatError
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import encode_bucket, parse_original_file
from lakectl.table.listing import FileEntry
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
    tables = []
    for (_, bucket), entries in sorted(by_bucket.items()):
        offset = 0
        for _, (plan, entry) in sorted(entries, key=lambda e: e[0]):
            with storage.fs.open(entry.path, "rb") as handle:
                table = orc.ORCFile(handle).read()
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


__all__ = ["OriginalFile", "original_events"]
