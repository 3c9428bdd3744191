"""Reading a batch to load: CSV (with header), JSON lines, Parquet, ORC and Avro.

pyspark has no Avro reader (spark-avro is not bundled), so Avro files are decoded with fastavro
on the driver (through the source's fsspec filesystem) and handed to Spark as Arrow; that suits
dimension-sized Avro inputs. The other formats are read by Spark's own readers where its Hadoop
has a filesystem for the source's scheme, else through fsspec
(:mod:`lakectl.spark.fsspec_files`: ``s3://`` sources without hadoop-aws).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from lakectl.errors import (
    BadInputError,
    LakectlError,
    SourceNotFoundError,
    SourceParseError,
    UsageError,
)
from lakectl.storage.fs import storage_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = ("csv", "json", "parquet", "orc", "avro")
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

        raise SourceParseError(f"{source}: cannot be parsed: {first_line(exc)}") from exc
    if not df.columns:
        raise BadInputError(
            f"{source}: the batch is empty (no columns, no rows); nothing was loaded"
        )
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
    import fastavro
    import pyarrow as pa

    files = [path]
    if storage.isdir(path):
        entries = storage.list_entries(path, links=True)
        files = [e["path"] for e in entries if e["name"].endswith(".avro")]
    records: list[dict] = []
    schema: dict | None = None
    for file in files:
        try:
            with storage.fs.open(file, "rb") as handle:
                reader = fastavro.reader(handle)
                written = reader.writer_schema
                if not isinstance(written, dict) or written.get("type") != "record":
                    raise BadInputError(
                        f"{storage.url(file)}: the Avro schema's top level must be a record "
                        "(one column per field)"
                    )
                schema = schema or written
                records.extend(cast(Iterator[dict], reader))  # records: checked above
        except (ValueError, EOFError, fastavro.read.SchemaResolutionError) as exc:  # type: ignore[attr-defined]
            raise BadInputError(f"{storage.url(file)}: not a readable Avro file: {exc}") from exc
    if schema is None:
        raise BadInputError(f"{storage.url(path)}: no Avro files found")
    fields = schema.get("fields", [])
    ddl = ", ".join(f"`{f['name']}` {_avro_type(f['type'])}" for f in fields)
    names = [f["name"] for f in fields]
    table = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in records])
    if table.num_columns == 0:
        return spark.createDataFrame([], ddl)
    return (
        spark.createDataFrame(table.to_pandas(), ddl) if records else spark.createDataFrame([], ddl)
    )


def _avro_type(avro: object) -> str:
    if isinstance(avro, list):
        non_null = [t for t in avro if t != "null"]
        return _avro_type(non_null[0]) if len(non_null) == 1 else "string"
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "date":
            return "date"
        if logical in ("timestamp-millis", "timestamp-micros"):
            return "timestamp"
        if logical == "decimal":
            return f"decimal({avro.get('precision', 10)},{avro.get('scale', 0)})"
        return _avro_type(avro.get("type"))
    mapping = {
        "int": "int",
        "long": "bigint",
        "float": "float",
        "double": "double",
        "boolean": "boolean",
        "string": "string",
        "bytes": "binary",
        "enum": "string",
    }
    if isinstance(avro, str) and avro in mapping:
        return mapping[avro]
    raise BadInputError(
        f"Avro type {avro!r} is not supported (flat records of primitive types only)"
    )
