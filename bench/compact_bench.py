"""Compaction bench (issue 4): a table with 10 deltas, read before and after a major compaction,
and the compaction next to a plain Spark read + write of the same rows as ORC.

Targets: major compaction <= 1.3x the plain rewrite; reading the 10 deltas <= 1.5x reading the
compacted base. The table: a base load (append, ``rows`` rows) and 10 CDC batches of
``fraction`` of the table each (60% updates, 30% inserts, 10% deletes), all in this process's
warm session.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from bench import datagen
from bench import load_bench as lb

DELTAS = 10
TARGETS = {"major_vs_plain": 1.3, "read_deltas_vs_base": 1.5}
LABELS = {
    "compact_base_load": "lakectl: create + base load (append)",
    "compact_cdc_loads": f"lakectl: {DELTAS} CDC loads",
    "compact_read_deltas": f"lakectl: snapshot, base + {DELTAS} deltas (agg over all cols)",
    "compact_major": "lakectl: compact --major",
    "compact_read_base": "lakectl: snapshot, compacted base (agg over all cols)",
    "plain_orc_read_write": "ref: plain Spark ORC read + write of the same rows",
}


def _compact(ctx, table: str) -> lb.Timing:
    from lakectl.ops.compact import CompactOptions, compact

    timing, result = lb.timed(
        "compact_major", lambda: compact(ctx, table, CompactOptions(kind="major"))
    )
    timing.detail = {
        "partitions": len(result.chosen),
        "dirs_in": result.counts.get("dirs_in"),
        "rows": result.counts.get("rows_written"),
    }
    return timing


def _plain_rewrite(spark, store, out: str) -> lb.Timing:
    """Read the compacted base files and write them again: the floor for any rewrite."""
    from lakectl.ops.reading import open_for_read

    target = open_for_read(store)
    files = [store.storage.url(f.path) for p in target.plans for d in p.data_dirs for f in d.files]
    if os.path.exists(out):
        shutil.rmtree(out)
    timing, _ = lb.timed(
        "plain_orc_read_write",
        lambda: spark.read.orc(files).write.option("compression", "snappy").orc(out),
    )
    timing.detail = {"files_in": len(files)}
    return timing


def run(spark, data_dir: str, rows: int, fraction: float, dates: int, keep: bool) -> dict[str, Any]:
    """Build the table, time the steps, return timings, checks and ratios."""
    root = os.path.join(data_dir, f"compact_n{rows}")
    plan = [(f"d{n:02d}", max(1, round(rows * fraction))) for n in range(1, DELTAS + 1)]
    lb.log(f"compaction bench: {rows:,} rows, {DELTAS} batches of {plan[0][1]:,}")
    gen, dataset = lb.timed(
        "generate_parquet",
        lambda: datagen.generate(spark, os.path.join(root, "data"), rows, dates, plan),
    )
    timings = [gen]
    ctx = lb.lakectl_context(os.path.join(root, "warehouse"))
    table = os.path.join(root, "warehouse", "sales")
    timings.append(lb.lakectl_create_and_load_base(ctx, table, dataset))
    timings[-1].step = "compact_base_load"

    def loads() -> None:
        for name, _ in plan:
            lb.lakectl_load_warm(ctx, table, dataset.batch(name), f"load_{name}")

    timings.append(lb.timed("compact_cdc_loads", loads)[0])
    expected = dataset.expected_rows()
    lb.log("compaction bench: snapshot before, major compaction, snapshot after")
    before = lb.lakectl_snapshot_count(ctx, table)
    before.step = "compact_read_deltas"
    major = _compact(ctx, table)
    after = lb.lakectl_snapshot_count(ctx, table)
    after.step = "compact_read_base"
    plain = _plain_rewrite(spark, ctx.table(table), os.path.join(root, "plain_orc"))
    timings += [before, major, after, plain]
    checks = {
        "rows_before": _check(before.detail["rows"], expected),
        "rows_after": _check(after.detail["rows"], expected),
    }
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "rows": rows,
        "deltas": DELTAS,
        "batch_rows": plan[0][1],
        "timings": [t.to_json() for t in timings],
        "checks": checks,
        "ratios": [
            _ratio("major_vs_plain", "major compaction / plain ORC read + write", major, plain),
            _ratio(
                "read_deltas_vs_base", f"read {DELTAS} deltas / read compacted base", before, after
            ),
        ],
    }


def _check(got: int, expected: int) -> str:
    return "ok" if got == expected else f"MISMATCH: {got:,} rows, expected {expected:,}"


def _ratio(name: str, label: str, num: lb.Timing, den: lb.Timing) -> dict[str, Any]:
    value = num.seconds / den.seconds if den.seconds > 0 else float("inf")
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": f"<= {TARGETS[name]}",
        "pass": value <= TARGETS[name],
    }


def render(result: dict[str, Any]) -> list[str]:
    """Timing lines for the text summary."""
    lines = [
        "",
        f"== compaction: {result['rows']:,} rows + {result['deltas']} CDC batches of "
        f"{result['batch_rows']:,}",
    ]
    lines += lb.timing_lines(result["timings"], LABELS)
    bad = {k: v for k, v in result["checks"].items() if v != "ok"}
    lines.append("  checks: " + ("rows equal before and after" if not bad else str(bad)))
    return lines  # the ratios are listed with the others
