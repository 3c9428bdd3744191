"""A scan read by Spark: the stored rows of a :class:`~lakectl.scan.plan.Scan` (through
lakectl's data source or the live-row kernel in Spark tasks), its Type 7 statements,
its bound ``where`` (built as Spark Columns: the text never reaches Spark's parser), its order
and its projection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakectl.errors import UnknownColumnError, UsageError
from lakectl.scan.plan import Scan
from lakectl.spark.snapshot_rows import read_target

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def scan_frame(spark: SparkSession, scan: Scan) -> tuple[DataFrame, str]:
    """The rows ``scan`` reads as a lazy DataFrame, and how the stored rows are read
    (:data:`lakectl.spark.snapshot_rows.READ_PATHS`)."""
    from pyspark.sql import functions as F

    from lakectl.spark.compile_expr import spark_column

    df, read_path = read_target(spark, scan.target)
    condition = spark_column(scan.where) if scan.where is not None else None
    # Statements change rows one at a time, so a predicate on columns none of them sets selects
    # the same rows before them as after: filtering first lets Spark push it into the scan.
    if condition is not None and scan.filter_first:
        df = df.where(condition)
    df = with_statements(df, scan)
    if condition is not None and not scan.filter_first:
        df = df.where(condition)
    if scan.order_by:
        df = df.orderBy(*sort_columns(scan.order_by, scan.metadata.schema.names))
    if scan.request.columns:
        df = df.select(*[F.col(f"`{c}`") for c in scan.columns])
    return df, read_path


def with_statements(df: DataFrame, scan: Scan) -> DataFrame:
    """``df`` (the stored rows of ``scan``) with the scan's Type 7 statements applied."""
    from lakectl.spark.statement_compile import apply_statements

    if not scan.statements:
        return df
    return apply_statements(df, list(scan.statements), scan.metadata.schema)


def sort_columns(order_by: tuple[str, ...], names: tuple[str, ...] | list[str]) -> list[Any]:
    """Spark sort columns for ``--order-by a,b desc``; unknown names are a usage error. Nulls
    sort first ascending and last descending, as in Spark SQL."""
    from pyspark.sql import functions as F

    by_lower = {n.lower(): n for n in names}
    out, unknown = [], []
    for item in order_by:
        name, _, direction = item.strip().partition(" ")
        direction = direction.strip().lower()
        if direction not in ("", "asc", "desc"):
            raise UsageError(
                f"--order-by {item!r}: expected COLUMN, COLUMN asc or COLUMN desc",
                hint='e.g. --order-by "create_date,sell_id desc"',
            )
        column = by_lower.get(name.lower())
        if column is None:
            unknown.append(name)
            continue
        ref = F.col(f"`{column}`")
        out.append(ref.desc() if direction == "desc" else ref.asc())
    if unknown:
        raise UnknownColumnError(
            f"--order-by: unknown column(s) {', '.join(unknown)} (columns: {', '.join(names)})"
        )
    return out


__all__ = ["scan_frame", "sort_columns", "with_statements"]
