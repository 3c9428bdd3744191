"""Writing ACID event files with Spark's native ORC writer, then moving them into place.

Spark writes to a staging directory partitioned by the table's partition columns and a bucket
column; each output file then becomes ``<partition>/delta_N_N_0000/bucket_0000K`` (or
``delete_delta_...``), next to an ``_orc_acid_version`` file. Nothing is visible until the
transaction commits in the log.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lakectl.spark.fsspec_orc import hadoop_url, write_events
from lakectl.storage.fs import Storage
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    OP_DELETE,
    OP_INSERT,
    bucket_file_name,
)
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import add_acid_metadata

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


def _encode_bucket(bucket_id: Column) -> Column:
    return (F.lit(_CODEC_V1) + F.shiftleft(bucket_id.cast("int"), 16)).cast("int")


def _write_events(
    df: DataFrame,
    target: WriteTarget,
    staging: str,
    sort_cols: list[str],
    bloom: bool,
    subdirs: bool = False,
) -> None:
    """Write ``df`` to ``staging`` partitioned by partition columns (and subdir) and bucket."""
    part_cols = list(target.metadata.partition_by) + ([SUBDIR_COL] if subdirs else [])
    ordered = df.sortWithinPartitions(
        *[F.col(f"`{c}`") for c in part_cols], _BUCKET_COL, *sort_cols
    )
    compression = target.metadata.property("orc.compress").lower() or "snappy"
    url = hadoop_url(df.sparkSession, target.storage, staging)
    if url is None:  # no Hadoop filesystem for the scheme (s3:// without hadoop-aws)
        write_events(ordered, target.storage, staging, [*part_cols, _BUCKET_COL], compression)
        return
    writer = ordered.write.mode("overwrite").option("compression", compression)
    if bloom and target.metadata.primary_key:
        # ORC resolves these names inside the `row` struct of an ACID schema (OrcUtils.
        # includeColumns), so the plain key name is right; `row.id` would match nothing.
        keys = [k for k in target.metadata.primary_key if k not in part_cols]
        if keys:
            writer = writer.option("orc.bloom.filter.columns", ",".join(keys))
    writer.partitionBy(*part_cols, _BUCKET_COL).orc(url)


def write_inserts(
    rows: DataFrame, target: WriteTarget, write_id: int, num_tasks: int, *, dir_name: str
) -> list[str]:
    """Write insert events for ``rows`` (the table's columns) into ``dir_name`` directories.

    Returns the relative paths of the directories created. Each (partition, bucket) is written by
    one task, so identities (write id, bucket, rowId) are unique.
    """
    meta = target.metadata
    part_cols = list(meta.partition_by)
    if meta.buckets:
        key_cols = [F.col(f"`{k}`") for k in meta.primary_key] or [
            F.col(f"`{meta.data_schema.names[0]}`")
        ]
        bucket_expr = F.pmod(F.hash(*key_cols), F.lit(meta.buckets))
        staged = rows.withColumn(_BUCKET_COL, bucket_expr).repartition(
            num_tasks, *[F.col(f"`{c}`") for c in part_cols], F.col(_BUCKET_COL)
        )
    else:
        staged = (
            rows.repartition(num_tasks, *[F.col(f"`{c}`") for c in part_cols])
            if part_cols
            else rows.repartition(num_tasks)
        )
        staged = staged.withColumn(_BUCKET_COL, F.spark_partition_id())
    row_struct = F.struct(*[F.col(f"`{c}`") for c in meta.data_schema.names])
    events = staged.select(
        F.lit(OP_INSERT).alias("operation"),
        F.lit(write_id).cast("bigint").alias("originalTransaction"),
        _encode_bucket(F.col(_BUCKET_COL)).alias("bucket"),
        (
            F.monotonically_increasing_id() - F.shiftleft(F.spark_partition_id().cast("bigint"), 33)
        ).alias("rowId"),
        F.lit(write_id).cast("bigint").alias("currentTransaction"),
        row_struct.alias("row"),
        *[F.col(f"`{c}`") for c in part_cols],
        F.col(_BUCKET_COL),
    )
    staging = posixpath.join(target.staging, dir_name)
    _write_events(events, target, staging, ["rowId"], bloom=True)
    return _move_into_place(target, staging, dir_name)


def write_deletes(
    identities: DataFrame, target: WriteTarget, write_id: int, num_tasks: int, *, dir_name: str
) -> list[str]:
    """Write delete events for rows given by partition columns + (originalTransaction, bucket,
    rowId); each event goes to the bucket file of the row it deletes, as Hive's readers expect."""
    meta = target.metadata
    part_cols = list(meta.partition_by)
    row_type = "struct<" + ",".join(f"`{c.name}`:{c.type}" for c in meta.data_schema.columns) + ">"
    bucket_id = F.shiftright(F.col("bucket"), 16).bitwiseAND(F.lit(0xFFF))
    staged = identities.withColumn(_BUCKET_COL, bucket_id).repartition(
        num_tasks, *[F.col(f"`{c}`") for c in part_cols], F.col(_BUCKET_COL)
    )
    events = staged.select(
        F.lit(OP_DELETE).alias("operation"),
        F.col("originalTransaction").cast("bigint"),
        F.col("bucket").cast("int"),
        F.col("rowId").cast("bigint"),
        F.lit(write_id).cast("bigint").alias("currentTransaction"),
        F.lit(None).cast(row_type).alias("row"),
        *[F.col(f"`{c}`") for c in part_cols],
        F.col(_BUCKET_COL),
    )
    staging = posixpath.join(target.staging, dir_name)
    _write_events(events, target, staging, ["originalTransaction", "bucket", "rowId"], bloom=False)
    return _move_into_place(target, staging, dir_name)


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
    raw = F.col("bucket")
    bucket_id = F.when(
        raw.bitwiseAND(F.lit(_CODEC_V1)) != 0, F.shiftright(raw, 16).bitwiseAND(F.lit(0xFFF))
    ).otherwise(raw)
    staged = events.withColumn(_BUCKET_COL, bucket_id).repartition(
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
    _write_events(
        ordered, target, staging, sort_cols, bloom=bloom, subdirs=subdir_names is not None
    )
    return _move_into_place(
        target, staging, dir_for=lambda partition: dir_names[partition], subdirs=subdir_names
    )


def _move_into_place(
    target: WriteTarget,
    staging: str,
    dir_name: str = "",
    *,
    dir_for: Callable[[str], str] | None = None,
    subdirs: Mapping[tuple[str, int], str] | None = None,
) -> list[str]:
    storage = target.storage
    depth = len(target.metadata.partition_by)
    extra = 1 if subdirs is not None else 0
    created: dict[str, str] = {}
    for path in _files_under(storage, staging):
        relative = path[len(staging) + 1 :]
        parts = relative.split("/")
        if len(parts) != depth + 2 + extra or not parts[-1].startswith("part-"):
            continue
        partition = "/".join(parts[:depth])
        bucket_id = int(parts[depth + extra].split("=", 1)[1])
        name = dir_for(partition) if dir_for is not None else dir_name
        rel_dir = f"{partition}/{name}" if partition else name
        final_dir = storage.join(target.root, rel_dir)
        subdir = subdirs[(partition, int(parts[depth].split("=", 1)[1]))] if subdirs else ""
        file_dir = storage.join(final_dir, subdir) if subdir else final_dir
        final = storage.join(file_dir, bucket_file_name(bucket_id))
        storage.move(path, final)
        add_acid_metadata(storage, final)
        created[rel_dir] = final_dir
    for final_dir in created.values():
        storage.write_bytes(storage.join(final_dir, ACID_VERSION_FILE), ACID_VERSION.encode())
    storage.delete(staging, recursive=True)
    storage.delete(target.staging, recursive=True) if not storage.list_names(
        target.staging
    ) else None
    return sorted(created)


def _files_under(storage: Storage, path: str) -> list[str]:
    out: list[str] = []
    for entry in storage.list_entries(path):
        if entry["type"] == "directory":
            out.extend(_files_under(storage, entry["path"]))
        else:
            out.append(entry["path"])
    return out
