"""A cold CDC load as cron runs it: one new ``lakectl load`` process applying a 400-row CDC batch
(updates, inserts, deletes, late changes) to a 2,000-row table, with ``--engine arrow`` (no JVM)
and with Spark.

    python -m bench.arrow_load_bench                  # 5 Arrow runs (median) and 1 Spark run
    python -m bench.run_all --only arrow-load         # the same inside `make bench`

Target: the Arrow engine's cold load takes at most 1.5 s of wall time. Each run loads into a
fresh copy of the same table (the batch would otherwise be skipped as loaded already), and the
two engines' tables must read the same rows afterwards.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import load_bench as lb

TABLE_ROWS = 2_000
BATCH_ROWS = 400
SCHEMA = "id bigint, change_ts string, amount decimal(10,2), note string, qty int, day string"
CDC_ARGS = ["--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts"]
TARGET_SECONDS = 1.5
LABELS = {
    "arrow_cold_load": "lakectl load --engine arrow (new process, median)",
    "spark_cold_load": "lakectl load --engine spark (new process, JVM start included)",
}


def _row(rng: random.Random, key: int, minute: int, op: str) -> dict[str, Any]:
    return {
        "op_code": op,
        "id": key,
        "change_ts": f"2024-01-01 {minute // 60:02d}:{minute % 60:02d}:00",
        "amount": f"{rng.uniform(-1000, 1000):.2f}",
        "note": rng.choice(["plain", "with, comma", None]),
        "qty": rng.randint(0, 500),
        "day": f"2024-01-0{1 + key % 5}",
    }


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(
            handle, ["op_code", "id", "change_ts", "amount", "note", "qty", "day"]
        )
        writer.writeheader()
        writer.writerows(rows)
    return path


def build(root: Path) -> tuple[Path, Path]:
    """The 2,000-row table (loaded by the Arrow engine in this process) and the batch."""
    import lakectl

    rng = random.Random(34)
    base = _write(root / "base.csv", [_row(rng, k, 60, "I") for k in range(TABLE_ROWS)])
    batch: list[dict[str, Any]] = []
    keys = rng.sample(range(TABLE_ROWS), 300)
    batch += [_row(rng, k, 120, "U") for k in keys[:200]]  # newer: updates
    batch += [_row(rng, k, 120, "D") for k in keys[200:260]]  # deletes
    batch += [_row(rng, k, 30, "U") for k in keys[260:300]]  # late: ignored
    batch += [_row(rng, TABLE_ROWS + i, 120, "I") for i in range(100)]  # new keys
    rng.shuffle(batch)
    batch_path = _write(root / "batch.csv", batch[:BATCH_ROWS])
    table = root / "table"
    made = lakectl.create_table(str(table), schema=SCHEMA, primary_key="id", partition_by="day")
    made.load(str(base), mode="cdc", op_column="op_code", order_by="change_ts", engine="arrow")
    return table, batch_path


def cold_load(step: str, table: Path, batch: Path, engine: str) -> lb.Timing:
    """``lakectl load`` of ``batch`` into a fresh copy of ``table``, as a new process."""
    copy = table.with_name(f"{table.name}_{engine}_{time.monotonic_ns()}")
    shutil.copytree(table, copy)
    exe = Path(sys.executable).with_name("lakectl")
    cmd = [str(exe), "load", str(copy), str(batch), *CDC_ARGS, "--engine", engine, "--json"]
    # As an installed package: compiled modules are written once and read after.
    drop = ("PYTHONDONTWRITEBYTECODE",)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k not in drop}
    timing, done = lb.timed(
        step, lambda: subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")
    out = json.loads(done.stdout)
    timing.detail = {"counts": out["counts"], "in_process_s": out["seconds"], "table": str(copy)}
    return timing


def _rows(path: str) -> list[tuple]:
    import lakectl

    data = lakectl.open_table(path).scan(engine="arrow").to_arrow()
    return sorted((tuple(r.values()) for r in data.to_pylist()), key=repr)


def run(data_dir: str, repeats: int = 5, with_spark: bool = True) -> dict[str, Any]:
    """Build the table and time the cold loads; the report's part."""
    root = Path(data_dir) / "arrow_load"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    table, batch = build(root)
    lb.log(f"arrow load bench: {repeats} cold Arrow loads")
    cold_load("arrow_first_load", table, batch, "arrow")  # untimed: writes the .pyc files
    runs = [cold_load("arrow_cold_load", table, batch, "arrow") for _ in range(repeats)]
    arrow = lb.Timing(
        "arrow_cold_load",
        statistics.median(r.seconds for r in runs),
        runs[0].load_before,
        runs[-1].load_after,
        {**runs[0].detail, "runs_s": [round(r.seconds, 3) for r in runs]},
    )
    timings = [arrow]
    checks = {}
    ratios = [
        {
            "name": "arrow_cold_load_s",
            "label": f"cold CDC load --engine arrow, {BATCH_ROWS} into {TABLE_ROWS:,} rows (s)",
            "value": round(arrow.seconds, 3),
            "target": TARGET_SECONDS,
            "pass": arrow.seconds <= TARGET_SECONDS,
        }
    ]
    if with_spark:
        lb.log("arrow load bench: one cold Spark load")
        spark = cold_load("spark_cold_load", table, batch, "spark")
        timings.append(spark)
        same = _rows(arrow.detail["table"]) == _rows(spark.detail["table"])
        checks["rows_equal_across_engines"] = "ok" if same else "DIFFER"
        checks["counts_equal"] = (
            "ok"
            if arrow.detail["counts"] == spark.detail["counts"]
            else (f"{arrow.detail['counts']} vs {spark.detail['counts']}")
        )
        spark.detail["arrow_vs_spark"] = round(arrow.seconds / spark.seconds, 3)
    shutil.rmtree(root, ignore_errors=True)
    return {
        "table_rows": TABLE_ROWS,
        "batch_rows": BATCH_ROWS,
        "timings": [t.to_json() for t in timings],
        "checks": checks,
        "ratios": ratios,
    }


def render(result: dict[str, Any]) -> list[str]:
    """Markdown lines for the report."""
    lines = [
        "",
        f"### Cold CDC load ({result['batch_rows']} changes into {result['table_rows']:,} rows)",
        "",
    ]
    lines += lb.timing_lines(result["timings"], LABELS)
    lines.append("")
    for r in result["ratios"]:
        mark = "met" if r["pass"] else "MISSED"
        lines.append(f"- {r['label']}: {r['value']} (target <= {r['target']}: {mark})")
    spark = [t for t in result["timings"] if t["step"] == "spark_cold_load"]
    if spark:
        lines.append(f"- cold CDC load, arrow / spark: {spark[0]['arrow_vs_spark']}")
    bad = {k: v for k, v in result["checks"].items() if v != "ok"}
    lines.append(f"- checks: {bad or 'all ok'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.arrow_load_bench", description=__doc__)
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "lakectl-bench"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-spark", action="store_true", help="time the Arrow engine only")
    args = parser.parse_args(argv)
    result = run(args.data_dir, args.repeats, with_spark=not args.no_spark)
    print("\n".join(render(result)))
    print(json.dumps(result, indent=1))
    return 0 if all(r["pass"] for r in result["ratios"]) else 1


if __name__ == "__main__":
    sys.exit(main())
