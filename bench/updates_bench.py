"""Type 7 statements on read: a snapshot with 100 installed statements vs a plain snapshot.

    python -m bench.updates_bench                 # 10M rows (the target's figure)
    BENCH_QUICK=1 python -m bench.updates_bench   # smoke run: 200k rows
    python -m bench.run_all --only updates        # the same, from `make bench`

Settings (flag / environment variable):
  --updates-rows / BENCH_UPDATES_ROWS    table size (default 10000000; quick 200000)
  --statements / BENCH_STATEMENTS        statements installed (default 100)
  --repeats / BENCH_REPEATS              timed reads of each kind (default 5; quick 2)
  --dates, --data-dir, --keep, --quick   as for bench.run_all

The table is the load bench's generated sales table (``bench.datagen``), loaded once. Both reads
run the same lakectl code path (``snapshot`` with and without ``--raw``) in one warm session, into
the same sink (count and a hash of every column, so nothing can be skipped), alternating, after
:data:`WARM_UP_ROUNDS` untimed rounds; the ratio uses the medians. The JVM compiles the
statements' generated code over several reads (the read with statements still got faster in
rounds 2-4), so one untimed round measured part of that compiling. The first read of each kind
in this session (after the load, so not quite what a new process pays) is reported beside it.
Then ``apply-updates --materialize``
folds all statements into the data, and the plain read of the result must hash the same as the
read with statements did.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import datagen
from bench import load_bench as lb

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET = 1.5  # 100 statements cost at most 1.5x a plain snapshot read
TABLE = "sales"
# Effective times of the statements: days of 2024 (all in the past, so a read "now" applies all).
FIRST_DAY_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
DAY_MS = 86_400_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of this bench (``bench.run_all`` takes them too)."""
    parser.add_argument(
        "--updates-rows", type=int, default=_env_int("BENCH_UPDATES_ROWS", 0) or None
    )
    parser.add_argument("--statements", type=int, default=_env_int("BENCH_STATEMENTS", 100))
    parser.add_argument("--repeats", type=int, default=_env_int("BENCH_REPEATS", 0) or None)


def resolve_arguments(args: argparse.Namespace) -> None:
    """Fill in the size and repeat defaults, which depend on ``--quick``."""
    args.updates_rows = args.updates_rows or (200_000 if args.quick else 10_000_000)
    args.repeats = args.repeats or (2 if args.quick else 5)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").replace("_", "").strip()
    return int(value) if value else default


# --- statements -------------------------------------------------------------------------------


def statements_text(rows: int, count: int, dates: int, seed: int = 7) -> str:
    """``count`` statements in ``.updates`` format, a realistic mix over a ``rows``-row table.

    Point corrections by key (updates and deletes) dominate; the rest are range updates by key,
    store or date, range deletes, and statements that depend on columns earlier ones wrote.
    Effective times increase through the file, a few days apart.
    """
    rng = random.Random(seed)
    makers = [
        (45, lambda: _point_update(rng, rows)),
        (15, lambda: f"DELETE FROM {TABLE} WHERE sell_id = {rng.randrange(rows)};"),
        (12, lambda: _range_update(rng, rows, dates)),
        (5, lambda: _range_delete(rng)),
        (15, lambda: _dependent_update(rng, rows)),
        (8, lambda: _expression_update(rng)),
    ]
    weights = [w for w, _ in makers]
    lines = []
    day = 0
    for _ in range(count):
        if rng.random() < 0.3:
            day += rng.randint(1, 3)
            lines.append(f"-- time={FIRST_DAY_MS + day * DAY_MS}")
        lines.append(rng.choices([m for _, m in makers], weights)[0]())
    return "\n".join(lines) + "\n"


def _point_update(rng: random.Random, rows: int) -> str:
    status = rng.choice(datagen.STATUSES)
    amount = round(rng.uniform(1, 500), 2)
    return (
        f"UPDATE {TABLE} SET status_id = '{status}', total_amt = {amount} "
        f"WHERE sell_id = {rng.randrange(rows)};"
    )


def _range_update(rng: random.Random, rows: int, dates: int) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        low = rng.randrange(rows)
        high = low + rng.randint(10, max(11, rows // 1000))
        return (
            f"UPDATE {TABLE} SET total_amt = round(total_amt * 1.1, 2) "
            f"WHERE sell_id BETWEEN {low} AND {high};"
        )
    if kind == 1:
        store = f"S{rng.randint(4, datagen.STORES):03d}"
        return f"UPDATE {TABLE} SET payment_type_id = 'WIRE' WHERE store_id = '{store}';"
    day = dt.date.fromisoformat(datagen.START_DATE) + dt.timedelta(days=rng.randrange(dates))
    return (
        f"UPDATE {TABLE} SET status_id = 'SHIPPED' "
        f"WHERE create_date = '{day.isoformat()}' AND status_id = 'PAID';"
    )


def _range_delete(rng: random.Random) -> str:
    store = f"S{rng.randint(4, datagen.STORES):03d}"
    return f"DELETE FROM {TABLE} WHERE store_id = '{store}' AND total_amt < {rng.randint(2, 6)};"


def _dependent_update(rng: random.Random, rows: int) -> str:
    """Reads columns the statements before it write (status_id, total_amt)."""
    if rng.random() < 0.5:
        return (
            f"UPDATE {TABLE} SET payment_type_id = 'CARD' WHERE status_id = 'PAID' "
            f"AND total_amt > {rng.randint(300, 490)};"
        )
    return (
        f"UPDATE {TABLE} SET status_id = 'RETURNED' WHERE status_id = 'CANCELLED' "
        f"AND sell_id < {rng.randrange(rows)} AND total_amt < {rng.randint(5, 50)};"
    )


def _expression_update(rng: random.Random) -> str:
    store = f"S{rng.randint(1, datagen.STORES):03d}"
    return (
        f"UPDATE {TABLE} SET status_id = CASE WHEN total_amt > {rng.randint(400, 490)} "
        f"THEN upper(concat(status_id, '_vip')) ELSE status_id END WHERE store_id = '{store}';"
    )


# --- timed steps -----------------------------------------------------------------------------


_PLANNING: dict[str, list[float]] = {"plain": [], "statements": []}
WARM_UP_ROUNDS = 3  # untimed rounds of both reads before the timed ones


def _read(ctx, table: str, raw: bool) -> tuple[int, int]:
    """Row count and hash of every column of ``lakectl snapshot`` (``--raw``: no statements).

    Records in ``_PLANNING`` how long the driver took before any task ran: building the
    DataFrame (statements compiled and analyzed) plus optimizing and planning it.
    """
    from pyspark.sql import functions as F

    from lakectl.ops.snapshot import SnapshotRequest, statements_frame
    from lakectl.scan.target import open_for_read

    started = time.perf_counter()
    request = SnapshotRequest(raw=raw)
    frame = statements_frame(ctx, open_for_read(ctx.table(table)), request)
    agg = frame.agg(F.count(F.lit(1)), F.sum(F.hash(*frame.columns)))
    agg._jdf.queryExecution().executedPlan()  # planning, before the job runs
    _PLANNING["plain" if raw else "statements"].append(time.perf_counter() - started)
    row = agg.collect()[0]
    return int(row[0]), int(row[1] or 0)


def time_reads(ctx, table: str, repeats: int) -> dict[str, Any]:
    """Alternate plain and with-statements reads: :data:`WARM_UP_ROUNDS` rounds not in the
    medians (the first one's times are kept apart), then medians of ``repeats``."""
    seconds: dict[str, list[float]] = {"plain": [], "statements": []}
    first: dict[str, float] = {}
    results: dict[str, tuple[int, int]] = {}
    for recorded in _PLANNING.values():
        recorded.clear()
    for attempt in range(WARM_UP_ROUNDS + repeats):
        for kind in ("plain", "statements"):
            timing, result = lb.timed(kind, lambda kind=kind: _read(ctx, table, kind == "plain"))
            results[kind] = result
            first.setdefault(kind, round(timing.seconds, 3))
            if attempt >= WARM_UP_ROUNDS:
                seconds[kind].append(timing.seconds)
            lb.log(f"  {kind:<10} {timing.seconds:6.2f} s  {result[0]:,} rows")
    planning = {k: v[-repeats:] for k, v in _PLANNING.items()}
    return {
        "first_read_s": first,
        "seconds": {k: [round(s, 3) for s in v] for k, v in seconds.items()},
        "median_s": {k: round(statistics.median(v), 3) for k, v in seconds.items()},
        "planning_median_s": {k: round(statistics.median(v), 3) for k, v in planning.items()},
        "rows": {k: v[0] for k, v in results.items()},
        "hash": {k: v[1] for k, v in results.items()},
    }


def run(
    spark,
    data_dir: str,
    rows: int,
    dates: int,
    keep: bool,
    statements: int = 100,
    repeats: int = 5,
) -> dict[str, Any]:
    """Generate and load the table, install the statements, time reads and materialize."""
    from lakectl.ops.materialize import materialize
    from lakectl.ops.updates import install

    root = os.path.join(data_dir, f"updates_n{rows}")
    lb.log(f"updates bench: {rows:,} rows, {statements} statements, {repeats} repeats")
    gen_timing, dataset = lb.timed(
        "generate_parquet",
        lambda: datagen.generate(spark, os.path.join(root, "data"), rows, dates, []),
    )
    ctx = lb.lakectl_context(os.path.join(root, "warehouse"))
    table = os.path.join(root, "warehouse", TABLE)
    load_timing = lb.lakectl_create_and_load_base(ctx, table, dataset)
    updates = Path(root) / "bench.updates"
    updates.write_text(statements_text(rows, statements, dates))
    install(ctx, table, str(updates))
    plan = _plan_shape(ctx, table)
    reads = time_reads(ctx, table, repeats)
    lb.log("updates bench: materialize every statement into the data")
    mat_timing, folded = lb.timed(
        "materialize", lambda: materialize(ctx, table, int(time.time() * 1000))
    )
    after = _read(ctx, table, raw=False)  # no statement is active any more
    with_statements = (reads["rows"]["statements"], reads["hash"]["statements"])
    checks = {
        "materialized_equals_statements_read": "ok"
        if after == with_statements
        else f"MISMATCH: {after} after materialize, {with_statements} with statements",
        "statements_changed_something": "ok"
        if reads["hash"]["plain"] != reads["hash"]["statements"]
        else "MISMATCH: same hash with and without statements",
    }
    value = reads["median_s"]["statements"] / reads["median_s"]["plain"]
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "rows": rows,
        "statements": statements,
        "repeats": repeats,
        "generate_s": round(gen_timing.seconds, 3),
        "load_s": round(load_timing.seconds, 3),
        "reads": reads,
        "plan": plan,
        "materialize_s": round(mat_timing.seconds, 3),
        "materialize": folded.to_dict(),
        "checks": checks,
        "ratios": [
            {
                "name": "statements_vs_plain",
                "label": f"snapshot with {statements} statements / plain snapshot @ {rows:,}",
                "value": round(value, 3),
                "target": f"<= {TARGET}",
                "pass": value <= TARGET,
            }
        ],
    }


def _plan_shape(ctx, table: str) -> dict[str, int]:
    """Size of the optimized plan with statements: projections, filters, generated code lines."""
    from lakectl.ops.snapshot import SnapshotRequest, statements_frame
    from lakectl.scan.target import open_for_read

    frame = statements_frame(ctx, open_for_read(ctx.table(table)), SnapshotRequest())
    plan = frame._jdf.queryExecution().optimizedPlan().toString()
    return {
        "project_nodes": plan.count("Project ["),
        "filter_nodes": plan.count("Filter "),
        "plan_chars": len(plan),
    }


def render(result: dict[str, Any]) -> list[str]:
    """Lines for the text summary."""
    reads = result["reads"]
    med, runs = reads["median_s"], reads["seconds"]
    plan_s = reads.get("planning_median_s", {"plain": 0.0, "statements": 0.0})
    first = reads.get("first_read_s", {})
    mat = result["materialize"]["counts"]
    bad = {k: v for k, v in result["checks"].items() if v != "ok"}
    ok = "all ok (materialized rows hash as the statements read)"
    return [
        "",
        f"== Type 7: {result['rows']:,} rows, {result['statements']} statements "
        f"(median of {result['repeats']} warm reads, agg over all columns)",
        f"  plain snapshot                 {med['plain']:>8.2f} s   runs {runs['plain']}",
        f"  snapshot with statements       {med['statements']:>8.2f} s   runs {runs['statements']}",
        f"  first read in this session     {first.get('plain', 0.0):>8.2f} s plain, "
        f"{first.get('statements', 0.0):.2f} s with statements (the JIT still compiling)",
        f"  of which driver-side planning  {plan_s['plain']:>8.2f} s plain, "
        f"{plan_s['statements']:.2f} s with statements (build + optimize + plan, median)",
        f"  rows: plain {reads['rows']['plain']:,}, with statements "
        f"{reads['rows']['statements']:,}; optimized plan: {result['plan']['project_nodes']} "
        f"projections, {result['plan']['filter_nodes']} filters",
        f"  apply-updates --materialize    {result['materialize_s']:>8.2f} s   rewritten "
        f"{mat.get('rewritten', 0):,}, deleted {mat.get('deleted', 0):,}, retired "
        f"{mat.get('retired', 0)}",
        "  checks: " + (ok if not bad else str(bad)),
    ]


def render_ratios(result: dict[str, Any]) -> list[str]:
    """One line per ratio with its verdict."""
    return [
        f"  {r['label']:<64} {r['value']:>6.2f}  target {r['target']:<7} "
        f"{'PASS' if r['pass'] else 'FAIL'}"
        for r in result["ratios"]
    ]


def save(result: dict[str, Any], stamp: str) -> Path:
    """Write the JSON and text reports under bench/results/."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"updates-{stamp}.json"
    data = {**result, "loadavg_1m": os.getloadavg()[0], "cpus": os.cpu_count()}
    path.write_text(json.dumps(data, indent=1) + "\n")
    text = "\n".join([*render(result), *render_ratios(result)])
    (RESULTS_DIR / f"updates-{stamp}.txt").write_text(text + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.updates_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lb.add_common_arguments(parser)
    add_arguments(parser)
    args = parser.parse_args(argv)
    resolve_arguments(args)
    spark = lb.start_session()
    result = run(
        spark, args.data_dir, args.updates_rows, args.dates, args.keep, args.statements,
        args.repeats,
    )  # fmt: skip
    print("\n".join([*render(result), *render_ratios(result)]))
    lb.log(f"results in {save(result, time.strftime('%Y%m%d-%H%M%S'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
