"""Spark's ORC scan of Hive ACID event files, for the change feed's Spark path only.

The live-row rule and the schema mapping are the kernel's (:mod:`lakectl.kernel`), which every
other Spark job runs in its tasks (:mod:`lakectl.spark.kernel_read`). What remains here are the
two scans :mod:`lakectl.spark.change_feed` still reads events with, :func:`insert_events` and
:func:`delete_event_rows`, and their helpers; they go when the change feed reads through the
kernel too.

Spark's ORC reader hands files whose schema is the ACID event struct to ORC's ACID handling,
which breaks when Spark prunes any of the six top-level columns. Every scan here therefore keeps
all six columns alive with a cheap guard filter, while still pruning inside ``row``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.spark.file_partitions import (
    PARTITION_KEY_COLUMN,
    KnownFile,
    directory_values,
    files_frame,
    jvm_strings,
    partition_key,
    with_file_path,
    with_partition_values,
)
from lakectl.spark.fsspec_orc import hadoop_urls, scan_events
from lakectl.table.layout import (
    DEFAULT_PARTITION,
    LIST_BUCKETING_SEGMENT_PATTERN,
    OP_DELETE,
)
from lakectl.table.listing import DirListing, FileEntry
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

from .snapshot_rows import ReadSpec, default_column
from .types import event_schema_ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _valid_filter(valid: ValidWriteIds) -> Column:
    cond = F.col("currentTransaction") <= F.lit(valid.high_watermark)
    if valid.exceptions:
        cond = cond & ~F.col("currentTransaction").isin(sorted(valid.exceptions))
    return cond


def _guard(row_guard: Column) -> Column:
    """Reference all ACID columns so Spark never prunes one (see module docstring)."""
    return (
        F.col("operation").isNotNull()
        & F.col("originalTransaction").isNotNull()
        & F.col("bucket").isNotNull()
        & F.col("rowId").isNotNull()
        & F.col("currentTransaction").isNotNull()
        & row_guard
    )


def _scan(
    spark: SparkSession,
    spec: ReadSpec,
    files: Sequence[FileEntry],
    narrow: Callable[[DataFrame], DataFrame] | None = None,
    row_schema: Schema | None = None,
    written: Schema | None = None,
) -> DataFrame:
    """Scan event files; partition values come from each file's path, followed by their
    :func:`partition_key` (column ``PARTITION_KEY_COLUMN``).

    Spark's own partition discovery cannot be used: appending partition values to rows of ACID
    files breaks ORC's ACID reader. The values are decoded once per file and joined to its rows
    (:mod:`lakectl.spark.file_partitions`), after ``narrow`` (a filter of the events that needs
    no partition column) has dropped the rows it drops.

    ``row_schema`` (leading columns of the data schema) narrows the ``row`` struct that Spark
    reads from the files: ORC maps its fields by position. ``written`` is the older data schema
    the files were written with (:mod:`lakectl.table.evolution`): they are read with it, and
    their ``row`` becomes the current one (:func:`evolved_row`) before ``narrow``.
    """
    given = narrow or (lambda frame: frame)
    if written is not None:
        old = written

        def narrow(frame: DataFrame) -> DataFrame:
            return given(frame.withColumn("row", evolved_row(old, spec.data_schema)))

    else:
        narrow = given
    paths = [f.path for f in files]
    urls = hadoop_urls(spark, spec.storage, paths)
    if urls is None:  # no Hadoop filesystem for the scheme (s3:// without hadoop-aws)
        events = scan_events(
            spark,
            spec.storage,
            spec.root,
            paths,
            written or spec.data_schema,
            spec.partition_schema,
        )
        return _with_partition_key(narrow(events), spec)
    ddl = event_schema_ddl(row_schema or written or spec.data_schema, Schema(()))
    df = _read_orc(spark, ddl, urls)
    if not spec.partition_schema.columns:  # no values to attach: no paths, no files frame
        return _with_partition_key(narrow(df), spec)
    depth = len(spec.partition_schema.columns)
    known = {
        url: KnownFile(f.size, directory_values(spec.root, f.path, depth))
        for f, url in zip(files, urls, strict=True)
    }
    return with_partition_values(
        narrow(with_file_path(df)),
        files_frame(spark, df, known, spec.partition_schema),
        spec.partition_schema,
        lambda name, path: _parsed_partition_value(spec, name, path),
    )


def evolved_row(written: Schema, current: Schema, row: str = "row") -> Column:
    """The struct ``row`` of columns ``written`` as the ``current`` data schema's struct: fields
    mapped by position (the schema only grows at the end, renames keep positions), widened ones
    cast, the columns the files lack set to their default (or NULL); a null row stays null."""
    fields = []
    for i, column in enumerate(current.columns):
        if i < len(written.columns):
            value = F.col(f"{row}.`{written.columns[i].name}`")
            if written.columns[i].type != column.type:
                value = value.cast(column.type)
        else:
            value = default_column(column)
        fields.append(value.alias(column.name))
    return F.when(F.col(row).isNull(), F.lit(None)).otherwise(F.struct(*fields))


def _read_orc(spark: SparkSession, ddl: str, urls: list[str]) -> DataFrame:
    """``spark.read.schema(ddl).orc(*urls)``, with the URLs sent to the JVM at once where the
    session allows (:func:`jvm_strings`)."""
    reader = spark.read.schema(ddl)
    jreader = getattr(reader, "_jreader", None)
    paths = jvm_strings(spark, urls) if jreader is not None else None
    if jreader is None or paths is None:
        return reader.orc(urls)
    return reader._df(jreader.orc(paths))  # type: ignore[attr-defined]


def _parsed_partition_value(spec: ReadSpec, name: str, path: Column) -> Column:
    """Partition column ``name``, typed, parsed from each row's file path (``path``, as
    ``_metadata.file_path`` reports it).

    The directory name is decoded twice: the URI encoding Spark reports, then Hive's escaping
    (both are %XX codes).
    """
    raw = _raw_partition_value(name, spec.partition_schema.names, path)
    once = F.url_decode(F.replace(raw, F.lit("+"), F.lit("%2B")))
    twice = F.url_decode(F.replace(once, F.lit("+"), F.lit("%2B")))
    # Decoding is costly per row; names without '%' are already the value.
    value = F.when(~raw.contains("%"), raw).otherwise(twice)
    value = F.when(raw == F.lit(DEFAULT_PARTITION), F.lit(None)).otherwise(value)
    return value.cast(spec.partition_schema[name].type)


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _raw_partition_value(name: str, names: list[str], path: Column) -> Column:
    """The (still escaped) value of partition column ``name`` in the file ``path``.

    It is what follows the last ``/name=`` up to the next ``/``: partition directories come
    after the table root, and the directories below them (ACID directories, list-bucketing
    ``x=v`` directories of data columns) never carry a partition column's name. Two cheap
    ``substring_index`` calls per row; a regular expression costs several times the scan.
    Column names that Hive or URI encoding would change take the general (slower) path.
    """
    if _PLAIN_NAME.match(name):
        return F.substring_index(F.substring_index(path, f"/{name}=", -1), "/", 1)
    levels = len(names)
    dirs = F.split(
        F.regexp_extract(
            path,
            # partition dirs, the ACID dir, list-bucketing dirs (x=6/, HIVE_DEFAULT_...), the file
            rf"/((?:[^/]+/){{{levels}}})(?:base|delta|delete_delta)_[^/]+/"
            rf"(?:{LIST_BUCKETING_SEGMENT_PATTERN}/)*[^/]+$",
            1,
        ),
        "/",
    )
    return F.regexp_extract(F.element_at(dirs, names.index(name) + 1), r"^[^=]*=(.*)$", 1)


def _with_partition_key(events: DataFrame, spec: ReadSpec) -> DataFrame:
    """``events`` (with typed partition columns) plus their :func:`partition_key`, per row."""
    values = [F.col(f"`{c}`") for c in spec.partition_schema.names]
    return events.withColumn(PARTITION_KEY_COLUMN, partition_key(values))


def _row_guard(spec: ReadSpec) -> Column:
    if spec.not_null_column:
        return F.col(f"row.`{spec.not_null_column}`").isNotNull()
    return F.col("row").isNotNull()


def insert_events(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    narrow: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame | None:
    """Rows of bases and deltas, with identity columns, filtered to valid write ids: the event
    columns, the partition columns, then ``PARTITION_KEY_COLUMN``.

    ``narrow`` filters the events of each scan before its partition columns are attached, so
    it may use the event columns only.
    """
    frames = []
    guard = _guard(_row_guard(spec) & (F.col("operation") != OP_DELETE))
    bases = [(p, p.base) for p in plans if p.base]
    for written, files in _by_written_schema(bases).items():
        frames.append(_scan(spark, spec, files, narrow, written=written).where(guard))
    deltas = [(p, d) for p in plans for d in p.deltas]
    for written, files in _by_written_schema(deltas).items():
        delta_guard = guard & _valid_filter(spec.valid)
        frames.append(_scan(spark, spec, files, narrow, written=written).where(delta_guard))
    originals = [(p, f) for p in plans for f in p.originals]
    if originals:
        events = _original_events(spark, spec, originals)
        frames.append(_with_partition_key(narrow(events) if narrow else events, spec))
    if not frames:
        return None
    return reduce(lambda a, b: a.unionByName(b), frames)


def _by_written_schema(
    dirs: Sequence[tuple[PartitionReadPlan, DirListing]],
) -> dict[Schema | None, list[FileEntry]]:
    """The files of ``dirs`` by the older data schema they were written with (None: the
    current one), so that each group is scanned with its own row struct."""
    groups: dict[Schema | None, list[FileEntry]] = {}
    for plan, directory in dirs:
        groups.setdefault(plan.written_schema(directory), []).extend(directory.files)
    return {k: v for k, v in groups.items() if v}


def delete_event_rows(spark: SparkSession, spec: ReadSpec, files: Sequence[FileEntry]) -> DataFrame:
    """The valid delete events of ``files`` with every event column (for merging delete deltas,
    which must keep each event's currentTransaction: time travel filters on it), the partition
    columns and ``PARTITION_KEY_COLUMN``."""
    return _delete_event_scan(spark, spec, files)


def _delete_event_scan(
    spark: SparkSession,
    spec: ReadSpec,
    files: Sequence[FileEntry],
    row_schema: Schema | None = None,
) -> DataFrame:
    """Valid delete events of ``files``; ``row_schema`` as for :func:`_scan` (the ``row`` of a
    delete event is null, so any leading columns serve)."""
    guard = _guard(F.col("row").isNull()) & (F.col("operation") == OP_DELETE)
    scan = _scan(spark, spec, files, row_schema=row_schema)
    return scan.where(guard & _valid_filter(spec.valid))


# --- original (pre-ACID) files ----------------------------------------------------------------


def _original_events(
    spark: SparkSession, spec: ReadSpec, originals: list[tuple[PartitionReadPlan, FileEntry]]
) -> DataFrame:
    """Original files with Hive 3's synthetic row ids (write id 0, bucket from the file name,
    rowId counted across a bucket's files in order, ``_copy_N`` after the base file).

    Read through the driver with pyarrow: such files only exist in tables converted from plain
    ORC, until their first major compaction.
    """
    from lakectl.arrow.originals import original_events

    combined = original_events(
        spec.storage, spec.data_schema, spec.partition_schema.names, originals
    )
    assert combined is not None  # callers pass at least one file
    df = spark.createDataFrame(combined.to_pandas())
    row = F.struct(
        *[F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in spec.data_schema.columns]
    )
    return df.select(
        F.lit(0).alias("operation"),
        F.col("originalTransaction").cast("bigint"),
        F.col("bucket").cast("int"),
        F.col("rowId").cast("bigint"),
        F.col("currentTransaction").cast("bigint"),
        row.alias("row"),
        *[F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in spec.partition_schema.columns],
    )


__all__ = ["delete_event_rows", "insert_events"]
