"""Skew bench: ``skew`` next to a plain Spark GROUP BY, and a point query on a skewed
value with and without list bucketing.

The table: ``rows`` rows over ``dates`` ``ds`` partitions, a column ``x`` with ~3,000 values per
partition of which 10 (different per day) hold ~60% of the rows, plus payload columns. Loaded by
one ``lakectl load --mode append`` in this process's warm session.

Targets: ``skew`` <= 1.3x a plain Spark ``GROUP BY ds, x`` count over the same snapshot
DataFrame lakectl reads (both collect their result; best of two runs each, the machine is
shared); the point query ``ds = d AND x = hot`` after ``list-bucket`` reads at most the value's
share of the partition + 5% of its bytes, and takes less time than on the plain layout.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from bench import load_bench as lb

HOT = 10
DISTINCT = 3000
TARGETS = {"skew_vs_groupby": 1.3, "point_query_lb_vs_plain": 1.0}
LABELS = {
    "skew_load": "lakectl: create + load (append)",
    "skew": "lakectl skew --column x",
    "groupby": "ref: Spark GROUP BY ds, x count (same snapshot frame)",
    "list_bucket": "lakectl list-bucket --auto (10 hot values per day)",
    "point_plain": "point query ds = d AND x = hot, plain layout",
    "point_lb": "point query ds = d AND x = hot, list-bucketed",
}


def _generate(spark, path: str, rows: int, dates: int) -> None:
    """Per day a different hot set: value ``day * 100000 + k`` for k < 10 holds ~6% each."""
    from pyspark.sql import functions as F

    day = (F.col("id") % dates).cast("int")
    hot = F.rand(7) < 0.6
    hot_value = day * 100_000 + (F.rand(8) * HOT).cast("int")
    cold_value = day * 100_000 + HOT + (F.rand(9) * (DISTINCT - HOT)).cast("int")
    frame = spark.range(rows).select(
        F.col("id"),
        F.when(hot, hot_value).otherwise(cold_value).cast("int").alias("x"),
        F.sha2(F.col("id").cast("string"), 256).alias("payload"),
        (F.rand(10) * 1000).alias("amount"),
        F.date_format(F.date_add(F.lit("2024-01-01"), day), "yyyy-MM-dd").alias("ds"),
    )
    frame.write.mode("overwrite").parquet(path)


def _best(step: str, fn, runs: int = 2) -> lb.Timing:
    timings = [lb.timed(step, fn)[0] for _ in range(runs)]
    return min(timings, key=lambda t: t.seconds)


def _point_query(ctx, table: str, where: str) -> dict[str, Any]:
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.scan.pruning import prune_target
    from lakectl.scan.target import open_for_read

    target, scan = prune_target(open_for_read(ctx.table(table)), where)
    rows = snapshot_frame(ctx, target, SnapshotRequest()).where(where).count()
    return {"rows": rows, **scan.to_dict()}


def run(spark, data_dir: str, rows: int, dates: int, keep: bool) -> dict[str, Any]:
    """Build the table, time the steps, return timings, checks and ratios."""
    from lakectl.ops.list_bucket import ListBucketOptions, list_bucket
    from lakectl.ops.load import LoadOptions, load
    from lakectl.ops.skew import SkewOptions, skew
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.scan.target import open_for_read

    root = os.path.join(data_dir, f"skew_n{rows}")
    source, table = os.path.join(root, "data"), os.path.join(root, "warehouse", "events")
    shutil.rmtree(root, ignore_errors=True)
    lb.log(f"skew bench: {rows:,} rows, {dates} days, {HOT} hot values of {DISTINCT} per day")
    _generate(spark, source, rows, dates)
    ctx = lb.lakectl_context(os.path.join(root, "warehouse"))
    options = LoadOptions(source=source, format="parquet", mode="append", partition_by=("ds",))
    timings = [lb.timed("skew_load", lambda: load(ctx, table, options))[0]]

    skew_timing = _best("skew", lambda: skew(ctx, table, SkewOptions(("x",))))
    result = skew(ctx, table, SkewOptions(("x",)))

    def group_by() -> int:
        frame = snapshot_frame(ctx, open_for_read(ctx.table(table)), SnapshotRequest())
        return len(frame.groupBy("ds", "x").count().collect())

    groupby_timing = _best("groupby", group_by)
    first = result.partitions[0]
    hot_value = first.top[0].values[0]
    day = first.partition.split("=", 1)[1]
    where = f"ds = '{day}' AND x = {hot_value}"
    plain_timing = _best("point_plain", lambda: _point_query(ctx, table, where))
    plain = _point_query(ctx, table, where)
    keys = ",".join(v[0] for v in first.recommended)
    lb_timing, lb_result = lb.timed(
        "list_bucket",
        lambda: list_bucket(
            ctx,
            table,
            ListBucketOptions(columns=("x",), auto=True, max_values=HOT, min_share=0.01),
        ),
    )
    lb_timing.detail = {"partitions": len(lb_result.rewritten), "rows": lb_result.rows_written}
    split_timing = _best("point_lb", lambda: _point_query(ctx, table, where))
    split = _point_query(ctx, table, where)
    partition_bytes = plain["bytes_read"]
    share = first.top[0].share
    bytes_fraction = split["bytes_read"] / partition_bytes if partition_bytes else 1.0
    timings += [skew_timing, groupby_timing, plain_timing, lb_timing, split_timing]
    checks = {
        "point_rows": "ok"
        if plain["rows"] == split["rows"] == first.top[0].rows
        else f"MISMATCH: plain {plain['rows']}, split {split['rows']}, skew {first.top[0].rows}",
        "hot_values": "ok"
        if len(first.recommended) == HOT
        else f"recommended {len(first.recommended)} values ({keys})",
    }
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "rows": rows,
        "dates": dates,
        "hot_share": round(sum(v.share for v in first.top[:HOT]), 3),
        "point_query": {"where": where, "share": round(share, 4), "plain": plain, "split": split},
        "timings": [t.to_json() for t in timings],
        "checks": checks,
        "ratios": [
            _ratio("skew_vs_groupby", "skew / plain Spark GROUP BY ds, x", skew_timing.seconds,
                   groupby_timing.seconds, TARGETS["skew_vs_groupby"]),
            _ratio("point_query_lb_vs_plain", "point query time: list-bucketed / plain",
                   split_timing.seconds, plain_timing.seconds, TARGETS["point_query_lb_vs_plain"]),
            _ratio("point_query_bytes", f"point query bytes read / partition (value share {share:.1%})",
                   bytes_fraction, 1.0, round(share + 0.05, 3)),
        ],
    }  # fmt: skip


def _ratio(name: str, label: str, num: float, den: float, target: float) -> dict[str, Any]:
    value = num / den if den > 0 else float("inf")
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": f"<= {target}",
        "pass": value <= target,
    }


def render(result: dict[str, Any]) -> list[str]:
    """Timing lines for the text summary (the ratios are listed with the others)."""
    lines = [
        "",
        f"== skew: {result['rows']:,} rows, {result['dates']} days, {HOT} hot values hold "
        f"{result['hot_share']:.0%} of the first day",
    ]
    lines += lb.timing_lines(result["timings"], LABELS)
    q = result["point_query"]
    lines.append(
        f"  point query {q['where']}: plain reads {q['plain']['files_read']} files / "
        f"{q['plain']['bytes_read']:,} B, list-bucketed {q['split']['files_read']} files / "
        f"{q['split']['bytes_read']:,} B"
    )
    bad = {k: v for k, v in result["checks"].items() if v != "ok"}
    lines.append("  checks: " + ("rows equal, 10 hot values found" if not bad else str(bad)))
    return lines
