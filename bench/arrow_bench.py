"""Arrow reader bench: a full read of a table with 10 deltas, and of its compacted base, through
``Table.to_arrow`` (pyarrow, no JVM) next to the Spark path; cold commands; ``to_batches`` memory.

Targets (next to Spark on the same table, in one run):

- ``to_arrow`` no slower than Spark's warm read (``arrow_vs_spark_warm`` <= 1.0): warm, in this
  process, medians of :data:`REPEATS` after one untimed round. The Spark side is the compaction
  bench's warm read (merge-on-read of every column, an aggregate over all of them: the rows
  never leave the JVM); the Arrow side materializes every row as a ``pyarrow.Table``.
- a cold ``lakectl snapshot --engine arrow --out DIR`` at most a third of the cold Spark command
  (``arrow_cold_vs_spark_cold`` <= 1/3): each a new ``python -m lakectl`` process, as cron runs
  it, JVM start included (that is the point of the Arrow engine).
- ``to_batches`` peak memory within 2x the largest partition's decoded size
  (``to_batches_peak_vs_partition`` <= 2.0): in a new process, the peaks of pyarrow's default
  and system memory pools, added, while every batch is read and dropped, against the decoded
  size of the largest partition.

    python -m bench.run_all --only arrow [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

from bench import compact_bench as cb
from bench import datagen
from bench import load_bench as lb

REPEATS = 3
TARGETS = {
    "arrow_vs_spark_warm": 1.0,
    "arrow_cold_vs_spark_cold": 1 / 3,
    "to_batches_peak_vs_partition": 2.0,
}
LABELS = {
    "generate_parquet": "data: base + 10 batches as Parquet (numpy + pyarrow)",
    "compact_base_load": "table: create + base load (lakectl, Spark)",
    "compact_cdc_loads": "table: 10 CDC loads (lakectl, Spark, warm)",
    "copy_cached_table": "table: copied from the bench's table cache",
    "arrow_read_deltas": "to_arrow, base + 10 deltas (warm, median)",
    "spark_read_deltas": "Spark, base + 10 deltas (warm, median)",
    "arrow_read_base": "to_arrow, compacted base (warm, median)",
    "spark_read_base": "Spark, compacted base (warm, median)",
    "arrow_cold_out": "lakectl snapshot --engine arrow --out (new process)",
    "spark_cold_out": "lakectl snapshot --out (new process, JVM start included)",
    "to_batches_memory": "to_batches: pyarrow peak bytes, new process",
}

# Run in a new process: read every batch, keep nothing; print the pool's peak and the decoded
# size of the largest partition (a batch holds rows of one partition: its partition value).
_MEMORY_PROBE = """
import json, sys
from collections import Counter
import pyarrow as pa
import lakectl
sizes, rows = Counter(), 0
for batch in lakectl.open_table(sys.argv[1]).scan().to_batches():
    if batch.num_rows:
        sizes[batch.column(sys.argv[2])[0].as_py()] += batch.nbytes
    rows += batch.num_rows
    del batch
largest = max(sizes.values(), default=0)
# the reader allocates in pyarrow's default pool and (the rows it keeps) in the system pool
peak = pa.default_memory_pool().max_memory() + pa.system_memory_pool().max_memory()
print(json.dumps({"peak": peak, "largest": largest, "rows": rows}))
"""


def _arrow_read(table: str, step: str) -> lb.Timing:
    import lakectl

    timing, result = lb.timed(
        step, lambda: lakectl.open_table(table).scan(engine="arrow").to_arrow()
    )
    timing.detail["rows"] = result.num_rows
    return timing


def _warm(step: str, read: Any) -> lb.Timing:
    read()  # untimed: imports, caches, JIT
    runs = [read() for _ in range(REPEATS)]
    out = lb.Timing(
        step, statistics.median(r.seconds for r in runs), runs[0].load_before, runs[-1].load_after
    )
    out.detail = {"rows": runs[-1].detail["rows"], "runs_s": [round(r.seconds, 3) for r in runs]}
    return out


def _cold(step: str, table: str, out_dir: str, *engine: str) -> lb.Timing:
    shutil.rmtree(out_dir, ignore_errors=True)
    command = [sys.executable, "-m", "lakectl", "snapshot", table, "--out", out_dir, *engine]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed: {done.stdout[-1000:]}{done.stderr[-1000:]}"
        )
    timing = lb.Timing(step, seconds, load_before, os.getloadavg()[0])
    timing.detail["rows"] = json.loads(done.stdout)["rows_written"]
    return timing


def _memory(table: str) -> lb.Timing:
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, table, datagen.PARTITION_BY],
        capture_output=True,
        text=True,
        check=True,
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    timing = lb.Timing(
        "to_batches_memory", time.perf_counter() - started, load_before, os.getloadavg()[0]
    )
    timing.detail = probe
    return timing


def run(spark, data_dir: str, rows: int, dates: int, keep: bool) -> dict[str, Any]:
    """Build the table (the compaction bench's: a base and 10 CDC batches of 1%), time both
    engines before and after a major compaction, then the cold commands and the memory."""
    root = os.path.join(data_dir, f"arrow_n{rows}")
    built: list[lb.Timing] = []
    cache = os.path.join(data_dir, "tables")
    ctx, table, dataset = cb.build_table(spark, root, rows, 0.01, dates, built, cache=cache)
    expected = dataset.expected_rows()
    lb.log("arrow bench: reads with 10 deltas")
    spark_deltas = _warm(
        "spark_read_deltas", lambda: cb._read_layout(ctx, cb._layout(ctx, table), "r")
    )
    arrow_deltas = _warm("arrow_read_deltas", lambda: _arrow_read(table, "a"))
    cold_arrow = _cold(
        "arrow_cold_out", table, os.path.join(root, "out_arrow"), "--engine", "arrow"
    )
    cold_spark = _cold("spark_cold_out", table, os.path.join(root, "out_spark"))
    memory = _memory(table)
    lb.log("arrow bench: major compaction, then reads of the base")
    cb._compact(ctx, table)
    spark_base = _warm("spark_read_base", lambda: cb._read_layout(ctx, cb._layout(ctx, table), "r"))
    arrow_base = _warm("arrow_read_base", lambda: _arrow_read(table, "a"))
    timings = [spark_deltas, arrow_deltas, spark_base, arrow_base, cold_arrow, cold_spark, memory]
    checks = {t.step: cb._check(t.detail["rows"], expected) for t in timings}
    timings = built + timings
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    peak, largest = memory.detail["peak"], memory.detail["largest"]
    return {
        "rows": rows,
        "timings": [t.to_json() for t in timings],
        "checks": checks,
        "ratios": [
            _ratio(
                "arrow_vs_spark_warm", "to_arrow / Spark, 10 deltas", arrow_deltas, spark_deltas
            ),
            _ratio(
                "arrow_vs_spark_warm", "to_arrow / Spark, compacted base", arrow_base, spark_base
            ),
            _ratio(
                "arrow_cold_vs_spark_cold",
                "cold snapshot --out, arrow / spark",
                cold_arrow,
                cold_spark,
            ),
            {
                "name": "to_batches_peak_vs_partition",
                "label": "to_batches peak memory / largest partition decoded",
                "value": round(peak / largest, 2) if largest else None,
                "target": TARGETS["to_batches_peak_vs_partition"],
                "pass": bool(largest) and peak / largest <= TARGETS["to_batches_peak_vs_partition"],
                "detail": {"peak_bytes": peak, "largest_partition_bytes": largest},
            },
        ],
    }


def _ratio(name: str, label: str, num: lb.Timing, den: lb.Timing) -> dict[str, Any]:
    value = num.seconds / den.seconds if den.seconds > 0 else float("inf")
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": round(TARGETS[name], 3),
        "pass": value <= TARGETS[name],
    }


def render(result: dict[str, Any]) -> list[str]:
    """Markdown lines for the report."""
    lines = [f"### Arrow reader ({result['rows']:,} rows, 10 deltas, then compacted)", ""]
    lines += lb.timing_lines(result["timings"], LABELS)
    lines.append("")
    for r in result["ratios"]:
        mark = "met" if r["pass"] else "MISSED"
        lines.append(f"- {r['label']}: {r['value']} (target <= {r['target']}: {mark})")
    bad = {k: v for k, v in result["checks"].items() if v != "ok"}
    lines.append(f"- row checks: {bad or 'all ok'}")
    return lines
