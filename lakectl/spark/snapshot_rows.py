"""A table state's rows as a Spark DataFrame: through lakectl's data source where it can serve
the read (:mod:`lakectl.spark.native_read`), else through the live-row kernel in Spark tasks
(:mod:`lakectl.spark.kernel_read`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.expr.convert import default_value
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.schema import Column as TableColumn
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from lakectl.scan.target import ReadTarget


@dataclass(frozen=True)
class ReadSpec:
    """What a read needs besides the plan: schemas, where the table lives, visibility."""

    storage: Storage
    root: str
    data_schema: Schema
    partition_schema: Schema
    valid: ValidWriteIds
    not_null_column: str | None = None  # a data column that is never null (the key), if any


def target_spec(target: ReadTarget) -> ReadSpec:
    """The reader's description of a resolved table state (:class:`lakectl.scan.target.
    ReadTarget`, as a :class:`lakectl.scan.plan.Scan` holds it): storage, schemas, valid
    write ids, key."""
    meta = target.metadata
    key = meta.data_key
    return ReadSpec(
        target.store.storage,
        target.store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        target.valid,
        key,
    )


def read_target(
    spark: SparkSession, target: ReadTarget, with_identity: bool = False
) -> tuple[DataFrame, str]:
    """The stored rows of ``target`` (no statement applied, no filter), and the path of
    :data:`READ_PATHS` the read took. ``with_identity`` adds each row's ACID identity."""
    return read_rows_and_path(spark, target.plans, target_spec(target), with_identity)


def default_column(column: TableColumn) -> Column:
    """``column``'s default as a Spark literal of its type (NULL without one)."""
    from lakectl.expr.tree import Lit
    from lakectl.spark.compile_expr import spark_column

    return spark_column(Lit(column.type, default_value(column)))


def rows_ddl(spec: ReadSpec, with_identity: bool = False) -> str:
    """The DDL of :func:`read_rows`' frame: data columns, partition columns, identity."""
    ddl = [f"`{c.name}` {c.type}" for c in spec.data_schema.columns]
    ddl += [f"`{c.name}` {c.type}" for c in spec.partition_schema.columns]
    if with_identity:
        ddl += ["originalTransaction bigint", "bucket int", "rowId bigint"]
    return ", ".join(ddl)


def empty_rows(spark: SparkSession, spec: ReadSpec, with_identity: bool = False) -> DataFrame:
    return spark.createDataFrame([], rows_ddl(spec, with_identity))


def read_rows(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool = False,
) -> DataFrame:
    """The snapshot's rows as a flat DataFrame: through lakectl's data source where it can
    serve the read (:mod:`native_read`), else by the live-row kernel in Spark tasks
    (:mod:`kernel_read`)."""
    return read_rows_and_path(spark, plans, spec, with_identity)[0]


# How a read got its rows (:func:`read_rows_and_path`; snapshot's --json names it).
READ_PATHS = ("data_source", "kernel", "none")


def read_rows_and_path(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool = False,
) -> tuple[DataFrame, str]:
    """:func:`read_rows`, and which of :data:`READ_PATHS` it took: lakectl's data source,
    the kernel in Spark tasks, or none (no file to read)."""
    from lakectl.spark.kernel_read import kernel_rows
    from lakectl.spark.native_read import native_rows

    rows = native_rows(spark, plans, spec, with_identity)
    if rows is not None:
        return rows, "data_source"
    rows = kernel_rows(spark, plans, spec, with_identity)
    if rows is not None:
        return rows, "kernel"
    return empty_rows(spark, spec, with_identity), "none"
