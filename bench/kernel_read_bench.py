"""Spark's read where the data source cannot serve it (the live-row kernel in Spark tasks)
against the data source itself, on one table: ``python -m bench.kernel_read_bench [ROWS]``.

The table (default 200,000 rows, 4 partitions, 4 buckets) gets three CDC loads with updates
and deletes, so that every read merges deltas and delete deltas. Each path then reads it warm
(an aggregate over every column, so no column is pruned): the median of five runs, in wall
seconds. Prints one JSON line with the times of both, and of Spark's joins (the path left for
tables with timestamp columns), and their ratios to the data source.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from typing import Any

SCHEMA = "id bigint, qty int, amount decimal(12,2), note string, day date, region string"


def _frame(spark: Any, start: int, rows: int, salt: int, ops: bool) -> Any:
    from pyspark.sql import functions as F

    frame = spark.range(start, start + rows).select(
        F.col("id"),
        ((F.col("id") * 7 + salt) % 1000).cast("int").alias("qty"),
        ((F.col("id") % 10007) / 100 + salt).cast("decimal(12,2)").alias("amount"),
        F.concat(F.lit("note-"), (F.col("id") % 97).cast("string")).alias("note"),
        F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 300).cast("int")).alias("day"),
        F.element_at(
            F.array(*map(F.lit, ["east", "west", "north", "south"])),
            (F.col("id") % 4 + 1).cast("int"),
        ).alias("region"),
    )
    if ops:
        frame = frame.withColumn("op", F.when(F.col("id") % 5 == 0, "D").otherwise("U"))
    return frame


def _timed(frame_of: Any, runs: int = 5) -> float:
    from pyspark.sql import functions as F

    times = []
    for _ in range(runs):
        started = time.perf_counter()
        frame = frame_of()
        frame.agg(*[F.count(F.col(f"`{c}`")) for c in frame.columns]).collect()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    import lakectl
    from lakectl.spark.kernel_read import ENABLED_CONF as KERNEL
    from lakectl.spark.native_read import ENABLED_CONF
    from lakectl.spark.session import SparkSettings, get_session

    rows = int(argv[0]) if argv else 200_000
    spark = get_session(SparkSettings(master="local[2]"))
    with tempfile.TemporaryDirectory() as tmp:
        table = lakectl.create_table(
            f"{tmp}/bench", schema=SCHEMA, primary_key="id", partition_by="region", buckets=4,
            spark=spark,
        )  # fmt: skip
        table.load(_frame(spark, 0, rows, 0, False), mode="append")
        for salt in (1, 2, 3):
            batch = _frame(spark, salt * rows // 10, rows // 20, salt, True)
            table.load(batch, mode="cdc", op_column="op")

        def read(native: str, kernel: str = "true") -> Any:
            spark.conf.set(ENABLED_CONF, native)
            spark.conf.set(KERNEL, kernel)
            try:
                return table.scan().to_spark()
            finally:
                spark.conf.unset(ENABLED_CONF)
                spark.conf.unset(KERNEL)

        count = read("true").count()
        assert count == read("false").count() == read("false", "false").count()
        for native, kernel_on in (("true", "true"), ("false", "true"), ("false", "false")):
            _timed(lambda n=native, k=kernel_on: read(n, k), runs=2)  # warm each path
        source = _timed(lambda: read("true"))
        kernel = _timed(lambda: read("false"))
        joins = _timed(lambda: read("false", "false"))
    print(
        json.dumps(
            {
                "rows": count,
                "data_source_s": round(source, 3),
                "kernel_s": round(kernel, 3),
                "joins_s": round(joins, 3),
                "ratio": round(kernel / source, 2),
                "joins_ratio": round(joins / source, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
