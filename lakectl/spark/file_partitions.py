"""Partition values of ACID event files, attached once per file instead of parsed per row.

Spark's partition discovery cannot be used on ACID directories (see :mod:`acid_read`, the
change feed's scan of event files), so the values come from each file's path. Parsing ``_metadata.file_path`` in every row costs about half
of a compacted table's read: a string search over the whole path, URL decoding, a cast. Here the
driver decodes each file's directory names once (as the planner does), and a broadcast join
attaches the typed values to the file's rows: keyed by the file's listed size (a long, constant
per file, so nothing is hashed per row), the path Spark reports then compared exactly.

A file whose reported path or size is not among the join's entries (an unexpected spelling, a
file rewritten since it was listed) takes the per-row parse instead: a mismatch costs speed,
never rows or values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakectl.errors import UsageError
from lakectl.table.layout import unescape_partition_value
from lakectl.table.properties import parse_size
from lakectl.table.schema import Schema

FILE_COLUMN = "__lakectl_file"
PATH_COLUMN = "__lakectl_path"
SIZE_COLUMN = "__lakectl_file_size"
FILE_KEY_COLUMN = "__lakectl_file_key"
# A long per partition (see partition_key), attached with the values: hashing a long per row
# costs less than hashing the values again (strings, often).
PARTITION_KEY_COLUMN = "__lakectl_partition_key"


def directory_values(root: str, path: str, depth: int) -> list[str | None]:
    """The unescaped values of the ``depth`` partition directories of ``path`` below ``root``
    (``None`` for the default partition)."""
    dirs = path[len(root) + 1 :].split("/")[:depth]
    return [unescape_partition_value(d.partition("=")[2]) for d in dirs]


def reported_spellings(reported: str) -> list[str]:
    """The spellings of a file's path that ``_metadata.file_path`` may use.

    ``DataFrame.inputFiles`` gives the URI-encoded path as listed (``file:///a/b``), while the
    rows of a local file report ``file:/a/b``: both are keys.
    """
    scheme, sep, rest = reported.partition(":///")
    if sep and "/" not in scheme:
        return [reported, f"{scheme}:/{rest}"]
    return [reported]


def jvm_strings(spark: SparkSession, strings: list[str]) -> object | None:
    """``strings`` as a Scala ``Seq[String]`` in the session's JVM, in two round trips, or None
    without a py4j gateway (Spark Connect) or for a string with a line break.

    py4j converts a Python list one element per round trip: thousands for a scan of many small
    delta files.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or any("\n" in s for s in strings):
        return None
    try:
        pattern = _java_class(jvm, "java.util.regex.Pattern").compile("\n")
        return _java_class(jvm, _ARRAY_SEQ).unsafeWrapArray(pattern.split("\n".join(strings)))
    except Exception:  # an unexpected JVM: the caller takes the public API
        return None


_ARRAY_SEQ = "scala.collection.immutable.ArraySeq"


def _java_class(jvm: Any, name: str) -> Any:
    """The JVM class ``name``, named directly: ``jvm.java.util.X`` asks the JVM about every
    package of the name first, each a failed class lookup through all of Spark's jars (7 of the
    54 ms that creating a scan of 400 files took)."""
    from py4j.java_gateway import JavaClass

    return JavaClass(name, jvm._gateway_client)  # type: ignore[attr-defined]


# py4j answers of more than 8 KB wait 40 ms each on loopback (the JVM writes them in pieces,
# and Nagle's algorithm holds the last piece until the delayed acknowledgement of the first).
_ANSWER_CHARS = 7000


def input_files(scan: DataFrame) -> list[str]:
    """``scan.inputFiles()``, fetched in a few round trips where py4j would take one per file.

    The names come joined by line breaks, in answers of at most about :data:`_ANSWER_CHARS`
    characters (the slice size adapts to the lengths seen).
    """
    jdf = getattr(scan, "_jdf", None)
    jvm = getattr(scan.sparkSession, "_jvm", None)
    if jdf is not None and jvm is not None:
        try:
            files = _java_class(jvm, _ARRAY_SEQ).unsafeWrapArray(jdf.inputFiles())
            return _fetch_joined(files, files.length())
        except Exception:  # an unexpected JVM: the public API below
            pass
    return scan.inputFiles()


def _fetch_joined(files: object, count: int) -> list[str]:
    """The ``count`` strings of the JVM sequence ``files``, a slice per round trip."""
    names: list[str] = []
    step = 32
    while len(names) < count:
        end = min(count, len(names) + step)
        text: str = files.slice(len(names), end).mkString("\n")  # type: ignore[attr-defined]
        part = text.split("\n")
        if len(part) != end - len(names):
            raise ValueError("a file name with a line break")
        names += part
        step = max(1, _ANSWER_CHARS * len(part) // max(1, len(text) + len(part)))
    return names


def partition_key(values: list[Column]) -> Column:
    """A long for the (typed) partition ``values``: equal values give equal keys (different
    values may too). A constant for a table without partition columns."""
    return F.xxhash64(*values) if values else F.lit(0).cast("bigint")


@dataclass(frozen=True)
class KnownFile:
    """What the driver knows of a file it hands to a scan: its size (as listed) and the
    (unescaped) values of its partition directories."""

    size: int
    values: list[str | None]


@dataclass(frozen=True)
class FilesFrame:
    """A scan's files with their partition values (:func:`files_frame`), and how rows find
    their file: by size, or by a hash of the path where sizes repeat too often."""

    frame: DataFrame
    by_size: bool


# Files of one size that the join may compare paths with, per row. Tiny files of a table
# (delete deltas of one event each) can share sizes: then the path's hash is the key.
_MAX_SAME_SIZE = 4


def files_frame(
    spark: SparkSession,
    scan: DataFrame,
    known: Mapping[str, KnownFile],
    partition_schema: Schema,
) -> FilesFrame:
    """One row per spelling of each file ``scan`` reads: the spelling, the join key (see
    :class:`FilesFrame`), the typed values and their :func:`partition_key`.

    ``known`` maps the URL each file was read under to what the driver knows of it.
    """
    import pyarrow as pa

    rows = []
    for reported in input_files(scan):
        facts = known.get(unquote(reported))
        if facts is not None:
            rows += [(s, facts.size, *facts.values) for s in reported_spellings(reported)]
    sizes = Counter(facts.size for facts in known.values())
    by_size = not sizes or max(sizes.values()) <= _MAX_SAME_SIZE
    columns = (
        list(zip(*rows, strict=True))
        if rows
        else [() for _ in range(2 + len(partition_schema.columns))]
    )
    # From Arrow, the frame is a local relation in the plan. From a list of rows it would be a
    # Python RDD, and every read would first run Python workers to build the broadcast: 0.9 s
    # of a 10M-row read with 10 deltas (840 files).
    table = pa.table(
        {
            FILE_COLUMN: pa.array(list(columns[0]), pa.string()),
            FILE_KEY_COLUMN: pa.array(list(columns[1]), pa.int64()),
            **{
                n: pa.array(list(c), pa.string())
                for n, c in zip(partition_schema.names, columns[2:], strict=True)
            },
        }
    )
    file = F.col(FILE_COLUMN)
    file_key = F.col(FILE_KEY_COLUMN) if by_size else _path_key(file)
    typed = [F.col(f"`{c.name}`").cast(c.type) for c in partition_schema.columns]
    named = [value.alias(c.name) for value, c in zip(typed, partition_schema.columns, strict=True)]
    key = partition_key(typed).alias(PARTITION_KEY_COLUMN)
    # One projection: each DataFrame call costs an analysis of the plan in the JVM.
    frame = spark.createDataFrame(table).select(file, file_key.alias(FILE_KEY_COLUMN), *named, key)
    return FilesFrame(frame, by_size)


def _path_key(path: Column) -> Column:
    return F.xxhash64(path)


def with_file_path(scan: DataFrame) -> DataFrame:
    """``scan`` plus each row's file path and size as Spark reports them, for
    :func:`with_partition_values`.

    Only these leave the scan: a reference to the whole ``_metadata`` struct (kept through
    later filters or joins) would build it for every row.
    """
    return scan.withColumns(
        {
            PATH_COLUMN: F.col("_metadata.file_path"),
            SIZE_COLUMN: F.col("_metadata.file_size"),
        }
    )


def with_partition_values(
    events: DataFrame,
    files: FilesFrame,
    partition_schema: Schema,
    parse_from_path: Callable[[str, Column], Column],
) -> DataFrame:
    """``events`` (rows of a :func:`with_file_path` scan, maybe filtered) with the partition
    columns and :data:`PARTITION_KEY_COLUMN` appended instead of the path.

    ``files`` is the scan's :func:`files_frame`; ``parse_from_path(name, path)`` parses column
    ``name`` from the ``path`` column (as ``_metadata.file_path`` reports it), for rows of a
    file whose path is not among its keys.
    """
    if not partition_schema.columns:
        return events.drop(PATH_COLUMN, SIZE_COLUMN).withColumn(
            PARTITION_KEY_COLUMN, partition_key([])
        )
    path = F.col(f"e.{PATH_COLUMN}")
    file = F.col(f"f.{FILE_COLUMN}")
    # A long key (a LongHashedRelation: Spark's map of string keys probed slowly here, 0.9 s
    # of CPU per 10M rows read from 840 files), then the path itself. Compared as a range, the
    # path stays out of the join key.
    row_key = F.col(f"e.{SIZE_COLUMN}") if files.by_size else _path_key(path)
    cond = (row_key == F.col(f"f.{FILE_KEY_COLUMN}")) & (path >= file) & (path <= file)
    joined = events.alias("e").join(F.broadcast(files.frame.alias("f")), cond, "left")
    unmatched = F.col(f"f.{FILE_COLUMN}").isNull()
    parsed = [parse_from_path(c.name, path) for c in partition_schema.columns]
    values = [
        F.when(unmatched, value).otherwise(F.col(f"f.`{c.name}`")).alias(c.name)
        for value, c in zip(parsed, partition_schema.columns, strict=True)
    ]
    kept = [F.col(f"e.`{n}`") for n in events.columns if n not in (PATH_COLUMN, SIZE_COLUMN)]
    # The key of a file's row is the file's; rows of files without known values hash theirs.
    file_key = F.col(f"f.{PARTITION_KEY_COLUMN}")
    key = F.when(file_key.isNull(), partition_key(parsed)).otherwise(file_key)
    return joined.select(*kept, *values, key.alias(PARTITION_KEY_COLUMN))


def conf_bytes(spark: SparkSession, key: str, default: str) -> int | None:
    """A session setting in bytes (``"10m"``, ``"1048576"``, ``"-1"``), or None when it
    does not parse as one."""
    text = (spark.conf.get(key, default) or default).strip()
    try:
        return int(text) if text.lstrip("-").isdigit() else parse_size(text)
    except UsageError:
        return None


__all__ = [
    "FILE_COLUMN",
    "PARTITION_KEY_COLUMN",
    "FilesFrame",
    "KnownFile",
    "conf_bytes",
    "directory_values",
    "files_frame",
    "input_files",
    "jvm_strings",
    "partition_key",
    "reported_spellings",
    "with_file_path",
    "with_partition_values",
]
