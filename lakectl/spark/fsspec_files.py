"""Load sources and ``snapshot --out`` files through fsspec, where Spark's Hadoop has no filesystem.

pyspark ships no Hadoop S3 connector, so ``spark.read.csv("s3a://...")`` fails. For such URLs
lakectl reads and writes plain files with Spark Python data sources whose tasks open the files
with the storage's own fsspec filesystem (credentials travel pickled inside the source class, as
for :mod:`lakectl.spark.fsspec_orc`; nothing of the driver's is needed on the executors):

- **CSV and JSON lines**: a source yields the files' *lines* (split into byte ranges on big files,
  Hadoop's rule: a range owns the lines that start inside it) and Spark's own CSV/JSON parser
  reads them (``spark.read.csv(lines)``), so inference, quoting, FAILFAST and typing are exactly
  those of a local read. As with Spark's default ``multiLine=false``, a record is one line.
- **Parquet and ORC**: pyarrow reads each file (one task per file); the schema comes from the
  first file's footer, read on the driver.
- **Writing** (``snapshot --out``): Parquet/ORC batches are written by pyarrow, one file per task;
  CSV/JSON rows are first formatted by Spark (``to_csv`` / ``to_json``, the same code Spark's
  writers use) and the lines written out. A ``_SUCCESS`` file written at commit names the files
  and counts the rows. Files of failed or aborted tasks are removed.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from lakectl.arrow.orc_io import OrcFileWriter, read_stripe
from lakectl.errors import BadInputError, FormatError, StorageError, UsageError
from lakectl.kernel.orc_dates import batch_from_orc
from lakectl.storage.fs import Storage
from lakectl.table.json_input import SizeLimit, field_int, read_json_object

from .fsspec_orc import register_source

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

TEXT_FORMATS = ("csv", "json")
BINARY_FORMATS = ("parquet", "orc")
# Line-oriented files are read in byte ranges of this size (Spark's maxPartitionBytes default).
SPLIT_BYTES = 128 * 1024 * 1024
_LINES_PER_BATCH = 65536
_READ_AHEAD = 64 * 1024
_EXTENSIONS = {"csv": "csv", "json": "json", "parquet": "parquet", "orc": "orc"}


# --- listing ------------------------------------------------------------------------------------


def source_files(storage: Storage, path: str) -> list[tuple[str, int]]:
    """The files a Spark read of ``path`` would read, with their sizes: the file itself, or the
    files directly in the directory in name order (the source's order of its rows), skipping
    hidden ones (``_SUCCESS``, ``.crc``) as Spark does.

    Sub-directories (a partitioned ``key=value`` tree) are refused: their partition columns would
    silently be missing.
    """
    if not storage.isdir(path):
        info = storage.fs.info(path)
        return [(path, int(info.get("size") or 0))]
    listed = storage.list_entries(path, links=True)
    entries = [e for e in listed if not e["name"].startswith(("_", "."))]
    nested = [e["name"] for e in entries if e["type"] == "directory"]
    if nested:
        raise UsageError(
            f"{storage.url(path)} has sub-directories ({', '.join(nested[:3])}); on "
            f"{storage.scheme}:// lakectl reads only the files directly in a source directory",
            hint="load each partition directory on its own, or copy the files into one directory",
        )
    files = sorted((e["name"], e["path"], e["size"]) for e in entries if e["type"] == "file")
    return [(full, size) for _, full, size in files]


def line_splits(files: list[tuple[str, int]], split_bytes: int = SPLIT_BYTES) -> list[list[Any]]:
    """``[path, start, end, size]`` byte ranges covering every file, at most ``split_bytes`` each
    (one empty range for an empty file)."""
    splits: list[list[Any]] = []
    step = max(split_bytes, 1)
    for path, size in files:
        splits += [[path, s, min(s + step, size), size] for s in range(0, max(size, 1), step)]
    return splits


def lines_in_range(data: bytes, start: int, end: int) -> list[bytes]:
    """The lines a range ``[start, end)`` owns, given ``data``: the file's bytes from
    ``max(start - 1, 0)`` up to the end of the line that crosses ``end`` (or the file's end).

    A range owns the lines whose first byte lies in it (Hadoop's LineRecordReader), so a range
    not at the file's start skips the partial line it begins in, and the line crossing its end
    is read whole. Lines end at ``\\n``; a ``\\r`` before it is dropped; empty lines are dropped
    (Spark's CSV and JSON readers skip them too).
    """
    offset = max(start - 1, 0)  # the file position of data[0]
    if start == 0:
        begin = 0
    else:
        newline = data.find(b"\n")
        if newline < 0:
            return []
        begin = newline + 1
    if begin + offset >= end:
        return []
    # The last owned line ends at the first newline at file position >= end - 1.
    stop_at = data.find(b"\n", max(end - 1 - offset, begin))
    stop = len(data) if stop_at < 0 else stop_at + 1
    lines = data[begin:stop].split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in lines if line.strip(b"\r")]


def _read_range(storage: Storage, path: str, start: int, end: int, size: int) -> bytes:
    """The bytes :func:`lines_in_range` needs for ``[start, end)``: from ``start - 1`` to past the
    first newline at or after ``end - 1`` (reading ahead in small steps), or the file's end."""
    first = max(start - 1, 0)
    data = bytearray(storage.fs.cat_file(path, start=first, end=end) if end > first else b"")
    position = first + len(data)
    while position < size and data.find(b"\n", max(end - 1 - first, 0)) < 0:
        step = storage.fs.cat_file(path, start=position, end=min(position + _READ_AHEAD, size))
        if not step:
            break
        data += step
        position += len(step)
    return bytes(data)


# --- the data sources ---------------------------------------------------------------------------


@dataclass
class LineRange(InputPartition):
    path: str
    start: int
    end: int
    size: int


@dataclass
class WholeFile(InputPartition):
    path: str


@dataclass
class WrittenFiles(WriterCommitMessage):
    paths: list[str]
    rows: int


class FsspecFilesSource(DataSource):
    """Plain files through :attr:`storage`'s fsspec filesystem (subclassed per storage).

    Read options: ``file_format`` (``lines``, ``parquet``, ``orc``), ``files`` (JSON: ``[path, size]``
    pairs), ``split_bytes``. Write options: ``directory``, ``file_format``
    (``lines`` for pre-formatted CSV/JSON, ``parquet``, ``orc``), ``extension``, ``header``
    (a first line for every CSV file).
    """

    storage: ClassVar[Storage]
    source_name: ClassVar[str] = "lakectl_fsspec_files"

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def reader(self, schema: StructType) -> DataSourceReader:
        files = [(p, int(s)) for p, s in json.loads(self.options["files"])]
        fmt = self.options["file_format"]
        if fmt == "lines":
            split = int(self.options.get("split_bytes", SPLIT_BYTES))
            return _LinesReader(self.storage, line_splits(files, split), schema)
        return _ArrowFileReader(self.storage, [p for p, _ in files], fmt, schema)

    def writer(self, schema: StructType, overwrite: bool) -> _FilesWriter:
        return _FilesWriter(
            self.storage,
            self.options["directory"],
            self.options["file_format"],
            self.options.get("extension", ""),
            self.options.get("header"),
        )


class _LinesReader(DataSourceReader):
    def __init__(self, storage: Storage, splits: list[list[Any]], schema: StructType) -> None:
        self.storage = storage
        self.splits = splits
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [LineRange(*split) for split in self.splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        assert isinstance(partition, LineRange)
        try:
            data = _read_range(
                self.storage, partition.path, partition.start, partition.end, partition.size
            )
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.storage.url(partition.path)} does not exist") from exc
        lines = lines_in_range(data, partition.start, partition.end)
        for first in range(0, len(lines), _LINES_PER_BATCH):
            chunk = lines[first : first + _LINES_PER_BATCH]
            values = [line.decode("utf-8", errors="replace") for line in chunk]
            yield pa.RecordBatch.from_arrays([pa.array(values, pa.string())], names=["value"])


class _ArrowFileReader(DataSourceReader):
    def __init__(self, storage: Storage, paths: list[str], fmt: str, schema: StructType) -> None:
        self.storage = storage
        self.paths = paths
        self.fmt = fmt
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [WholeFile(path) for path in self.paths]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, WholeFile)
        target = to_arrow_schema(self.schema, timezone="UTC")
        for batch in _arrow_batches(self.storage, partition.path, self.fmt):
            yield _conform(batch, target)


def _arrow_batches(storage: Storage, path: str, fmt: str) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    try:
        if fmt == "parquet":
            with storage.fs.open(path, "rb") as handle:
                yield from pq.ParquetFile(handle).iter_batches(batch_size=_LINES_PER_BATCH)
        else:
            source = pa.BufferReader(storage.fs.cat_file(path))
            reader = orc.ORCFile(source)
            for stripe in range(reader.nstripes):
                yield batch_from_orc(read_stripe(reader, source, stripe))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{storage.url(path)} does not exist") from exc


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``target``'s columns (by name, case-insensitive; missing ones null), cast."""
    import pyarrow as pa

    by_name = {name.lower(): i for i, name in enumerate(batch.schema.names)}
    arrays = []
    for field in target:
        index = by_name.get(field.name.lower())
        column = pa.nulls(batch.num_rows, field.type) if index is None else batch.column(index)
        arrays.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


class _FilesWriter(DataSourceArrowWriter):
    def __init__(
        self, storage: Storage, directory: str, fmt: str, extension: str, header: str | None
    ) -> None:
        self.storage = storage
        self.directory = directory
        self.fmt = fmt
        self.extension = extension
        self.header = header

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        """One file per task; none for a task with no rows (as Spark's file writers)."""
        import itertools

        from pyspark import TaskContext

        batches = (b for b in iterator if b.num_rows)
        first = next(batches, None)
        if first is None:
            return WrittenFiles([], 0)
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        name = f"part-{task:05d}-{uuid.uuid4().hex}{self.extension}"
        target = self.storage.join(self.directory, name)
        self.storage.makedirs(self.directory)
        try:
            if self.fmt == "orc":  # dates and times as Spark's writer stores them
                with OrcFileWriter(self.storage, target, compression="snappy") as writer:
                    rows = 0
                    for batch in itertools.chain([first], batches):
                        writer.write(batch)
                        rows += batch.num_rows
            else:
                with self.storage.fs.open(target, "wb") as handle:
                    rows = self._write_file(handle, itertools.chain([first], batches))
        except BaseException:
            self.storage.delete(target)
            raise
        return WrittenFiles([target], rows)

    def _write_file(self, handle: Any, iterator: Iterator[pa.RecordBatch]) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = 0
        if self.fmt == "lines":
            if self.header is not None:
                handle.write(self.header.encode("utf-8") + b"\n")
            for batch in iterator:
                values = batch.column(0).to_pylist()
                rows += len(values)
                if values:
                    handle.write(("\n".join(values) + "\n").encode("utf-8"))
            return rows
        writer: Any = None
        try:
            for batch in iterator:
                if writer is None:
                    writer = pq.ParquetWriter(handle, batch.schema, compression="snappy")
                writer.write(pa.Table.from_batches([batch]))
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        return rows

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Remove files of failed task attempts, then write ``_SUCCESS`` (files and row count)."""
        written = [m for m in messages if isinstance(m, WrittenFiles)]
        kept = {p for m in written for p in m.paths}
        for entry in self.storage.list_entries(self.directory):
            if entry["name"].startswith("part-") and entry["path"] not in kept:
                self.storage.delete(entry["path"])
        summary = {
            "files": sorted(posixpath.basename(p) for p in kept),
            "rows": sum(m.rows for m in written),
        }
        self.storage.write_bytes(
            self.storage.join(self.directory, "_SUCCESS"), json.dumps(summary).encode()
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        for message in messages:
            if isinstance(message, WrittenFiles):
                for path in message.paths:
                    self.storage.delete(path)


# --- entry points -------------------------------------------------------------------------------


def read_files(
    spark: SparkSession, storage: Storage, path: str, fmt: str, infer: bool
) -> DataFrame:
    """Read a load source (csv, json, parquet, orc) as ``spark.read`` would, through fsspec.

    CSV options are those of :func:`lakectl.spark.sources._read_spark_source`.
    """
    files = source_files(storage, path)
    if not files:
        raise BadInputError(f"{storage.url(path)}: no files to read")
    name = register_source(spark, storage, FsspecFilesSource)
    listed = json.dumps(files)
    if fmt in TEXT_FORMATS:
        lines = (
            spark.read.format(name)
            .schema("value string")
            .option("file_format", "lines")
            .option("files", listed)
            .option("split_bytes", str(SPLIT_BYTES))
            .load()
        )
        if fmt == "json":
            return spark.read.option("mode", "FAILFAST").json(lines)
        reader = spark.read.option("header", "true").option("mode", "FAILFAST")
        reader = reader.option("escape", '"').option("inferSchema", "true" if infer else "false")
        return reader.option("enforceSchema", "false").csv(lines)
    schema = _footer_schema(storage, files[0][0], fmt)
    return (
        spark.read.format(name)
        .schema(schema)
        .option("file_format", fmt)
        .option("files", listed)
        .load()
    )


def _footer_schema(storage: Storage, path: str, fmt: str) -> StructType:
    """The Spark schema of a Parquet/ORC file, from its footer, typed as Spark's readers type it:
    ORC timestamps and Parquet INT96 ones are Spark timestamps; other Parquet timestamps follow
    their UTC-adjusted flag (naive ones are ``timestamp_ntz``)."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructField, StructType, TimestampNTZType, TimestampType

    try:
        if fmt == "parquet":
            with storage.fs.open(path, "rb") as handle:
                footer = pq.ParquetFile(handle)
                arrow = footer.schema_arrow
                int96 = {
                    footer.schema.column(i).path.split(".")[0]
                    for i in range(len(footer.schema))
                    if footer.schema.column(i).physical_type == "INT96"
                }
        else:
            arrow = orc.ORCFile(pa.BufferReader(storage.fs.cat_file(path))).schema
            int96 = set()
    except (OSError, pa.ArrowInvalid) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise BadInputError(f"{storage.url(path)}: not a readable {fmt} file: {exc}") from exc
    schema = from_arrow_schema(arrow, prefer_timestamp_ntz=fmt == "parquet")
    return StructType(
        [
            StructField(f.name, TimestampType(), f.nullable, f.metadata)
            if f.name in int96 and isinstance(f.dataType, TimestampNTZType)
            else f
            for f in schema.fields
        ]
    )


def write_files(df: DataFrame, storage: Storage, path: str, fmt: str) -> int:
    """Write ``df`` as ``spark.write.<fmt>(path)`` would (CSV with a header), through fsspec;
    return the number of rows written."""
    if fmt not in (*TEXT_FORMATS, *BINARY_FORMATS):
        raise UsageError(f"--format {fmt!r}: use one of csv, json, parquet, orc")
    header = None
    if fmt == "csv":
        header = ",".join(_csv_field(c) for c in df.columns)
        df = df.select(F.to_csv(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("value"))
    elif fmt == "json":
        df = df.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("value"))
    writer = (
        df.write.format(register_source(df.sparkSession, storage, FsspecFilesSource))
        .mode("append")
        .option("directory", path)
        .option("file_format", "lines" if fmt in TEXT_FORMATS else fmt)
        .option("extension", "." + _EXTENSIONS[fmt] if fmt != "orc" else ".snappy.orc")
    )
    if header is not None:
        writer = writer.option("header", header)
    writer.save()
    try:
        summary = read_json_object(
            storage, storage.join(path, "_SUCCESS"), limit=SizeLimit.WRITE_SUMMARY
        )
        return int(field_int(summary, "rows", low=0))
    except (FileNotFoundError, FormatError, ValueError) as exc:
        raise StorageError(f"{storage.url(path)}: the write left no readable _SUCCESS") from exc


def _csv_field(value: str) -> str:
    """A header field quoted as Spark's CSV writer quotes values (only when needed)."""
    if any(ch in value for ch in ',"\r\n') or value != value.strip() or not value:
        return '"' + value.replace('"', '""') + '"'
    return value


__all__ = ["FsspecFilesSource", "line_splits", "lines_in_range", "read_files", "write_files"]
