"""Writing ACID event files with Spark's native ORC writer, then moving them into place.

Spark writes to a staging directory partitioned by the table's partition columns, the event kind
and a bucket column; each output file then becomes ``<partition>/delta_N_N_0000/bucket_0000K``
(or ``delete_delta_...``), next to an ``_orc_acid_version`` file. A transaction's new rows and
delete events are written by one Spark job. Nothing is visible until the
transaction commits in the log.

It writes the compactions Spark finishes (:func:`write_compacted`); a transaction's change
events are written by the Arrow engine's event writer in Spark's tasks
(:mod:`lakectl.spark.event_write`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lakectl.arrow.acid_writer import ORC_COMPRESSION_BLOCK
from lakectl.failpoints import failpoint
from lakectl.spark.fsspec_orc import hadoop_url, write_events
from lakectl.storage.fs import Storage
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    bucket_file_name,
)
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import add_acid_metadata
from lakectl.table.orc_tail import parse_acid_stats
from lakectl.table.paths import Shape, check_name, table_path

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_BUCKET_COL = "__lakectl_bucket"
# A compactor output split into list-bucketing directories carries each event's directory number.
SUBDIR_COL = "__lakectl_subdir"
_CODEC_V1 = 1 << 29


@dataclass(frozen=True)
class WriteTarget:
    """Where a transaction's files go."""

    storage: Storage
    root: str
    staging: str
    metadata: TableMetadata


def _bucket_id(raw: Column) -> Column:
    """The bucket number of an event's ``bucket`` field: decoded from Hive's bucket codec, or
    the value itself in the older encoding without it."""
    decoded = F.shiftright(raw, 16).bitwiseAND(F.lit(0xFFF))
    return F.when(raw.bitwiseAND(F.lit(_CODEC_V1)) != 0, decoded).otherwise(raw)


def _write_events(
    df: DataFrame,
    target: WriteTarget,
    staging: str,
    sort_cols: list[str],
    bloom: bool,
    levels: Sequence[str] = (),
) -> None:
    """Write ``df`` to ``staging`` partitioned by the partition columns, then the ``levels``
    columns (event kind, list-bucketing directory), then the bucket column.

    Strings get ORC's default encoding, as Hive writes them: a dictionary where the distinct
    values are few enough (``orc.dictionary.key.threshold`` 0.8), else direct.
    """
    part_cols = [*target.metadata.partition_by, *levels]
    ordered = df.sortWithinPartitions(
        *[F.col(f"`{c}`") for c in part_cols], _BUCKET_COL, *sort_cols
    )
    compression = target.metadata.property("orc.compress").lower() or "snappy"
    url = hadoop_url(df.sparkSession, target.storage, staging)
    if url is None:  # no Hadoop filesystem for the scheme (s3:// without hadoop-aws)
        write_events(ordered, target.storage, staging, [*part_cols, _BUCKET_COL], compression)
        return
    # A static overwrite of the (new, private) staging directory: Spark's dynamic partition
    # overwrite would stage every file once more and rename each partition directory.
    writer = (
        ordered.write.mode("overwrite")
        .option("partitionOverwriteMode", "static")
        .option("compression", compression)
        .option("orc.compress.size", str(ORC_COMPRESSION_BLOCK))
    )
    if bloom and target.metadata.primary_key:
        # ORC resolves these names inside the `row` struct of an ACID schema (OrcUtils.
        # includeColumns), so the plain key name is right; `row.id` would match nothing.
        keys = [k for k in target.metadata.primary_key if k not in part_cols]
        if keys:
            writer = writer.option("orc.bloom.filter.columns", ",".join(keys))
    writer.partitionBy(*part_cols, _BUCKET_COL).orc(url)


def write_compacted(
    events: DataFrame,
    target: WriteTarget,
    num_tasks: int,
    dir_names: Mapping[str, str],
    *,
    bloom: bool,
    staging_name: str,
    subdir_names: Mapping[tuple[str, int], str] | None = None,
) -> list[str]:
    """Write ACID events that already have an identity (a compactor's output), keeping it.

    ``events`` has the six ACID columns plus the partition columns; operation,
    originalTransaction, bucket, rowId and currentTransaction are written unchanged, so delete
    events of concurrent writers still find the rows they point at. Each event goes to the bucket
    file of its bucket field, ordered by (originalTransaction, bucket, rowId). ``dir_names`` maps
    a partition's relative path (``""`` unpartitioned) to the directory to create in it.

    With ``subdir_names``, ``events`` also has an int column :data:`SUBDIR_COL` and each event
    goes to ``<dir>/<subdir_names[(partition, number)]>/bucket_N`` (list bucketing; ``""``: no
    subdirectory).
    """
    meta = target.metadata
    part_cols = list(meta.partition_by)
    staged = events.withColumn(_BUCKET_COL, _bucket_id(F.col("bucket"))).repartition(
        num_tasks, *[F.col(f"`{c}`") for c in part_cols], F.col(_BUCKET_COL)
    )
    ordered = staged.select(
        F.col("operation").cast("int"),
        F.col("originalTransaction").cast("bigint"),
        F.col("bucket").cast("int"),
        F.col("rowId").cast("bigint"),
        F.col("currentTransaction").cast("bigint"),
        F.col("row"),
        *[F.col(f"`{c}`") for c in part_cols],
        *([F.col(SUBDIR_COL)] if subdir_names is not None else []),
        F.col(_BUCKET_COL),
    )
    staging = posixpath.join(target.staging, staging_name)
    sort_cols = ["originalTransaction", "bucket", "rowId"]
    levels = [SUBDIR_COL] if subdir_names is not None else []
    _write_events(ordered, target, staging, sort_cols, bloom=bloom, levels=levels)

    def place(partition: str, values: Mapping[str, int]) -> tuple[str, str]:
        subdir = subdir_names[(partition, values[SUBDIR_COL])] if subdir_names else ""
        return dir_names[partition], subdir

    return sorted(_move_into_place(target, staging, levels, place))


def _move_into_place(
    target: WriteTarget,
    staging: str,
    levels: Sequence[str],
    place: Callable[[str, Mapping[str, int]], tuple[str, str]],
) -> dict[str, int]:
    """Move the files Spark wrote under ``staging`` to their bucket files in the table.

    Spark's layout is ``<partition dirs>/<level>=N/.../__lakectl_bucket=K/part-...``;
    ``place(partition, {level: N})`` names the ACID directory in the partition and a
    subdirectory of it (or ``""``). Each file gets Hive's ACID metadata and each directory an
    ``_orc_acid_version``. Returns each created ACID directory (relative to the table) with the
    number of events its files hold.
    """
    storage = target.storage
    depth = len(target.metadata.partition_by)
    created: dict[str, str] = {}
    events: dict[str, int] = {}
    for path in sorted(_files_under(storage, staging)):
        parts = path[len(staging) + 1 :].split("/")
        if len(parts) != depth + len(levels) + 2 or not parts[-1].startswith("part-"):
            continue
        partition = "/".join(parts[:depth])
        values = {name: int(parts[depth + i].split("=", 1)[1]) for i, name in enumerate(levels)}
        bucket_id = int(parts[-2].split("=", 1)[1])
        name, subdir = place(partition, values)
        rel_dir = f"{partition}/{name}" if partition else name
        final_dir = table_path(
            storage, target.root, rel_dir, Shape.DATA_DIR, source="the directories written"
        )
        if subdir:
            layout = "the list-bucketing layout in the log"
            subdir = check_name(subdir, Shape.LIST_BUCKETING, source=layout)
        file_dir = storage.join(final_dir, subdir) if subdir else final_dir
        final = storage.join(file_dir, bucket_file_name(bucket_id))
        storage.move(path, final)
        stats = add_acid_metadata(storage, final).get("hive.acid.stats")
        events[rel_dir] = events.get(rel_dir, 0) + (sum(parse_acid_stats(stats)) if stats else 0)
        created[rel_dir] = final_dir
        failpoint("write.after_first_move")
    for final_dir in created.values():
        storage.write_bytes(storage.join(final_dir, ACID_VERSION_FILE), ACID_VERSION.encode())
    storage.delete(staging, recursive=True)
    storage.delete(target.staging, recursive=True) if not storage.list_names(
        target.staging
    ) else None
    return events


def _files_under(storage: Storage, path: str) -> list[str]:
    out: list[str] = []
    for entry in storage.list_entries(path):
        if entry["type"] == "directory":
            out.extend(_files_under(storage, entry["path"]))
        else:
            out.append(entry["path"])
    return out
