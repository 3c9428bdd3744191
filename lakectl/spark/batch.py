"""Checking and shaping a batch before it is loaded: columns, types, keys, op codes.

All checks run as one aggregation over the batch, so bad input is reported with counts and an
example value before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lakectl.table.batch_checks import (
    ACTION_COL,
    ORDER_COL,
    POSITION_COL,
    SOURCE_FILE_COL,
    SOURCE_PART_COL,
    BatchOptions,
    BatchStats,
    batch_columns,
    empty_batch_error,
    match_column,
    null_key_error,
    op_code_error,
    parse_error,
    type_error,
)
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakectl.table.schema import Column as TableColumn

__all__ = [
    "ACTION_COL",
    "ORDER_COL",
    "POSITION_COL",
    "BatchOptions",
    "BatchStats",
    "absent_column",
    "first_line",
    "shape_batch",
    "with_source_order",
]


_FILE_PATH = "__lakectl_file_path"
_SOURCE_COLUMNS = (POSITION_COL, SOURCE_FILE_COL, SOURCE_PART_COL)


def with_source_order(raw: DataFrame) -> DataFrame:
    """``raw`` with each row's place among the source's files where Spark read it from files
    (its ``_metadata``): :data:`SOURCE_FILE_COL`, the file's place among them in name order
    (the names decoded, as the Arrow engine orders them), and :data:`SOURCE_PART_COL`, the
    start of the part of the file the row was read with. Spark reads the files of a folder in
    an order of its own (the largest first); this restores the source's. ``raw`` as it is when
    its rows were not read from files, or from one file (whose parts Spark reads in order)."""
    from urllib.parse import unquote, urlparse

    from pyspark.errors import PySparkException

    try:
        files = raw.inputFiles()
        if len(files) < 2:  # the parts of one file are read in order
            return raw
        located = raw.select(
            "*",
            F.col("_metadata.file_path").alias(_FILE_PATH),
            F.col("_metadata.file_block_start").alias(SOURCE_PART_COL),
        )
        located.schema  # noqa: B018  (analysed here on Spark Connect too)
    except PySparkException:  # no file scan under it: no _metadata
        return raw
    ranked = sorted(files, key=lambda url: unquote(urlparse(url).path))
    keys = []  # Spark names a local file file:/path in _metadata, file:///path in inputFiles
    for rank, url in enumerate(ranked):
        keys.append((url, rank))
        if url.startswith("file:///"):
            keys.append(("file:/" + url[len("file:///") :], rank))
    ranks = raw.sparkSession.createDataFrame(keys, f"{_FILE_PATH} string, {SOURCE_FILE_COL} int")
    return located.join(F.broadcast(ranks), _FILE_PATH, "left").drop(_FILE_PATH)


def shape_batch(
    raw: DataFrame, meta: TableMetadata, options: BatchOptions, source: str
) -> tuple[DataFrame, BatchStats]:
    """Select and cast the table's columns, add op/order/position columns (and the source
    order of :func:`with_source_order`); raise on bad input (the rules of
    :mod:`lakectl.table.batch_checks`)."""
    raw = raw.withColumn(POSITION_COL, F.monotonically_increasing_id())
    located = [c for c in (SOURCE_FILE_COL, SOURCE_PART_COL) if c in raw.columns]
    columns = [c for c in raw.columns if c not in _SOURCE_COLUMNS]
    matched = batch_columns(columns, meta, options, source)
    op_col = matched.op_column
    if matched.absent:
        raw = raw.select("*", *[absent_column(c) for c in matched.absent])
        columns = [c for c in raw.columns if c not in _SOURCE_COLUMNS]
    selected = [
        F.col(f"`{match_column(columns, c.name)}`").cast(c.type).alias(c.name)
        for c in meta.schema.columns
    ]
    extras = [F.col(POSITION_COL), *[F.col(c) for c in located]]
    if op_col:
        extras.append(F.col(f"`{op_col}`").cast("string").alias(ACTION_COL))
    stats = _check(raw, meta, options, source, op_col)
    shaped = raw.select(*selected, *extras)
    if op_col:
        mapping = options.op_values or {}
        action = None
        for code, act in mapping.items():
            cond = F.col(ACTION_COL) == F.lit(code)
            action = F.when(cond, F.lit(act)) if action is None else action.when(cond, F.lit(act))
        assert action is not None  # parse_op_values never returns an empty mapping
        shaped = shaped.withColumn(ACTION_COL, action)
    if options.order_by:
        shaped = shaped.withColumn(ORDER_COL, F.col(f"`{meta.schema[options.order_by].name}`"))
    return shaped, stats


def absent_column(column: TableColumn) -> Column:
    """The value of ``column`` in the rows of a batch that lacks it (see
    :meth:`~lakectl.table.metadata.TableMetadata.may_be_absent`): its default, or NULL."""
    from lakectl.spark.snapshot_rows import default_column

    return default_column(column).alias(column.name)


def _check(
    raw: DataFrame, meta: TableMetadata, options: BatchOptions, source: str, op_col: str | None
) -> BatchStats:
    columns = raw.columns
    aggs = [F.count(F.lit(1)).alias("__rows")]
    if meta.partition_by:
        parts = [
            F.col(f"`{match_column(columns, c.name)}`").cast(c.type).cast("string").alias(c.name)
            for c in meta.schema.select(list(meta.partition_by)).columns
        ]
        aggs.append(F.collect_set(F.struct(*parts)).alias("__parts"))
    source_types = {f.name: f.dataType.simpleString() for f in raw.schema.fields}
    for i, col in enumerate(meta.schema.columns):
        name = match_column(columns, col.name)
        if source_types.get(name or "") == col.type:
            continue  # already the column's type (Parquet, ORC): no value can fail the cast
        src = F.col(f"`{name}`")
        bad = src.isNotNull() & src.cast(col.type).isNull()
        aggs.append(F.sum(bad.cast("int")).alias(f"t{i}"))
        aggs.append(F.first(F.when(bad, src.cast("string")), ignorenulls=True).alias(f"te{i}"))
    for j, key in enumerate(meta.primary_key):
        src = F.col(f"`{match_column(columns, key)}`")
        aggs.append(F.sum(src.isNull().cast("int")).alias(f"k{j}"))
    if op_col:
        codes = list((options.op_values or {}).keys())
        src = F.col(f"`{op_col}`").cast("string")
        bad = src.isNull() | ~src.isin(codes)
        aggs.append(F.sum(bad.cast("int")).alias("op"))
        aggs.append(
            F.first(F.when(bad, F.coalesce(src, F.lit("NULL"))), ignorenulls=True).alias("ope")
        )
    try:
        result = raw.agg(*aggs).collect()[0].asDict()
    except Exception as exc:  # Spark's FAILFAST parse errors
        raise parse_error(source, first_line(exc)) from exc
    if result["__rows"] == 0:
        raise empty_batch_error(source, columns=True)
    for i, col in enumerate(meta.schema.columns):
        if result.get(f"t{i}"):
            raise type_error(source, col, result[f"t{i}"], result[f"te{i}"])
    for j, key in enumerate(meta.primary_key):
        if result.get(f"k{j}"):
            raise null_key_error(source, key, result[f"k{j}"])
    if op_col and result.get("op"):
        raise op_code_error(source, op_col, result["op"], result["ope"], options.op_values or {})
    partitions = tuple(tuple(p) for p in result.get("__parts") or ())
    return BatchStats(int(result["__rows"]), partitions)


def first_line(exc: Exception) -> str:
    """The part of a source-parsing error that names the problem, on one line."""
    text = str(exc)
    for marker in ("Malformed records are detected", "MALFORMED_RECORD", "CSV", "JSON"):
        idx = text.find(marker)
        if idx >= 0:
            return text[idx : idx + 300].splitlines()[0]
    return text.splitlines()[0][:300] if text else type(exc).__name__
