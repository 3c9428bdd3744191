"""``make bench``: lakectl's CDC load and snapshot next to delta-rs MERGE and a naive Spark rewrite.

    python -m bench.run_all                      # 2M and 10M rows, batches of 5% (100k / 500k)
    BENCH_QUICK=1 python -m bench.run_all        # smoke run: 100k and 500k rows
    python -m bench.run_all --sizes 2000000      # one size (no growth figure)
    python -m bench.run_all --only compact       # only the compaction bench
    python -m bench.run_all --only skew --quick  # only the skew / list-bucketing bench
    python -m bench.run_all --only updates       # only Type 7 statements on read
    python -m bench.run_all --only arrow         # only the JVM-free Arrow reader next to Spark
    python -m bench.run_all --only dml           # only delete/update/restore next to delta-rs
    python -m bench.run_all --only arrow-load    # only a cold CDC load, --engine arrow and spark
    python -m bench.run_all --only arrow-scale   # only the Arrow engine's load and delete at 10M
    python -m bench.run_all --only kernel-read   # only Spark's read without the data source
                                                 # (the live-row kernel in tasks) next to it
    python -m bench.run_all --only statement-reads  # only what installed statements add to a
                                                 # read of the sample table (0 to 2,000)
    python -m bench.run_all --only stream        # only `lakectl stream` latency + deltas
                                                 # (not part of the default run: see bench.stream_latency)

Settings (flag / environment variable):
  --sizes / BENCH_SIZES            table sizes, comma separated (default 2000000,10000000)
  --batch-fraction / BENCH_BATCH_FRACTION   CDC batch size as a fraction of the table (0.05)
  --dates / BENCH_DATES            create_date partitions (40)
  --data-dir / BENCH_DATA_DIR      where data and tables go (default: $TMPDIR/lakectl-bench)
  --keep / BENCH_KEEP=1            keep generated data and tables (generation is then reused)
  --quick / BENCH_QUICK=1          sizes 100000,500000
  --skip-cold / BENCH_SKIP_COLD=1  no cold-JVM subprocess load (the first batch loads warm)
  --snapshot-out / BENCH_SNAPSHOT_OUT=1  also time `snapshot --out DIR --format parquet` (slow)
  --only / BENCH_ONLY              `load`, `compact`, `skew`, `updates`, `arrow`, `dml`,
                                   `arrow-scale`, `kernel-read` or `statement-reads`: only that
                                   part (default: all)
  --arrow-rows / BENCH_ARROW_ROWS  Arrow reader and Arrow load/delete bench table size
                                   (10000000; quick: 500000; the CDC batch: 5% of it)
  --dml-rows / BENCH_DML_ROWS      delete/update/restore bench table size (10000000; quick: 500000)
  --kernel-rows / BENCH_KERNEL_ROWS  Spark fallback read bench table size (10000000;
                                   quick: 200000)
  --compact-rows / BENCH_COMPACT_ROWS  compaction bench table size (10000000; quick: 500000)
  --skew-rows / BENCH_SKEW_ROWS    skew bench table size (4000000; quick: 400000)
  --updates-rows / BENCH_UPDATES_ROWS  Type 7 bench table size (10000000; quick: 200000);
                                   --statements, --repeats: see bench.updates_bench

Per size, in load order, batches named: cold (size x fraction), warmup (same size), warm_small
(the smallest size's batch size; only for larger tables: the growth figure), warm (size x
fraction). lakectl loads cold in a new `lakectl load` process, the rest in this process's session;
delta-rs MERGEs the same batches in the same order; the naive rewrite applies `warm` to the base.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench import (
    arrow_bench,
    arrow_load_bench,
    arrow_scale_bench,
    compact_bench,
    datagen,
    dml_bench,
    kernel_read_bench,
    skew_bench,
)
from bench import load_bench as lb
from bench import statement_reads_bench as srb
from bench import updates_bench as ub

ONLY_CHOICES = (
    "load", "compact", "skew", "updates", "arrow", "arrow-load", "arrow-scale", "dml",
    "statement-reads", "stream",
    "kernel-read",
)  # fmt: skip
RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGETS = {
    "warm_vs_naive": 0.5,  # lakectl warm load <= half the naive rewrite
    "warm_vs_delta": 1.0,  # lakectl warm load <= delta-rs MERGE
    "growth": 1.5,  # same batch, table 5x: load time grows < 1.5x
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run_all",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES"))
    parser.add_argument(
        "--batch-fraction",
        type=float,
        default=float(os.environ.get("BENCH_BATCH_FRACTION", "0.05")),
    )
    lb.add_common_arguments(parser)
    parser.add_argument("--skip-cold", action="store_true", default=lb.env_flag("BENCH_SKIP_COLD"))
    parser.add_argument(
        "--snapshot-out", action="store_true", default=lb.env_flag("BENCH_SNAPSHOT_OUT")
    )
    parser.add_argument(
        "--only",
        choices=[*ONLY_CHOICES],
        default=os.environ.get("BENCH_ONLY") or None,
    )
    parser.add_argument("--compact-rows", default=os.environ.get("BENCH_COMPACT_ROWS"))
    parser.add_argument("--skew-rows", default=os.environ.get("BENCH_SKEW_ROWS"))
    parser.add_argument("--arrow-rows", default=os.environ.get("BENCH_ARROW_ROWS"))
    parser.add_argument("--kernel-rows", default=os.environ.get("BENCH_KERNEL_ROWS"))
    ub.add_arguments(parser)
    dml_bench.add_arguments(parser)
    args = parser.parse_args(argv)
    ub.resolve_arguments(args)
    dml_bench.resolve_arguments(args)
    default_compact = 500_000 if args.quick else 10_000_000
    args.compact_rows = int(str(args.compact_rows or default_compact).replace("_", ""))
    default_arrow = 500_000 if args.quick else 10_000_000
    args.arrow_rows = int(str(args.arrow_rows or default_arrow).replace("_", ""))
    default_kernel = 200_000 if args.quick else 10_000_000
    args.kernel_rows = int(str(args.kernel_rows or default_kernel).replace("_", ""))
    default_skew = 400_000 if args.quick else 4_000_000
    args.skew_rows = int(str(args.skew_rows or default_skew).replace("_", ""))
    if args.sizes:
        args.size_list = sorted(int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip())
    elif args.quick:
        args.size_list = [100_000, 500_000]
    else:
        args.size_list = [2_000_000, 10_000_000]
    if not 0 < args.batch_fraction <= 0.5:
        parser.error("--batch-fraction must be in (0, 0.5]")
    return args


def batch_plan(size: int, smallest: int, fraction: float) -> list[tuple[str, int]]:
    big = max(1, round(size * fraction))
    small = max(1, round(smallest * fraction))
    plan = [("cold", big), ("warmup", big)]
    if small != big:
        plan.append(("warm_small", small))
    plan.append(("warm", big))
    return plan


def run_size(spark, args: argparse.Namespace, size: int) -> dict[str, Any]:
    root = os.path.join(args.data_dir, f"n{size}")
    plan = batch_plan(size, args.size_list[0], args.batch_fraction)
    lb.log(f"size {size:,}: generating data ({', '.join(f'{n}={r:,}' for n, r in plan)})")
    data_dir = os.path.join(root, "data")
    gen_timing, dataset = lb.timed(
        "generate_parquet",
        lambda: datagen.generate(spark, data_dir, size, args.dates, plan),
    )
    gen_timing.detail = {"reused": dataset.reused}
    timings: list[lb.Timing] = [gen_timing]
    checks: dict[str, Any] = {}

    # lakectl ----------------------------------------------------------------------------------
    ctx = lb.lakectl_context(os.path.join(root, "warehouse"))
    table = os.path.join(root, "warehouse", "sales")
    lb.log("lakectl: create + base load (append)")
    timings.append(lb.lakectl_create_and_load_base(ctx, table, dataset))
    loaded: list[str] = []
    for name, _ in plan:
        batch = dataset.batch(name)
        if name == "cold" and not args.skip_cold:
            lb.log("lakectl: fresh-process session start, then cold `lakectl load` subprocess")
            timings.append(lb.session_start_fresh_process())
            timings.append(lb.lakectl_load_cold(table, batch))
        else:
            lb.log(f"lakectl: {name} load ({batch.rows:,} rows) in the warm session")
            timings.append(lb.lakectl_load_warm(ctx, table, batch, f"lakectl_load_{name}"))
        loaded.append(name)
        counts = timings[-1].detail["counts"]
        checks[f"lakectl_counts_{name}"] = _check_counts(counts, batch)
    lb.log("lakectl: full snapshot reads")
    timings.append(lb.lakectl_snapshot_count(ctx, table))
    expected = dataset.expected_rows(loaded)
    checks["lakectl_rows"] = _check_rows(timings[-1].detail["rows"], expected)
    if args.snapshot_out:
        timings.append(lb.lakectl_snapshot_out(ctx, table, os.path.join(root, "snapshot_out")))
        checks["lakectl_rows_out"] = _check_rows(timings[-1].detail["rows"], expected)

    # delta-rs ---------------------------------------------------------------------------------
    delta_path = os.path.join(root, "delta", "sales")
    lb.log("delta-rs: write base")
    timings.append(lb.delta_write_base(delta_path, dataset))
    for name, _ in plan:
        lb.log(f"delta-rs: MERGE {name}")
        timings.append(lb.delta_merge(delta_path, dataset.batch(name), f"delta_merge_{name}"))
    checks["delta_rows"] = _check_rows(lb.delta_row_count(delta_path), expected)

    # naive Spark rewrite -----------------------------------------------------------------------
    naive_out = os.path.join(root, "naive_out")
    lb.log("naive Spark rewrite (base + warm batch)")
    warm = dataset.batch("warm")
    timings.append(lb.naive_rewrite(spark, dataset, warm, naive_out))
    checks["naive_rows"] = _check_rows(
        spark.read.parquet(naive_out).count(), dataset.expected_rows(["warm"])
    )
    timings.append(lb.parquet_copy(spark, naive_out, os.path.join(root, "plain_copy")))

    if not args.keep:
        for sub in ("warehouse", "delta", "naive_out", "plain_copy", "snapshot_out"):
            shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
    return {
        "rows": size,
        "dates": args.dates,
        "batches": {b.name: b.rows for b in dataset.batches},
        "timings": [t.to_json() for t in timings],
        "checks": checks,
    }


def _check_counts(counts: dict[str, int], batch: datagen.BatchSpec) -> str:
    want = {"inserted": batch.inserts, "updated": batch.updates, "deleted": batch.deletes}
    got = {k: counts.get(k, 0) for k in want}
    ok = got == want and not counts.get("ignored")
    return "ok" if ok else f"MISMATCH: got {counts}, expected {want}"


def _check_rows(got: int, expected: int) -> str:
    return "ok" if got == expected else f"MISMATCH: {got:,} rows, expected {expected:,}"


# --- report -----------------------------------------------------------------------------------


def _seconds(result: dict[str, Any], step: str) -> float | None:
    for t in result["timings"]:
        if t["step"] == step:
            return float(t["seconds"])
    return None


def _ratio(name: str, label: str, num: float | None, den: float | None, target: float):
    if num is None or den is None or den <= 0:
        return None
    value = num / den
    op = "<=" if name != "growth" else "<"
    ok = value <= target if op == "<=" else value < target
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": f"{op} {target}",
        "pass": ok,
    }


def ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        n = f"{r['rows']:,}/{r['batches']['warm']:,}"
        warm = _seconds(r, "lakectl_load_warm")
        out.append(
            _ratio(
                "warm_vs_naive",
                f"lakectl warm load / naive rewrite @ {n}",
                warm,
                _seconds(r, "naive_spark_rewrite"),
                TARGETS["warm_vs_naive"],
            )
        )
        out.append(
            _ratio(
                "warm_vs_delta",
                f"lakectl warm load / delta-rs MERGE @ {n}",
                warm,
                _seconds(r, "delta_merge_warm"),
                TARGETS["warm_vs_delta"],
            )
        )
    if len(results) > 1:
        small = results[0]
        base = _seconds(small, "lakectl_load_warm")
        for r in results[1:]:
            batch = r["batches"].get("warm_small")
            step = "lakectl_load_warm_small" if batch else "lakectl_load_warm"
            batch = batch or r["batches"]["warm"]
            out.append(
                _ratio(
                    "growth",
                    f"lakectl warm load, {batch:,}-row batch: {r['rows']:,} vs {small['rows']:,} rows",
                    _seconds(r, step),
                    base,
                    TARGETS["growth"],
                )
            )
    return [o for o in out if o]


LABELS = {
    "generate_parquet": "generate base + batches (numpy + pyarrow -> Parquet)",
    "lakectl_base_append": "lakectl: create + base load (append)",
    "session_start_fresh_process": "lakectl: session start, fresh process (1)",
    "lakectl_load_cold_cli": "lakectl: `lakectl load` cold JVM, whole command (2)",
    "lakectl_load_cold": "lakectl: first load (warm session; cold skipped)",
    "lakectl_load_warmup": "lakectl: warm-up load (same session)",
    "lakectl_load_warm_small": "lakectl: warm load, small batch (growth)",
    "lakectl_load_warm": "lakectl: warm load (3)",
    "lakectl_snapshot_hash_all_columns": "lakectl: full snapshot, agg over all cols (4)",
    "lakectl_snapshot_to_parquet": "lakectl: snapshot --out parquet (4b)",
    "delta_write_base": "delta-rs: write base",
    "delta_merge_cold": "delta-rs: MERGE batch cold",
    "delta_merge_warmup": "delta-rs: MERGE batch warmup",
    "delta_merge_warm_small": "delta-rs: MERGE batch warm_small",
    "delta_merge_warm": "delta-rs: MERGE batch warm (a)",
    "naive_spark_rewrite": "naive Spark rewrite, base + warm (b)",
    "plain_parquet_read_write": "ref: plain Parquet read + write (no merge)",
}


def _note(t: dict[str, Any]) -> str:
    parts = []
    if t.get("reused"):
        parts.append("reused an earlier run's data")
    if "batch_rows" in t:
        parts.append(f"batch {t['batch_rows']:,}")
    if "phases_s" in t:
        parts.append(" ".join(f"{k} {v:.1f}" for k, v in t["phases_s"].items()))
    if t["step"] == "lakectl_load_cold_cli":
        parts.append(f"load() {t['in_process_s']:.1f} incl. session")
    if t["step"] == "session_start_fresh_process":
        parts.append(
            f"pyspark import {t['pyspark_import_s']:.1f}, JVM+session+1st job "
            f"{t['session_and_first_job_s']:.1f}"
        )
    if "metrics" in t:
        m = t["metrics"]
        parts.append(
            f"files +{m.get('num_target_files_added')}/-{m.get('num_target_files_removed')}, "
            f"copied {m.get('num_target_rows_copied'):,}"
        )
    if "rows" in t:
        parts.append(f"{t['rows']:,} rows")
    parts.append(f"load {t['loadavg_1m_before']:.1f}->{t['loadavg_1m_after']:.1f}")
    return "; ".join(parts)


def render(report: dict[str, Any]) -> str:
    lines = []
    env = report["environment"]
    lines.append(
        f"lakectl bench  {report['started']}  {env['cpus']} cpus  python {env['python']}  "
        f"pyspark {env['pyspark']}  deltalake {env['deltalake']}"
    )
    lines.append(
        f"in-process session start (first thing in this process): "
        f"{report['session_start_in_process_s']:.1f} s"
    )
    width = max(len(v) for v in LABELS.values())
    for r in report["sizes"]:
        lines.append("")
        lines.append(
            f"== {r['rows']:,} rows, {r['dates']} dates; batches "
            + ", ".join(f"{k} {v:,}" for k, v in r["batches"].items())
        )
        for t in r["timings"]:
            label = LABELS.get(t["step"], t["step"])
            lines.append(f"  {label:<{width}}  {t['seconds']:>8.2f} s   {_note(t)}")
        bad = {k: v for k, v in r["checks"].items() if v != "ok"}
        lines.append(
            "  checks: "
            + ("all ok (load counts 60/30/10, rows equal across engines)" if not bad else str(bad))
        )
    if report.get("compaction"):
        lines += compact_bench.render(report["compaction"])
    if report.get("skew"):
        lines += skew_bench.render(report["skew"])
    if report.get("updates"):
        lines += ub.render(report["updates"])
    if report.get("arrow"):
        lines += arrow_bench.render(report["arrow"])
    if report.get("kernel_read"):
        lines += kernel_read_bench.render(report["kernel_read"])
    if report.get("dml"):
        lines += dml_bench.render(report["dml"])
    if report.get("statement_reads"):
        lines += srb.render(report["statement_reads"])
    if report.get("arrow_load"):
        lines += arrow_load_bench.render(report["arrow_load"])
    if report.get("arrow_scale"):
        lines += arrow_scale_bench.render(report["arrow_scale"])
    lines.append("")
    lines.append(
        "ratios (the targets are stated at full size: 10M rows; quick runs are smoke tests)"
    )
    for r in report["ratios"]:
        verdict = "reported" if r["pass"] is None else "PASS" if r["pass"] else "FAIL"
        lines.append(f"  {r['label']:<64} {r['value']:>6.2f}  target {r['target']:<7} {verdict}")
    lines.append("")
    lines.append(
        f"load average (1 min) at start {report['loadavg_start']:.1f}, at end "
        f"{report['loadavg_end']:.1f} on {env['cpus']} cpus: other processes share this machine; "
        "per-step loads are in the notes and the JSON."
    )
    return "\n".join(lines)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("pyspark", "deltalake", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.only == "stream":  # streams run in their own processes (bench.stream_latency)
        from bench import stream_latency

        return stream_latency.main(["--data-dir", args.data_dir] + ["--quick"] * args.quick)
    try:
        import deltalake  # noqa: F401
    except ImportError:
        print("bench needs deltalake: pip install -e '.[bench]' (make bench does)", file=sys.stderr)
        return 2
    os.makedirs(args.data_dir, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_start = os.getloadavg()[0]
    lb.log(f"sizes {args.size_list}, data in {args.data_dir}; starting lakectl's Spark session")
    session_timing, spark = lb.timed("session_start_in_process", lb.start_session)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results: list[dict[str, Any]] = []
    compaction: dict[str, Any] | None = None
    if args.only in (None, "load"):
        for size in args.size_list:
            results.append(run_size(spark, args, size))
            report = _report(args, spark, started, load_start, session_timing, results)
            _save(report, stamp, partial=size != args.size_list[-1] or args.only is None)
    if args.only in (None, "compact"):
        compaction = compact_bench.run(
            spark, args.data_dir, args.compact_rows, 0.01, args.dates, args.keep
        )
    skew = None
    if args.only in (None, "skew"):
        skew = skew_bench.run(spark, args.data_dir, args.skew_rows, 4, args.keep)
    updates = None
    if args.only in (None, "updates"):
        updates = ub.run(
            spark, args.data_dir, args.updates_rows, args.dates, args.keep, args.statements,
            args.repeats,
        )  # fmt: skip
    arrow = None
    if args.only in (None, "arrow"):
        arrow = arrow_bench.run(spark, args.data_dir, args.arrow_rows, args.dates, args.keep)
    kernel = None
    if args.only in (None, "kernel-read"):
        kernel = kernel_read_bench.run(spark, args.data_dir, args.kernel_rows)
    dml = None
    if args.only in (None, "dml"):
        dml = dml_bench.run(spark, args.data_dir, args.dml_rows, args.dates, args.keep)
    arrow_load = None
    if args.only in (None, "arrow-load"):
        arrow_load = arrow_load_bench.run(args.data_dir)
    arrow_scale = None
    if args.only in (None, "arrow-scale"):  # the batch: 5% of the table (500k at 10M rows)
        arrow_scale = arrow_scale_bench.run(
            args.data_dir, args.arrow_rows, args.arrow_rows // 20, args.dates
        )
    statement_reads = None
    if args.only in (None, "statement-reads"):
        counts = (0, 100, 500) if args.quick else srb.COUNTS
        statement_reads = srb.run(args.data_dir, counts, 1 if args.quick else 3, keep=args.keep)
    report = _report(
        args, spark, started, load_start, session_timing, results, compaction, skew, updates,
        arrow, dml, statement_reads, arrow_load, kernel, arrow_scale,
    )  # fmt: skip
    _save(report, stamp, partial=False)
    text = render(report)
    print(text)
    (RESULTS_DIR / f"bench-{stamp}.txt").write_text(text + "\n")
    lb.log(f"results in {RESULTS_DIR}/bench-{stamp}.json")
    if not args.keep:
        for size in args.size_list:
            shutil.rmtree(os.path.join(args.data_dir, f"n{size}"), ignore_errors=True)
    from lakectl.spark.session import stop_session

    stop_session()
    return 0


def _save(report: dict[str, Any], stamp: str, partial: bool) -> None:
    """Write the JSON after every size, so an interrupted run still leaves its figures."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    report = {**report, "complete": not partial}
    for name in (f"bench-{stamp}.json", "latest.json"):
        (RESULTS_DIR / name).write_text(json.dumps(report, indent=1) + "\n")


def _report(
    args,
    spark,
    started,
    load_start,
    session_timing,
    results,
    compaction=None,
    skew=None,
    updates=None,
    arrow=None,
    dml=None,
    statement_reads=None,
    arrow_load=None,
    kernel=None,
    arrow_scale=None,
) -> dict[str, Any]:
    return {
        "started": started,
        "config": {
            "sizes": args.size_list,
            "batch_fraction": args.batch_fraction,
            "dates": args.dates,
            "quick": args.quick,
            "skip_cold": args.skip_cold,
            "snapshot_out": args.snapshot_out,
            "only": args.only,
            "compact_rows": args.compact_rows,
            "skew_rows": args.skew_rows,
            "arrow_rows": args.arrow_rows,
            "updates_rows": args.updates_rows,
            "dml_rows": args.dml_rows,
            "kernel_rows": args.kernel_rows,
            "spark_conf": {
                k: v
                for k, v in sorted(spark.sparkContext.getConf().getAll())
                if k.startswith("spark.sql") or k.startswith("spark.driver.memory")
            },
        },
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            **_versions(),
        },
        "session_start_in_process_s": round(session_timing.seconds, 3),
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg()[0],
        "sizes": results,
        "compaction": compaction,
        "skew": skew,
        "updates": updates,
        "arrow": arrow,
        "dml": dml,
        "statement_reads": statement_reads,
        "arrow_load": arrow_load,
        "kernel_read": kernel,
        "arrow_scale": arrow_scale,
        "ratios": ratios(results)
        + (compaction["ratios"] if compaction else [])
        + (skew["ratios"] if skew else [])
        + (updates["ratios"] if updates else [])
        + (arrow["ratios"] if arrow else [])
        + (kernel["ratios"] if kernel else [])
        + (dml["ratios"] if dml else [])
        + (arrow_load["ratios"] if arrow_load else [])
        + (arrow_scale["ratios"] if arrow_scale else []),
    }


if __name__ == "__main__":
    sys.exit(main())
