"""What installed Type 7 statements add to a read of a small table: the sample sales table (215
rows after its three loads) with 0, 100, 500 and 2,000 installed statements, and with a few
statements of large text (IN lists of 1,000 to 30,000 keys, LIKE patterns).

    python -m bench.run_all --only statement-reads            # through the bench runner
    python -m bench.statement_reads_bench [--counts 0,100,500,2000] [--repeats 3] [--no-spark]

Each Arrow read runs in a new process, as a cron job's ``lakectl snapshot --engine arrow`` does
(nothing parsed or compiled yet); the process reads another table first, so imports are not
counted, then times one read (log, statements, files, rows). Spark reads run in the bench's own
session, after two warm-up reads, with lakectl's in-process statement caches emptied first (the
figure is lakectl's planning plus Spark's analysis and the job). The figure to watch is the time a
read takes with N statements minus the time with none. Statements are point corrections by key
(most), corrections of a store's rows, and deletes; every 25th reads a column an earlier one
writes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SALES = REPO / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, op_code string, store_id string, "
    "create_date string"
)
CDC = ["--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts"]
COUNTS = (0, 100, 500, 2000)
IN_LISTS = (1_000, 10_000, 30_000)
LIKES = 100
PER_FILE = 500  # statements per installed file
REFUSED, CRASHED = -1, -2  # row counts standing for a read the Arrow reader refused, a crash


def statements(count: int, seed: int = 7) -> list[str]:
    """``count`` typical corrections of the sales table."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        key = rng.randint(1, 240)
        if i % 25 == 24:  # reads what earlier statements write
            out.append(f"UPDATE sales SET payment_type_id = status_id WHERE status_id = 'C{i - 1}'")
        elif i % 10 == 9:
            out.append(f"DELETE FROM sales WHERE sell_id = {1000 + key}")
        elif i % 10 == 8:
            store = f"S0{rng.randint(1, 5)}"
            out.append(
                f"UPDATE sales SET total_amt = {rng.randint(1, 500)}.25 WHERE store_id = "
                f"'{store}' AND total_amt < {rng.randint(1, 50)}"
            )
        else:
            out.append(f"UPDATE sales SET status_id = 'C{i}' WHERE sell_id = {key}")
    return out


def in_list(keys: int) -> list[str]:
    """One statement with an IN list of ``keys`` keys (a few of them stored)."""
    items = ", ".join(str(k) for k in range(200, 200 + 7 * keys, 7))
    return [f"UPDATE sales SET status_id = 'LISTED' WHERE sell_id IN ({items})"]


def likes(count: int) -> list[str]:
    """``count`` statements with LIKE patterns of three wildcards."""
    return [
        f"UPDATE sales SET op_code = 'L' WHERE payment_type_id LIKE '%{c}%{c}%' "
        f"AND store_id LIKE 'S0{i % 9}%'"
        for i, c in zip(range(count), "ACDEGIRT" * count, strict=False)
    ]


def _cli(*args: object) -> None:
    from lakectl.cli.main import main

    code = main([str(a) for a in args])
    if code != 0:
        raise RuntimeError(f"lakectl {' '.join(map(str, args))[:200]} exited {code}")


def build_base(warehouse: Path) -> Path:
    """The sample sales table: create, the base load and two CDC batches (215 rows)."""
    shutil.rmtree(warehouse, ignore_errors=True)
    _cli("--warehouse", warehouse, "create", "sales", "--schema", SCHEMA,
         "--primary-key", "sell_id", "--partition-by", "create_date")  # fmt: skip
    _cli("--warehouse", warehouse, "load", "sales", SALES / "base.csv", "--mode", "upsert")
    for batch in (1, 2):
        _cli("--warehouse", warehouse, "load", "sales", SALES / f"cdc_batch_{batch}.csv", *CDC)
    return warehouse / "sales"


def install(base: Path, target: Path, texts: list[str]) -> float:
    """A copy of ``base`` at ``target`` with ``texts`` installed; the install seconds."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    started = time.perf_counter()
    for first in range(0, len(texts), PER_FILE):
        path = target.parent / f"{target.name}-{first}.updates"
        path.write_text("".join(t + ";\n" for t in texts[first : first + PER_FILE]))
        _cli("apply-updates", target, path)
    return time.perf_counter() - started


def arrow_read_seconds(warm_up: Path, table: Path) -> tuple[float, float, int]:
    """One Arrow read of ``table`` in a new process (after a read of ``warm_up``): wall and
    CPU seconds (all threads; steadier than wall time on a shared machine), rows."""
    run = subprocess.run(
        [sys.executable, "-m", "bench.statement_reads_bench", "--read", str(warm_up), str(table)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    if run.returncode != 0:  # a crash of the reader (say a segmentation fault): reported
        print(f"  read of {table} exited {run.returncode}: {run.stderr[-300:]}", file=sys.stderr)
        return 0.0, 0.0, CRASHED
    data = json.loads(run.stdout.strip().splitlines()[-1])
    return data["seconds"], data["cpu_s"], data["rows"]


def spark_read_seconds(table: Path) -> tuple[float, int, str | None]:
    """One Spark read of ``table`` in this process's session, lakectl's caches emptied: its
    seconds, rows, and the first line of the error when it failed."""
    import lakectl
    from lakectl.updates import validate

    validate.clear_statement_caches()
    started = time.perf_counter()
    try:
        rows = len(lakectl.open_table(str(table)).scan().collect().rows)
    except Exception as exc:  # reported, not raised: the bench goes on with the next case
        lines = [line for line in str(exc).splitlines() if "Exception" in line or "Error" in line]
        return time.perf_counter() - started, CRASHED, (lines or [repr(exc)])[0][:200]
    return time.perf_counter() - started, rows, None


def _read_main(warm_up: str, table: str) -> int:
    import lakectl
    from lakectl.errors import UsageError

    lakectl.open_table(warm_up).scan().to_arrow()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        rows = lakectl.open_table(table).scan().to_arrow().num_rows
    except UsageError:  # a statement the Arrow reader does not apply (LIKE)
        rows = REFUSED
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": round(seconds, 4), "cpu_s": round(cpu, 4), "rows": rows}))
    return 0


def run(
    data_dir: str,
    counts: tuple[int, ...] = COUNTS,
    repeats: int = 3,
    with_spark: bool = True,
    keep: bool = False,
    base: Path | None = None,
) -> dict[str, Any]:
    """Build the table (or copy ``base``), install the statements, time the reads (Spark reads
    in the session already started, when ``with_spark``)."""
    root = Path(data_dir) / "statement_reads"
    base = base or build_base(root / "base")
    cases: list[tuple[str, list[str]]] = [(f"{n} statements", statements(n)) for n in counts]
    cases += [(f"IN list of {k:,} keys", in_list(k)) for k in IN_LISTS]
    cases.append((f"{LIKES} LIKE statements", likes(LIKES)))
    if with_spark:  # the session's first jobs compile code: not part of any case
        for _ in range(2):
            spark_read_seconds(base)
    results = []
    for label, texts in cases:
        table = root / "tables" / label.replace(" ", "_").replace(",", "")
        install_s = install(base, table, texts)
        arrow = [arrow_read_seconds(base, table) for _ in range(repeats)]
        entry: dict[str, Any] = {
            "case": label,
            "statements": len(texts),
            "text_chars": sum(len(t) for t in texts),
            "install_s": round(install_s, 3),
            "arrow_s": [s for s, _, _ in arrow],
            "arrow_median_s": round(statistics.median(s for s, _, _ in arrow), 4),
            "arrow_cpu_median_s": round(statistics.median(c for _, c, _ in arrow), 4),
            "rows": arrow[0][2],
        }
        if with_spark:
            spark_runs = [spark_read_seconds(table) for _ in range(repeats)]
            entry["spark_s"] = [round(s, 4) for s, _, _ in spark_runs]
            entry["spark_median_s"] = round(statistics.median(s for s, _, _ in spark_runs), 4)
            entry["spark_rows"] = spark_runs[0][1]
            entry["spark_error"] = spark_runs[0][2]
        results.append(entry)
        print(f"  {label}: {entry}", file=sys.stderr)
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    base_arrow, base_cpu = results[0]["arrow_median_s"], results[0]["arrow_cpu_median_s"]
    base_spark = results[0].get("spark_median_s")
    for entry in results:
        if base_spark is not None:
            entry["spark_added_s"] = round(entry["spark_median_s"] - base_spark, 4)
        if entry["rows"] < 0:
            entry["arrow_median_s"] = None  # refused by the Arrow reader, or it crashed
            entry["arrow_added_s"] = entry["arrow_cpu_added_s"] = None
            continue
        entry["arrow_added_s"] = round(entry["arrow_median_s"] - base_arrow, 4)
        entry["arrow_cpu_added_s"] = round(entry["arrow_cpu_median_s"] - base_cpu, 4)
    return {"repeats": repeats, "cases": results}


def render(result: dict[str, Any]) -> list[str]:
    """Lines for the text summary."""
    lines = [
        "",
        f"== Installed statements on a read of the 215-row sample table (median of "
        f"{result['repeats']}; added = minus the read with no statement)",
        f"  {'case':<26} {'chars':>9} {'install':>9} {'arrow':>8} {'added':>8} {'cpu add':>8} "
        f"{'spark':>8} {'added':>8}  rows",
    ]
    failed = [c for c in result["cases"] if c.get("spark_error")]
    for c in result["cases"]:
        spark = (
            f"{c['spark_median_s']:>8.3f} {c['spark_added_s']:>8.3f}"
            if "spark_median_s" in c and not c.get("spark_error")
            else f"{'failed':>8} {'-':>8}"
            if c.get("spark_error")
            else f"{'-':>8} {'-':>8}"
        )
        arrow = (
            f"{c['arrow_median_s']:>8.3f} {c['arrow_added_s']:>8.3f} {c['arrow_cpu_added_s']:>8.3f}"
            if c["arrow_median_s"] is not None
            else f"{'refused' if c['rows'] == REFUSED else 'crashed':>8} {'-':>8} {'-':>8}"
        )
        rows = c.get("spark_rows", c["rows"])
        lines.append(
            f"  {c['case']:<26} {c['text_chars']:>9,} {c['install_s']:>8.2f}s {arrow} {spark}"
            f"  {rows}"
        )
    lines += [f"  {c['case']}: Spark failed: {c['spark_error']}" for c in failed]
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--read":
        return _read_main(argv[1], argv[2])
    parser = argparse.ArgumentParser(prog="python -m bench.statement_reads_bench")
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument(
        "--data-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "lakectl-bench")
    )
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--base", type=Path, help="an existing copy of the sample table (with --no-spark: no JVM)"
    )
    args = parser.parse_args(argv)
    spark_needed = not args.no_spark or args.base is None
    if spark_needed:
        from bench import load_bench as lb

        lb.start_session()
    result = run(
        args.data_dir,
        tuple(int(c) for c in args.counts.split(",")),
        args.repeats,
        not args.no_spark,
        args.keep,
        args.base,
    )
    print("\n".join(render(result)))
    if spark_needed:
        from lakectl.spark.session import stop_session

        stop_session()
    return 0


if __name__ == "__main__":
    sys.exit(main())
