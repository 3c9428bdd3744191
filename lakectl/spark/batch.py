"""Checking and shaping a batch before it is loaded: columns, types, keys, op codes.

All checks run as one aggregation over the batch, so bad input is reported with counts and an
example value before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lakectl.errors import BadInputError, SourceParseError
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakectl.table.schema import Column as TableColumn

ACTION_COL = "__lakectl_op"
ORDER_COL = "__lakectl_order"
POSITION_COL = "__lakectl_pos"


@dataclass(frozen=True)
class BatchOptions:
    mode: str  # append | upsert | cdc
    op_column: str | None = None
    op_values: dict[str, str] | None = None  # code -> insert|update|delete
    order_by: str | None = None


def _match(df_columns: list[str], name: str) -> str | None:
    lowered = {c.lower(): c for c in df_columns}
    return lowered.get(name.lower())


@dataclass(frozen=True)
class BatchStats:
    """What the validation pass learned: row count and the partitions the batch touches."""

    rows: int
    partitions: tuple[tuple[str | None, ...], ...]


def shape_batch(
    raw: DataFrame, meta: TableMetadata, options: BatchOptions, source: str
) -> tuple[DataFrame, BatchStats]:
    """Select and cast the table's columns, add op/order/position columns; raise on bad input."""
    raw = raw.withColumn(POSITION_COL, F.monotonically_increasing_id())
    columns = [c for c in raw.columns if c != POSITION_COL]
    expected = {c.lower() for c in meta.schema.names}
    op_col = _match(columns, options.op_column) if options.op_column else None
    if options.mode == "cdc" and op_col is None:
        raise BadInputError(
            f"{source}: no op column {options.op_column!r} (columns: {', '.join(columns)})",
            hint="name it with --op-column",
        )
    allowed_extra = {op_col.lower()} if op_col else set()
    extra = [c for c in columns if c.lower() not in expected and c.lower() not in allowed_extra]
    absent = [c for c in meta.schema.columns if _match(columns, c.name) is None]
    missing = [c.name for c in absent if not meta.may_be_absent(c.name)]
    if absent and not missing:
        raw = raw.select("*", *[absent_column(c) for c in absent])
        columns = [c for c in raw.columns if c != POSITION_COL]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unknown column(s) {', '.join(extra)}")
        raise BadInputError(
            f"{source}: {' and '.join(parts)}; the table has {', '.join(meta.schema.names)}",
            hint=_columns_hint(extra, missing),
        )
    selected = [
        F.col(f"`{_match(columns, c.name)}`").cast(c.type).alias(c.name)
        for c in meta.schema.columns
    ]
    extras = [F.col(POSITION_COL)]
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
    from lakectl.spark.acid_read import default_column

    return default_column(column).alias(column.name)


def _columns_hint(extra: list[str], missing: list[str]) -> str:
    if extra:
        return (
            "add --evolve to add the new column(s) to the table with the load, or add them "
            f'first with `lakectl alter TABLE --add-column "{extra[0]} TYPE"`'
        )
    return (
        f"every row needs {', '.join(missing)} (a key, partition or NOT NULL column without a "
        "default): add it to the source"
    )


def _check(
    raw: DataFrame, meta: TableMetadata, options: BatchOptions, source: str, op_col: str | None
) -> BatchStats:
    columns = raw.columns
    aggs = [F.count(F.lit(1)).alias("__rows")]
    if meta.partition_by:
        parts = [
            F.col(f"`{_match(columns, c.name)}`").cast(c.type).cast("string").alias(c.name)
            for c in meta.schema.select(list(meta.partition_by)).columns
        ]
        aggs.append(F.collect_set(F.struct(*parts)).alias("__parts"))
    source_types = {f.name: f.dataType.simpleString() for f in raw.schema.fields}
    for i, col in enumerate(meta.schema.columns):
        name = _match(columns, col.name)
        if source_types.get(name or "") == col.type:
            continue  # already the column's type (Parquet, ORC): no value can fail the cast
        src = F.col(f"`{name}`")
        bad = src.isNotNull() & src.cast(col.type).isNull()
        aggs.append(F.sum(bad.cast("int")).alias(f"t{i}"))
        aggs.append(F.first(F.when(bad, src.cast("string")), ignorenulls=True).alias(f"te{i}"))
    for j, key in enumerate(meta.primary_key):
        src = F.col(f"`{_match(columns, key)}`")
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
        raise SourceParseError(f"{source}: cannot be parsed: {first_line(exc)}") from exc
    if result["__rows"] == 0:
        raise BadInputError(f"{source}: the batch is empty (no rows); nothing was loaded")
    for i, col in enumerate(meta.schema.columns):
        if result.get(f"t{i}"):
            raise BadInputError(
                f"{source}: column {col.name!r}: {result[f't{i}']} value(s) do not fit type "
                f"{col.type}, e.g. {result[f'te{i}']!r}"
            )
    for j, key in enumerate(meta.primary_key):
        if result.get(f"k{j}"):
            raise BadInputError(f"{source}: key column {key!r} is null in {result[f'k{j}']} row(s)")
    if op_col and result.get("op"):
        raise BadInputError(
            f"{source}: column {op_col!r}: {result['op']} row(s) have an unknown op code, e.g. "
            f"{result['ope']!r} (known: {', '.join(sorted((options.op_values or {}).keys()))})",
            hint="map codes with --op-values I=insert,U=update,D=delete",
        )
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
