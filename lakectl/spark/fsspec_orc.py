"""ACID ORC files through pyarrow + fsspec, for storage Spark's Hadoop cannot reach.

pyspark ships no Hadoop S3 connector (hadoop-aws), so ``spark.read.orc("s3a://...")`` fails with
"No FileSystem for scheme". For such URLs lakectl writes event files through a Spark Python
data source instead: each task opens its file with the table's own fsspec filesystem (pyarrow's
ORC writer on the bytes), so executors need no Hadoop connector and no local state of the
driver; reads of such tables run the live-row kernel in Spark tasks
(:mod:`lakectl.spark.kernel_read`), which reads through the same filesystem. Where Hadoop *does* have a filesystem for the scheme (EMR, Dataproc, a
cluster with hadoop-aws), Spark's own ORC reader and writer are used, with ``s3://`` mapped to
``s3a://`` if only ``s3a`` is known.

The data source class is created per storage and carries the :class:`Storage` (endpoint and
credentials included) as a pickled class attribute: credentials never become data source options,
which Spark would show in query plans.

``spark.lakectl.orc.io`` (``auto`` | ``hadoop`` | ``fsspec``) overrides the choice, e.g. to
measure the fsspec path on local files.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    WriterCommitMessage,
)

from lakectl.arrow.orc_io import OrcFileWriter
from lakectl.storage.fs import Storage
from lakectl.table.layout import escape_partition_value
from lakectl.table.properties import ORC_DICTIONARY_THRESHOLD, pyarrow_orc_codec

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


IO_CONF = "spark.lakectl.orc.io"
# Hadoop schemes that can serve a lakectl scheme, in order of preference.
_HADOOP_SCHEMES = {"s3": ("s3", "s3a"), "s3a": ("s3a",)}
_EVENT_COLUMNS = (
    "operation",
    "originalTransaction",
    "bucket",
    "rowId",
    "currentTransaction",
    "row",
)
_NO_FILESYSTEM = ("UnsupportedFileSystem", "No FileSystem for scheme", "ClassNotFoundException")
# (id of the session, lakectl scheme) -> Hadoop scheme or None (the classpath does not change)
_hadoop_schemes: dict[tuple[int, str], str | None] = {}


# --- choosing the path --------------------------------------------------------------------------


def hadoop_url(spark: SparkSession, storage: Storage, path: str) -> str | None:
    """The URL under which Spark's own filesystems reach ``path``, or None when none can."""
    mode = spark.conf.get(IO_CONF, "auto") or "auto"
    if mode == "fsspec":
        return None
    if storage.scheme == "file":
        return storage.url(path)
    key = (id(spark), storage.scheme)
    url = storage.url(path)
    if key not in _hadoop_schemes:
        candidates = _HADOOP_SCHEMES.get(storage.scheme, (storage.scheme,))
        if mode == "hadoop":
            _hadoop_schemes[key] = candidates[-1]
        else:
            # The bucket (S3) or namenode (HDFS) part of the URL: enough for Hadoop to pick a
            # filesystem class without touching the data.
            authority = url.split("://", 1)[1].split("/", 1)[0]
            _hadoop_schemes[key] = next(
                (s for s in candidates if _hadoop_knows(spark, f"{s}://{authority}")), None
            )
    scheme = _hadoop_schemes[key]
    return None if scheme is None else f"{scheme}://{url.split('://', 1)[1]}"


def hadoop_urls(spark: SparkSession, storage: Storage, paths: list[str]) -> list[str] | None:
    """:func:`hadoop_url` of every path (one storage, so one answer for all), or None.

    The choice is made once, for the first path (asking the session's conf costs a round trip
    to the JVM, per path for a scan of a thousand small delta files).
    """
    if not paths:
        return []
    first = hadoop_url(spark, storage, paths[0])
    if first is None:
        return None
    if storage.scheme == "file":
        return [storage.url(p) for p in paths]
    scheme = first.split("://", 1)[0]
    return [f"{scheme}://{storage.url(p).split('://', 1)[1]}" for p in paths]


def _hadoop_knows(spark: SparkSession, url: str) -> bool:
    """Whether Spark has a Hadoop filesystem for ``url``'s scheme.

    Asked by resolving a path that does not exist: a known scheme answers "path does not exist"
    (or a permission error), an unknown one "No FileSystem for scheme" or, for a scheme Hadoop's
    defaults map to an absent class, "ClassNotFoundException". This works on Spark Connect too,
    where the JVM is out of reach.
    """
    try:
        probe = f"{url}/_lakectl_no_such_path_{uuid.uuid4().hex}"
        # ``.schema`` forces analysis: Spark Connect's ``load`` is lazy and would never fail.
        spark.read.format("text").load(probe).schema  # noqa: B018
    except Exception as exc:
        text = str(exc)
        # Hadoop's defaults name fs.s3a.impl even without hadoop-aws: then the class is missing.
        return not any(m in text for m in _NO_FILESYSTEM)
    return True


# --- the data source ----------------------------------------------------------------------------


@dataclass
@dataclass
class WrittenFiles(WriterCommitMessage):
    """The files one write task created."""

    paths: list[str]


class FsspecOrcSource(DataSource):
    """Reads and writes ACID event files with pyarrow through :attr:`storage`'s filesystem.

    Not used directly: :func:`register_source` makes a subclass per storage.

    Write options: ``staging`` (directory), ``group_columns`` (JSON list: partition columns, then the bucket
    column), ``compression``.
    """

    storage: ClassVar[Storage]
    source_name: ClassVar[str] = "lakectl_fsspec_orc"

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def writer(self, schema: StructType, overwrite: bool) -> _EventWriter:
        return _EventWriter(
            self.storage,
            self.options["staging"],
            json.loads(self.options["group_columns"]),
            self.options.get("compression", "snappy"),
        )


def register_source(
    spark: SparkSession, storage: Storage, base: type[DataSource] = FsspecOrcSource
) -> str:
    """Register a subclass of ``base`` carrying ``storage`` (pickled with the class, so it reaches
    every executor, and the Connect server); return its format name.

    Registered on every use (it costs a pickle and one call): registrations belong to a session,
    and a session object cannot be told apart from an earlier one at the same address.
    """
    digest = hashlib.sha256(
        json.dumps([storage.scheme, storage.options], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    prefix = getattr(base, "source_name", base.__name__.lower())
    name = f"{prefix}_{digest}"
    source = type(f"{base.__name__}_{digest}", (base,), {"storage": storage, "source_name": name})
    spark.dataSource.register(source)
    return name


class _EventWriter(DataSourceArrowWriter):
    """Writes each run of rows with equal group columns (partition values, bucket) to one ORC
    file ``<staging>/<col=value>/.../part-<uuid>.orc``: the layout Spark's partitioned writer
    gives, which :func:`lakectl.spark.acid_write._move_into_place` turns into bucket files."""

    def __init__(
        self, storage: Storage, staging: str, group_columns: list[str], compression: str
    ) -> None:
        self.storage = storage
        self.staging = staging
        self.group_columns = group_columns
        self.compression = pyarrow_orc_codec(compression)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        written: list[str] = []
        current: tuple[Any, ...] | None = None
        writer: OrcFileWriter | None = None
        try:
            for batch in iterator:
                for key, rows in _runs(batch, self.group_columns):
                    if key != current:
                        if writer is not None:
                            writer.close()
                        path = self._file_path(key)
                        self.storage.makedirs(path.rsplit("/", 1)[0])  # local files need dirs
                        writer = OrcFileWriter(
                            self.storage,
                            path,
                            compression=self.compression,
                            dictionary_key_size_threshold=ORC_DICTIONARY_THRESHOLD,
                        )
                        written.append(path)
                        current = key
                    assert writer is not None
                    writer.write(rows.select(_EVENT_COLUMNS))
            if writer is not None:
                writer.close()
        except BaseException:
            for path in written:  # a failed task leaves nothing behind
                self.storage.delete(path)
            raise
        return WrittenFiles(written)

    def _file_path(self, key: tuple[Any, ...]) -> str:
        dirs = [
            f"{col}={escape_partition_value(None if value is None else str(value))}"
            for col, value in zip(self.group_columns, key, strict=True)
        ]
        return self.storage.join(self.staging, *dirs, f"part-{uuid.uuid4().hex}.orc")

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Remove files of task attempts that failed without cleaning up (a lost executor)."""
        kept = {p for m in messages if isinstance(m, WrittenFiles) for p in m.paths}
        for path in self.storage.fs.find(self.staging):
            if path.rsplit("/", 1)[-1].startswith("part-") and path not in kept:
                self.storage.delete(path)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        for message in messages:
            if isinstance(message, WrittenFiles):
                for path in message.paths:
                    self.storage.delete(path)


def _runs(batch: pa.RecordBatch, columns: list[str]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Consecutive slices of ``batch`` with equal values in ``columns`` (the batch is sorted)."""
    import pyarrow.compute as pc

    n = batch.num_rows
    starts = [0] if n else []
    change = None
    for name in columns if n > 1 else ():
        head, tail = batch.column(name).slice(0, n - 1), batch.column(name).slice(1)
        flip = pc.or_(
            pc.fill_null(pc.not_equal(head, tail), False),
            pc.not_equal(pc.is_null(head), pc.is_null(tail)),
        )
        change = flip if change is None else pc.or_(change, flip)
    if change is not None:
        starts += [i + 1 for i in pc.indices_nonzero(change).to_pylist()]
    for start, end in itertools.pairwise([*starts, n]):
        key = tuple(batch.column(c)[start].as_py() for c in columns)
        yield key, batch.slice(start, end - start)


# --- entry points for acid_write ---------------------------------------------------


def write_events(
    ordered: DataFrame, storage: Storage, staging: str, group_columns: list[str], compression: str
) -> None:
    """Write ``ordered`` (sorted by ``group_columns`` within partitions) as ORC event files under
    ``staging``, in the directory layout of Spark's ``partitionBy(*group_columns)``."""
    (
        ordered.write.format(register_source(ordered.sparkSession, storage))
        .mode("append")
        .option("staging", staging)
        .option("group_columns", json.dumps(group_columns))
        .option("compression", compression)
        .save()
    )


__all__ = [
    "IO_CONF",
    "FsspecOrcSource",
    "hadoop_url",
    "hadoop_urls",
    "register_source",
    "write_events",
]
