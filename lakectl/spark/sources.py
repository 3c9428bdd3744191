"""Reading a batch to load: CSV (with header), JSON lines, Parquet, ORC and Avro.

pyspark has no Avro reader (spark-avro is not bundled), so Avro files are decoded with fastavro
on the driver (through the source's fsspec filesystem) and handed to Spark as Arrow; that suits
dimension-sized Avro inputs. The other formats are read by Spark's own readers where its Hadoop
has a filesystem for the source's scheme, else through fsspec
(:mod:`lakectl.spark.fsspec_files`: ``s3://`` sources without hadoop-aws).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lakectl.errors import (
    LakectlError,
    SourceNotFoundError,
    UsageError,
)
from lakectl.storage.fs import storage_for
from lakectl.storage.source_files import FORMATS
from lakectl.table.batch_checks import empty_batch_error, parse_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".orc": "orc",
    ".avro": "avro",
}


def guess_format(source: str, storage_options: dict[str, Any] | None = None) -> str:
    """The format implied by a file extension (a directory's first file), or a usage error."""
    storage, path = storage_for(source, storage_options)
    candidates = [path]
    if storage.isdir(path):
        candidates = [
            e["name"] for e in storage.list_entries(path, links=True) if e["type"] == "file"
        ]
    for name in candidates:
        ext = os.path.splitext(name)[1].lower()
        if ext in _EXTENSIONS:
            return _EXTENSIONS[ext]
    raise UsageError(
        f"cannot tell the format of {source!r} from its name",
        hint="pass --format csv|json|parquet|orc|avro",
    )


def read_source(
    spark: SparkSession,
    source: str,
    fmt: str,
    infer: bool,
    storage_options: dict[str, Any] | None = None,
) -> DataFrame:
    """Read the batch. With ``infer`` False, CSV columns stay strings (cast later, checked).

    ``storage_options`` are the ``[storage]`` settings (as for tables) for a remote source.
    """
    from lakectl.spark.fsspec_orc import hadoop_url

    storage, path = storage_for(source, storage_options)
    if not storage.exists(path):
        raise SourceNotFoundError(f"source {source} does not exist")
    if fmt == "avro":
        return _read_avro(spark, storage, path)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    url = hadoop_url(spark, storage, path)
    try:
        # Schema inference (JSON always, CSV on a first load) parses the file right here.
        if url is None:
            from lakectl.spark.fsspec_files import read_files

            df = read_files(spark, storage, path, fmt, infer)
        else:
            df = _read_spark_source(spark, url, fmt, infer)
    except LakectlError:
        raise
    except Exception as exc:
        from lakectl.spark.batch import first_line

        raise parse_error(source, first_line(exc)) from exc
    if not df.columns:
        raise empty_batch_error(source, columns=False)
    return df


def source_stamp(
    source: str, storage_options: dict[str, Any] | None = None
) -> dict[str, tuple[Any, Any]]:
    """Size and modification stamp of every file of ``source``: equal stamps before and after
    a load mean it read the same files each time it passed over them."""
    storage, path = storage_for(source, storage_options)
    found = storage.fs.find(path, detail=True) if storage.isdir(path) else {}
    entries = found or {path: storage.fs.info(path)}
    keys = ("mtime", "LastModified", "ETag", "modificationTime", "last_modified")
    return {
        name: (info.get("size"), next((info[k] for k in keys if info.get(k) is not None), None))
        for name, info in entries.items()
    }


def _read_spark_source(spark: SparkSession, url: str, fmt: str, infer: bool) -> DataFrame:
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", "true").option("mode", "FAILFAST")
        # RFC 4180: a quote inside a quoted field is doubled (Spark's default escape is "\\").
        reader = reader.option("escape", '"')
        reader = reader.option("inferSchema", "true" if infer else "false")
        reader = reader.option("enforceSchema", "false")
        df = reader.csv(url)
    elif fmt == "json":
        df = reader.option("mode", "FAILFAST").json(url)
    elif fmt == "parquet":
        df = reader.parquet(url)
    else:
        df = reader.orc(url)
    return df


def _read_avro(spark: SparkSession, storage, path: str) -> DataFrame:
    import pyarrow as pa

    from lakectl.storage.avro_files import read_avro

    avro = read_avro(storage, path)
    table = pa.Table.from_pylist(avro.records)
    if table.num_columns == 0 or not avro.records:
        return spark.createDataFrame([], avro.ddl)
    return spark.createDataFrame(table.to_pandas(), avro.ddl)
