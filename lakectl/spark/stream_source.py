"""Spark Structured Streaming over a landing directory: which files arrived, batch by batch.

The query reads the directory with Spark's file source as ``binaryFile`` without the content
column (so no file is read) and hands each micro-batch's file names and modification times to a
Python callback through ``foreachBatch``. The rows themselves are read by the callback with
``load``'s own readers (same parsing, same errors per file), so the streaming source only tracks
and triggers: its checkpoint (under the table's ``_lakectl/streams/``) saves relisting work, while
exactly-once comes from the lakectl log (see :mod:`lakectl.planning.stream_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# (file URL as Spark reports it, modification time in epoch ms), in no particular order.
ArrivedFiles = list[tuple[str, int]]
BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length bigint, content binary"


def start_file_stream(
    spark: SparkSession,
    source_url: str,
    checkpoint_url: str,
    trigger_seconds: float,
    max_files_per_trigger: int,
    on_batch: Callable[[ArrivedFiles, int], None],
) -> Any:
    """Start the streaming query; ``on_batch(files, batch_id)`` runs once per micro-batch.

    Returns the running ``StreamingQuery``. When ``on_batch`` raises, the query stops with that
    error and Spark does not mark the batch done, so a restart hands over the same files again.
    """
    from pyspark.sql import functions as F

    # binaryFile gives one row per file and reads no content unless `content` is selected.
    files = (
        spark.readStream.format("binaryFile")
        .schema(BINARY_FILE_SCHEMA)
        .option("maxFilesPerTrigger", max(1, max_files_per_trigger))
        .load(source_url)
        .select(F.col("path"), F.col("modificationTime"))
    )

    def batch(frame: Any, batch_id: int) -> None:
        rows = frame.collect()
        arrived = [(str(r["path"]), int(r["modificationTime"].timestamp() * 1000)) for r in rows]
        on_batch(arrived, batch_id)

    millis = max(100, int(trigger_seconds * 1000))
    return (
        files.writeStream.foreachBatch(batch)
        .option("checkpointLocation", checkpoint_url)
        .trigger(processingTime=f"{millis} milliseconds")
        .start()
    )


def read_csv_with_header(spark: SparkSession, url: str, header: list[str]) -> Any:
    """One landing CSV file read as ``load`` reads CSV (header line, FAILFAST, RFC 4180 quotes,
    every column a string), given its header, parsed by the caller: Spark then starts no job to
    read the header, which for a stream's small files is a good part of a micro-batch."""
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(name, StringType()) for name in header])
    reader = spark.read.schema(schema).option("header", "true").option("mode", "FAILFAST")
    return reader.option("escape", '"').option("enforceSchema", "true").csv(url)
