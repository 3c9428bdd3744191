"""Writing ACID event files with Spark's native ORC writer, then moving them into place.

Spark writes to a staging directory partitioned by the table's partition columns and a bucket
column; each output file then becomes ``<partition>/delta_N_N_0000/bucket_0000K`` (or
``delete_delta_...``), next to an ``_orc_acid_version`` file. Nothing is visible until the
transaction commits in the log.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lakectl.storage.fs import Storage
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    OP_DELETE,
    OP_INSERT,
    bucket_file_name,
)
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_BUCKET_COL = "__lakectl_bucket"
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


def _writer(df: DataFrame, target: WriteTarget, sort_cols: list[str], bloom: bool):
    part_cols = list(target.metadata.partition_by)
    ordered = df.sortWithinPartitions(
        *[F.col(f"`{c}`") for c in part_cols], _BUCKET_COL, *sort_cols
    )
    writer = ordered.write.mode("overwrite").option(
        "compression", target.metadata.property("orc.compress").lower() or "snappy"
    )
    if bloom and target.metadata.primary_key:
        keys = [f"row.{k}" for k in target.metadata.primary_key if k not in part_cols]
        if keys:
            writer = writer.option("orc.bloom.filter.columns", ",".join(keys))
    return writer.partitionBy(*part_cols, _BUCKET_COL)


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
    _writer(events, target, ["rowId"], bloom=True).orc(target.storage.url(staging))
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
    _writer(events, target, ["originalTransaction", "bucket", "rowId"], bloom=False).orc(
        target.storage.url(staging)
    )
    return _move_into_place(target, staging, dir_name)


def _move_into_place(target: WriteTarget, staging: str, dir_name: str) -> list[str]:
    storage = target.storage
    depth = len(target.metadata.partition_by)
    created: dict[str, str] = {}
    for path in _files_under(storage, staging):
        relative = path[len(staging) + 1 :]
        parts = relative.split("/")
        if len(parts) != depth + 2 or not parts[-1].startswith("part-"):
            continue
        partition = "/".join(parts[:depth])
        bucket_id = int(parts[depth].split("=", 1)[1])
        rel_dir = f"{partition}/{dir_name}" if partition else dir_name
        final_dir = storage.join(target.root, rel_dir)
        storage.move(path, storage.join(final_dir, bucket_file_name(bucket_id)))
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
