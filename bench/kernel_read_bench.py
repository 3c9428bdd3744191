"""Spark's read where the data source cannot serve it (the live-row kernel in Spark tasks)
against the data source itself, on one table: ``python -m bench.kernel_read_bench [ROWS]
[--runs N]`` or ``python -m bench.run_all --only kernel-read``.

The table (default 200,000 rows, 4 partitions, 4 buckets) gets three CDC loads with updates
and deletes, so that every read merges deltas and delete deltas. Each path then reads it warm
(an aggregate over every column, so no column is pruned), after two untimed reads each: the
median of :data:`RUNS` runs, in wall seconds. Prints one JSON line with both times and their
ratio (kernel / data source; target at most :data:`TARGET`).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from bench import load_bench as lb

RUNS = 5  # timed warm reads per path (the median is reported)
WARM_UP = 2  # untimed reads per path first
TARGET = 1.5  # the kernel's read at most this many times the data source's
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


def _timed(frame_of: Any, runs: int) -> list[float]:
    from pyspark.sql import functions as F

    times = []
    for _ in range(runs):
        started = time.perf_counter()
        frame = frame_of()
        frame.agg(*[F.count(F.col(f"`{c}`")) for c in frame.columns]).collect()
        times.append(time.perf_counter() - started)
    return times


def _arrow_timed(table: Any, runs: int) -> list[float]:
    """The same rows read by the same kernel in this process (``to_arrow``, no Spark task):
    what the kernel itself costs, next to what running it in Spark's tasks adds."""
    table.scan(engine="arrow").to_arrow()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        table.scan(engine="arrow").to_arrow()
        times.append(time.perf_counter() - started)
    return times


def run(spark: Any, data_dir: str, rows: int, runs: int = RUNS) -> dict[str, Any]:
    """Build the table under ``data_dir``, read it warm both ways; timings and the ratio."""
    import lakectl
    from lakectl.spark.native_read import ENABLED_CONF

    os.makedirs(data_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=data_dir) as tmp:
        started = time.perf_counter()
        table = lakectl.create_table(
            f"{tmp}/bench", schema=SCHEMA, primary_key="id", partition_by="region", buckets=4,
            spark=spark,
        )  # fmt: skip
        table.load(_frame(spark, 0, rows, 0, False), mode="append")
        for salt in (1, 2, 3):
            batch = _frame(spark, salt * rows // 10, rows // 20, salt, True)
            table.load(batch, mode="cdc", op_column="op")
        build = time.perf_counter() - started
        lb.log(f"kernel read bench: table of {rows:,} rows built in {build:.1f} s")

        def read(native: str) -> Any:
            spark.conf.set(ENABLED_CONF, native)
            try:
                return table.scan().to_spark()
            finally:
                spark.conf.unset(ENABLED_CONF)

        count = read("true").count()
        assert count == read("false").count()
        for native in ("true", "false"):  # warm both paths
            _timed(lambda n=native: read(n), runs=WARM_UP)
        load_before = os.getloadavg()[0]
        source = _timed(lambda: read("true"), runs)
        kernel = _timed(lambda: read("false"), runs)
        arrow = _arrow_timed(table, runs)
        load_after = os.getloadavg()[0]
    source_s, kernel_s = statistics.median(source), statistics.median(kernel)
    ratio = kernel_s / source_s
    return {
        "rows": count,
        "build_s": round(build, 1),
        "data_source_s": round(source_s, 3),
        "kernel_s": round(kernel_s, 3),
        "data_source_runs_s": [round(t, 3) for t in source],
        "kernel_runs_s": [round(t, 3) for t in kernel],
        "arrow_s": round(statistics.median(arrow), 3),
        "loadavg_1m": [round(load_before, 2), round(load_after, 2)],
        "ratio": round(ratio, 2),
        "ratios": [
            {
                "name": "kernel_vs_data_source",
                "label": "Spark fallback (kernel in tasks) / data source, warm",
                "value": round(ratio, 3),
                "target": f"<= {TARGET}",
                "pass": ratio <= TARGET,
            }
        ],
    }


def render(result: dict[str, Any]) -> list[str]:
    """Timing lines for the text summary."""
    load = result["loadavg_1m"]
    return [
        "",
        f"== Spark without the data source: {result['rows']:,} rows, 4 partitions x 4 buckets, "
        f"3 CDC loads (table built in {result['build_s']:.0f} s)",
        f"  data source, warm (median of {len(result['data_source_runs_s'])})  "
        f"{result['data_source_s']:>8.2f} s",
        f"  kernel in Spark tasks, warm (median of {len(result['kernel_runs_s'])})  "
        f"{result['kernel_s']:>8.2f} s   load {load[0]:.1f}->{load[1]:.1f}",
        f"  reference: to_arrow of the same rows, in this process  {result['arrow_s']:>8.2f} s",
    ]


def main(argv: list[str]) -> int:
    import argparse

    from lakectl.spark.session import SparkSettings, get_session

    parser = argparse.ArgumentParser(prog="python -m bench.kernel_read_bench")
    parser.add_argument("rows", nargs="?", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=RUNS, help="timed reads per path")
    parser.add_argument("--data-dir", default=tempfile.gettempdir())
    args = parser.parse_args(argv)
    spark = get_session(SparkSettings(master="local[2]"))
    result = run(spark, args.data_dir, args.rows, args.runs)
    print(json.dumps({k: v for k, v in result.items() if k != "ratios"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
