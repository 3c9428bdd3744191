"""Partition values of ACID event files, attached once per file instead of parsed per row.

Spark's partition discovery cannot be used on ACID directories (see :mod:`acid_read`), so the
values come from each file's path. Parsing ``_metadata.file_path`` in every row costs about half
of a compacted table's read: a string search over the whole path, URL decoding, a cast. Here the
driver decodes each file's directory names once (as the planner does), and a broadcast join on
the path Spark reports for the file attaches the typed values to its rows.

A file whose reported path is not among the join's keys (an unexpected spelling) takes the
per-row parse instead, so a spelling mismatch costs speed, never rows or values.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakectl.errors import UsageError
from lakectl.table.layout import unescape_partition_value
from lakectl.table.properties import parse_size
from lakectl.table.schema import Schema

FILE_COLUMN = "__lakectl_file"
PATH_COLUMN = "__lakectl_path"
# A long per partition (see partition_key), attached with the values: hashing a long per row
# costs less than hashing the values again (strings, often).
PARTITION_KEY_COLUMN = "__lakectl_partition_key"
_THRESHOLD_CONF = "spark.sql.autoBroadcastJoinThreshold"


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
        parts = jvm.java.util.regex.Pattern.compile("\n").split("\n".join(strings))
        return jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(parts)
    except Exception:  # an unexpected JVM: the caller takes the public API
        return None


def input_files(scan: DataFrame) -> list[str]:
    """``scan.inputFiles()``, fetched in one round trip where py4j would take one per file."""
    jdf = getattr(scan, "_jdf", None)
    jvm = getattr(scan.sparkSession, "_jvm", None)
    if jdf is not None and jvm is not None:
        try:
            files = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(jdf.inputFiles())
            if files.length() == 0:
                return []
            joined = files.mkString("\n").split("\n")
            if len(joined) == files.length():  # no line break inside a name
                return joined
        except Exception:  # an unexpected JVM: the public API below
            pass
    return scan.inputFiles()


def partition_key(values: list[Column]) -> Column:
    """A long for the (typed) partition ``values``: equal values give equal keys (different
    values may too). A constant for a table without partition columns."""
    return F.xxhash64(*values) if values else F.lit(0).cast("bigint")


def files_frame(
    spark: SparkSession,
    scan: DataFrame,
    values_by_url: dict[str, list[str | None]],
    partition_schema: Schema,
) -> DataFrame:
    """One row per spelling of each file ``scan`` reads: the spelling, the typed values and
    their :func:`partition_key`.

    ``values_by_url`` maps the URL each file was read under to its directory values.
    """
    import pyarrow as pa

    rows = []
    for reported in input_files(scan):
        values = values_by_url.get(unquote(reported))
        if values is not None:
            rows += [(s, *values) for s in reported_spellings(reported)]
    names = [FILE_COLUMN, *partition_schema.names]
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    # From Arrow, the frame is a local relation in the plan. From a list of rows it would be a
    # Python RDD, and every read would first run Python workers to build the broadcast: 0.9 s
    # of a 10M-row read with 10 deltas (840 files).
    table = pa.table(
        {n: pa.array(list(c), pa.string()) for n, c in zip(names, columns, strict=True)}
    )
    typed = [F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in partition_schema.columns]
    frame = spark.createDataFrame(table).select(FILE_COLUMN, *typed)
    key = partition_key([F.col(f"`{c.name}`") for c in partition_schema.columns])
    return frame.withColumn(PARTITION_KEY_COLUMN, key)


def with_file_path(scan: DataFrame) -> DataFrame:
    """``scan`` plus each row's file path as Spark reports it, for :func:`with_partition_values`.

    Only the path leaves the scan: a reference to the whole ``_metadata`` struct (kept through
    later filters or joins) would build it for every row.
    """
    return scan.withColumn(PATH_COLUMN, F.col("_metadata.file_path"))


def with_partition_values(
    events: DataFrame,
    files: DataFrame,
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
        return events.drop(PATH_COLUMN).withColumn(PARTITION_KEY_COLUMN, partition_key([]))
    path = F.col(f"e.{PATH_COLUMN}")
    joined = events.alias("e").join(
        F.broadcast(files.alias("f")), path == F.col(f"f.{FILE_COLUMN}"), "left"
    )
    unmatched = F.col(f"f.{FILE_COLUMN}").isNull()
    values = [
        F.when(unmatched, parse_from_path(c.name, path))
        .otherwise(F.col(f"f.`{c.name}`"))
        .alias(c.name)
        for c in partition_schema.columns
    ]
    kept = [F.col(f"e.`{n}`") for n in events.columns if n != PATH_COLUMN]
    out = joined.select(*kept, *values, F.col(f"f.{PARTITION_KEY_COLUMN}"))
    # The key of a file's row is the file's; rows of files without known values hash theirs.
    parsed_key = partition_key([F.col(f"`{c.name}`") for c in partition_schema.columns])
    key = F.col(PARTITION_KEY_COLUMN)
    return out.withColumn(PARTITION_KEY_COLUMN, F.when(key.isNull(), parsed_key).otherwise(key))


def fits_broadcast(spark: SparkSession, size: int) -> bool:
    """Whether ``size`` bytes of files are under Spark's broadcast threshold.

    A frame built by :func:`with_partition_values` hides its scan's size from the planner (a
    join's estimate is the product of its sides), so callers hint a broadcast themselves where
    Spark would have chosen one from the files' size.
    """
    text = (spark.conf.get(_THRESHOLD_CONF, "10m") or "10m").strip()
    try:
        threshold = int(text) if text.lstrip("-").isdigit() else parse_size(text)
    except UsageError:
        return False
    return 0 < size <= threshold


__all__ = [
    "FILE_COLUMN",
    "PARTITION_KEY_COLUMN",
    "directory_values",
    "files_frame",
    "fits_broadcast",
    "input_files",
    "jvm_strings",
    "partition_key",
    "reported_spellings",
    "with_file_path",
    "with_partition_values",
]
