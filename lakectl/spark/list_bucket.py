"""Spark side of list bucketing: number each event's list-bucketing directory, count skew.

The writer (:func:`lakectl.spark.acid_write.write_compacted`) takes the numbers and the
directory names of :func:`lakectl.planning.list_bucket_plan.subdir_names`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, NamedTuple

from pyspark.sql import functions as F

from lakectl.planning.list_bucket_plan import (
    DEFAULT_SUBDIR,
    NO_SUBDIR,
    ListBucketing,
    heaviest,
    subdir_names,
)
from lakectl.table.layout import parse_partition_path
from lakectl.table.metadata import TableMetadata

from .acid_write import SUBDIR_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PREFIX = "__lb_"


class GroupCount(NamedTuple):
    """One value tuple of one partition, as :func:`skew_counts` returns it."""

    partition: tuple[str | None, ...]
    values: tuple[str | None, ...]
    rows: int
    total: int  # rows in the partition
    distinct: int  # distinct value tuples in the partition
    rank: int  # 1 = heaviest


def split_events(
    spark: SparkSession,
    events: DataFrame,
    meta: TableMetadata,
    layouts: Mapping[str, ListBucketing],
    partitions: Sequence[str],
) -> tuple[DataFrame, dict[tuple[str, int], str] | None]:
    """Add :data:`SUBDIR_COL` to ACID ``events`` (six ACID columns + partition columns).

    Each partition in ``layouts`` gets its skewed values numbered 0.. and the default directory;
    the others get no subdirectory. Returns the events unchanged and ``None`` when no partition
    is split. One broadcast join on the partition columns, then a map lookup per row.
    """
    if not any(p in layouts for p in partitions):
        return events, None
    part_cols = list(meta.partition_by)
    # Partitions may be split by different columns: one map per column set, empty elsewhere.
    ordered = sorted({lb.columns for lb in layouts.values()})
    rows = []
    for partition, layout in layouts.items():
        mine = [cols == layout.columns for cols in ordered]
        rows.append(
            (
                *(parse_partition_path(part_cols, partition) if partition else ()),
                *[[list(v) for v in layout.values] if m else [] for m in mine],
                *[list(range(len(layout.values))) if m else [] for m in mine],
            )
        )
    ddl = [f"`{_PREFIX}{c}` string" for c in part_cols]
    ddl += [f"`{_PREFIX}keys{i}` array<array<string>>" for i in range(len(ordered))]
    ddl += [f"`{_PREFIX}nums{i}` array<int>" for i in range(len(ordered))]
    mapping = spark.createDataFrame(rows, ", ".join(ddl))
    types = {c.name: c.type for c in meta.schema.columns}
    mapping = mapping.select(
        *[F.col(f"`{_PREFIX}{c}`").cast(types[c]).alias(f"{_PREFIX}{c}") for c in part_cols],
        *[
            F.map_from_arrays(F.col(f"{_PREFIX}keys{i}"), F.col(f"{_PREFIX}nums{i}")).alias(
                f"{_PREFIX}map{i}"
            )
            for i in range(len(ordered))
        ],
        F.lit(True).alias(f"{_PREFIX}split"),
    )
    cond = reduce(
        lambda a, b: a & b,
        [F.col(f"`{c}`").eqNullSafe(F.col(f"`{_PREFIX}{c}`")) for c in part_cols],
        F.lit(True),
    )
    joined = events.join(F.broadcast(mapping), cond, "left")
    number = F.when(F.col(f"{_PREFIX}split").isNull(), F.lit(NO_SUBDIR))
    lookups = [
        F.try_element_at(
            F.col(f"{_PREFIX}map{i}"),
            F.array(*[F.col(f"row.`{c}`").cast("string") for c in cols]),
        )
        for i, cols in enumerate(ordered)
    ]
    number = number.otherwise(F.coalesce(*lookups, F.lit(DEFAULT_SUBDIR)))
    out = joined.select(
        *[F.col(f"`{c}`") for c in events.columns], number.cast("int").alias(SUBDIR_COL)
    )
    return out, subdir_names(partitions, layouts)


def skew_counts(
    rows: DataFrame, partition_columns: Sequence[str], columns: Sequence[str], top: int
) -> list[GroupCount]:
    """Per partition the ``top`` heaviest value tuples of ``columns`` with their row counts, the
    partition's row total and its number of distinct tuples: one pass over ``rows``.

    Values (and partition values) come back as Spark's ``CAST(v AS STRING)`` (``None`` for
    NULL); ties are broken by that text, NULL first, so the answer is deterministic. Spark groups
    on the typed values and hands the per-tuple counts over as Arrow; ranking them is cheap in
    Python (one entry per distinct tuple: list bucketing is for columns with thousands of values
    per partition, not billions).
    """
    parts = [F.col(f"`{c}`") for c in partition_columns]
    keys = [F.col(f"`{c}`").alias(f"{_PREFIX}v{i}") for i, c in enumerate(columns)]
    grouped = rows.groupBy(*parts, *keys).count()
    table = grouped.select(
        *[p.cast("string").alias(f"{_PREFIX}p{j}") for j, p in enumerate(parts)],
        *[F.col(f"{_PREFIX}v{i}").cast("string") for i in range(len(columns))],
        F.col("count"),
    ).toArrow()
    part_lists = [table.column(f"{_PREFIX}p{j}").to_pylist() for j in range(len(parts))]
    partitions = list(zip(*part_lists, strict=True)) if parts else [()] * table.num_rows
    values = zip(
        *[table.column(f"{_PREFIX}v{i}").to_pylist() for i in range(len(columns))], strict=True
    )
    by_partition: dict[tuple[str | None, ...], list[tuple[tuple[str | None, ...], int]]] = {}
    for partition, value, count in zip(
        partitions, values, table.column("count").to_pylist(), strict=True
    ):
        by_partition.setdefault(partition, []).append((value, int(count)))
    out = []
    for partition, groups in by_partition.items():
        total = sum(c for _, c in groups)
        out += [
            GroupCount(partition, values, count, total, len(groups), rank)
            for rank, (values, count) in enumerate(heaviest(groups, top), start=1)
        ]
    return out
