"""One-off DELETE and UPDATE of 1% of the rows, and a restore 10 loads back, next to delta-rs.

    python -m bench.run_all --only dml [--quick] [--dml-rows N]

The same data in one run, on both engines: the compaction bench's table (a base of ``rows``
rows and :data:`bench.compact_bench.DELTAS` CDC batches of 1% each), loaded by lakectl, and the
same base written and the same batches MERGEd by delta-rs. Then, on both, in this order:

1. restore the version right after the base load, 10 loads back: ``lakectl restore --version``
   next to ``DeltaTable.restore(0)``;
2. delete 1% of the rows, spread over every partition (``sell_id % 100 = 7``):
   ``lakectl delete --where`` next to ``DeltaTable.delete(predicate)``;
3. update another 1% (``sell_id % 100 = 11``), two columns: ``lakectl update --set ...
   --where`` next to ``DeltaTable.update(updates, predicate)``.

Each lakectl step runs twice, on two copies of the table: in this process's warm Spark session
(``--engine spark``: the command's work, not the JVM start) and in the Arrow engine
(``--engine arrow``, in this process, no JVM). The delete runs a third time on a third copy as a
whole new ``lakectl delete --engine arrow`` process (the wall a cron job sees). Each delta-rs
step opens the table, as a new ``DeltaTable`` would. Counts must agree between lakectl's engines
and delta-rs, and after the three steps all three tables must hold the same rows (count, sum of
``total_amt``, rows per status). The ratios are reported; the one with a target: the Arrow
engine's delete at most :data:`ARROW_DELETE_TARGET` of delta-rs' delete at 10M rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from typing import Any

from bench import compact_bench as cb
from bench import load_bench as lb

DELETE_WHERE = "sell_id % 100 = 7"
UPDATE_WHERE = "sell_id % 100 = 11"
UPDATE_SET = {"status_id": "'CANCELLED'", "total_amt": "0.0"}
ARROW_DELETE_TARGET = 0.3  # the Arrow engine's delete / delta-rs' delete, at 10M rows
TARGET_ROWS = 10_000_000
LABELS = {
    "lakectl_restore": "lakectl: restore --version (10 loads back), Spark",
    "lakectl_restore_arrow": "lakectl: same, --engine arrow",
    "delta_restore": "delta-rs: DeltaTable.restore(version)",
    "lakectl_delete": f"lakectl: delete --where {DELETE_WHERE!r}, Spark",
    "lakectl_delete_arrow": "lakectl: same, --engine arrow",
    "lakectl_delete_arrow_cli": "lakectl: same, `lakectl delete --engine arrow` new process",
    "delta_delete": "delta-rs: DeltaTable.delete(predicate)",
    "lakectl_update": f"lakectl: update --set ... --where {UPDATE_WHERE!r}, Spark",
    "lakectl_update_arrow": "lakectl: same, --engine arrow",
    "delta_update": "delta-rs: DeltaTable.update(updates, predicate)",
}


def add_arguments(parser: Any) -> None:
    """``--dml-rows`` (or ``BENCH_DML_ROWS``): the table size (10M; quick: 500k)."""
    parser.add_argument("--dml-rows", default=os.environ.get("BENCH_DML_ROWS"))


def resolve_arguments(args: Any) -> None:
    default = 500_000 if args.quick else 10_000_000
    args.dml_rows = int(str(args.dml_rows or default).replace("_", ""))


# --- lakectl ------------------------------------------------------------------------------------


def _base_version(ctx, table: str) -> int:
    """The write id of the base load (the first data commit)."""
    state = ctx.table(table).read_state()
    return next(r.write_id for r in state.records if r.operation == "append")


def _lakectl_restore(ctx, table: str, version: int, engine: str = "spark") -> lb.Timing:
    from lakectl.ops.restore import restore

    step = "lakectl_restore" + ("_arrow" if engine == "arrow" else "")
    timing, result = cb._cpu_timed(
        step, lambda: restore(ctx, table, version=version, engine=engine)
    )
    timing.detail.update(
        {
            "deleted": result.deleted,
            "reinserted": result.reinserted,
            "method": result.method,
            "directories_read": result.directories_read,
            "bytes_read": result.bytes_read,
        }
    )
    return timing


def _lakectl_dml(ctx, table: str, step: str, request) -> lb.Timing:
    from lakectl.ops.dml import run_dml

    timing, result = cb._cpu_timed(step, lambda: run_dml(ctx, table, request))
    timing.detail.update({"deleted": result.deleted, "updated": result.updated})
    return timing


def _lakectl_delete_cli(table: str) -> lb.Timing:
    """``lakectl delete --engine arrow`` as a new process: the whole command's wall time."""
    import json

    command = [sys.executable, "-m", "lakectl", "delete", table, "--where", DELETE_WHERE]
    command += ["--engine", "arrow", "--json"]
    timing, done = lb.timed(
        "lakectl_delete_arrow_cli",
        lambda: subprocess.run(command, capture_output=True, text=True, check=False),
    )
    if done.returncode != 0:
        raise RuntimeError(f"lakectl delete failed ({done.returncode}): {done.stderr[-2000:]}")
    timing.detail["deleted"] = json.loads(done.stdout)["counts"]["deleted"]
    return timing


def _arrow_summary(table: str) -> dict[str, Any]:
    """:func:`_lakectl_summary` read by the Arrow engine (no JVM)."""
    import lakectl

    data = lakectl.open_table(table).scan(columns=["total_amt", "status_id"]).to_arrow()
    return _arrow_table_summary(data)


def _lakectl_summary(ctx, table: str) -> dict[str, Any]:
    """Rows, the sum of ``total_amt`` and rows per status of the table now."""
    from pyspark.sql import functions as F

    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.scan.target import open_for_read

    frame = snapshot_frame(ctx, open_for_read(ctx.table(table)), SnapshotRequest())
    total = frame.agg(F.count(F.lit(1)), F.sum("total_amt")).collect()[0]
    statuses = {r[0]: r[1] for r in frame.groupBy("status_id").count().collect()}
    return _summary(int(total[0]), total[1] or 0.0, statuses)


# --- delta-rs -----------------------------------------------------------------------------------


def _delta_step(step: str, run) -> lb.Timing:
    timing, metrics = lb.timed(step, run)
    timing.detail["metrics"] = {
        k: v for k, v in metrics.items() if k.startswith("num_") and isinstance(v, int)
    }
    return timing


def _delta_summary(path: str) -> dict[str, Any]:
    from deltalake import DeltaTable

    return _arrow_table_summary(
        DeltaTable(path).to_pyarrow_table(columns=["total_amt", "status_id"])
    )


def _arrow_table_summary(data: Any) -> dict[str, Any]:
    import pyarrow.compute as pc

    statuses = {
        str(v["values"]): int(v["counts"]) for v in pc.value_counts(data["status_id"]).to_pylist()
    }
    return _summary(data.num_rows, pc.sum(data["total_amt"]).as_py() or 0.0, statuses)


def _summary(rows: int, amount: float, statuses: dict[str, int]) -> dict[str, Any]:
    return {"rows": rows, "total_amt": round(amount, 2), "statuses": dict(sorted(statuses.items()))}


# --- the run ------------------------------------------------------------------------------------


def run(spark, data_dir: str, rows: int, dates: int, keep: bool) -> dict[str, Any]:
    """Build both tables, time restore, delete and update on each; timings, checks, ratios."""
    from deltalake import DeltaTable

    from lakectl.ops.dml import DmlRequest

    root = os.path.join(data_dir, f"dml_n{rows}")
    timings: list[lb.Timing] = []
    ctx, table, dataset = cb.build_table(spark, root, rows, 0.01, dates, timings)
    arrow, cold = table + "_arrow", table + "_cold"
    shutil.copytree(table, arrow)
    delta = os.path.join(root, "delta", "sales")
    lb.log("dml bench: delta-rs writes the base and MERGEs the same batches")
    timings.append(lb.delta_write_base(delta, dataset))
    for batch in dataset.batches:
        lb.delta_merge(delta, batch, f"delta_merge_{batch.name}")
    checks: dict[str, Any] = {}

    lb.log("dml bench: restore 10 loads back")
    base = _base_version(ctx, table)
    timings.append(_lakectl_restore(ctx, table, base))
    timings.append(_lakectl_restore(ctx, arrow, base, "arrow"))
    timings.append(_delta_step("delta_restore", lambda: DeltaTable(delta).restore(0)))
    checks["rows_after_restore"] = {
        "lakectl": cb._check(lb.lakectl_row_count(ctx, table), rows),
        "lakectl_arrow": cb._check(_arrow_summary(arrow)["rows"], rows),
        "delta": cb._check(lb.delta_row_count(delta), rows),
    }
    shutil.copytree(arrow, cold)

    lb.log(f"dml bench: delete where {DELETE_WHERE}")
    delete = DmlRequest("delete", where=DELETE_WHERE)
    timings.append(_lakectl_dml(ctx, table, "lakectl_delete", delete))
    timings.append(
        _lakectl_dml(ctx, arrow, "lakectl_delete_arrow", replace(delete, engine="arrow"))
    )
    timings.append(_lakectl_delete_cli(cold))
    timings.append(
        _delta_step("delta_delete", lambda: DeltaTable(delta).delete(predicate=DELETE_WHERE))
    )
    lb.log(f"dml bench: update where {UPDATE_WHERE}")
    assignments = ", ".join(f"{c} = {v}" for c, v in UPDATE_SET.items())
    request = DmlRequest("update", where=UPDATE_WHERE, assignments=assignments)
    timings.append(_lakectl_dml(ctx, table, "lakectl_update", request))
    timings.append(
        _lakectl_dml(ctx, arrow, "lakectl_update_arrow", replace(request, engine="arrow"))
    )
    timings.append(
        _delta_step(
            "delta_update",
            lambda: DeltaTable(delta).update(updates=UPDATE_SET, predicate=UPDATE_WHERE),
        )
    )
    by_step = {t.step: t for t in timings}
    deleted = by_step["delta_delete"].detail["metrics"].get("num_deleted_rows")
    updated = by_step["delta_update"].detail["metrics"].get("num_updated_rows")
    for suffix in ("", "_arrow", "_arrow_cli"):
        checks[f"deleted{suffix}"] = _agree(
            by_step[f"lakectl_delete{suffix}"].detail["deleted"], deleted
        )
    for suffix in ("", "_arrow"):
        checks[f"updated{suffix}"] = _agree(
            by_step[f"lakectl_update{suffix}"].detail["updated"], updated
        )
    theirs = _delta_summary(delta)
    for name, mine in (("spark", _lakectl_summary(ctx, table)), ("arrow", _arrow_summary(arrow))):
        same = mine == theirs
        checks[f"same_rows_at_end_{name}"] = "ok" if same else f"MISMATCH: {mine} vs {theirs}"
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "rows": rows,
        "deltas": cb.DELTAS,
        "batch_rows": dataset.batches[0].rows,
        "timings": [t.to_json() for t in timings if t.step in LABELS],
        "setup": [t.to_json() for t in timings if t.step not in LABELS],
        "checks": checks,
        "ratios": [
            *(
                _ratio(
                    f"dml_{what}_vs_delta",
                    f"lakectl {what} (Spark) / delta-rs {what}",
                    by_step[f"lakectl_{what}"],
                    by_step[f"delta_{what}"],
                )
                for what in ("delete", "update", "restore")
            ),
            *(
                _ratio(
                    f"dml_{what}_arrow_vs_delta",
                    f"lakectl {what} --engine arrow / delta-rs {what} @ {rows:,}",
                    by_step[f"lakectl_{what}_arrow"],
                    by_step[f"delta_{what}"],
                    ARROW_DELETE_TARGET if what == "delete" and rows >= TARGET_ROWS else None,
                )
                for what in ("delete", "update", "restore")
            ),
            *(
                _ratio(
                    f"dml_{what}_arrow_vs_spark",
                    f"lakectl {what} --engine arrow / --engine spark (warm)",
                    by_step[f"lakectl_{what}_arrow"],
                    by_step[f"lakectl_{what}"],
                )
                for what in ("delete", "update", "restore")
            ),
        ],
    }


def _agree(mine: int, theirs: int | None) -> str:
    return "ok" if mine == theirs else f"MISMATCH: lakectl {mine:,}, delta-rs {theirs}"


def _ratio(
    name: str, label: str, mine: lb.Timing, theirs: lb.Timing, target: float | None = None
) -> dict[str, Any]:
    """``mine`` / ``theirs``: checked against ``target`` when there is one, else reported."""
    value = mine.seconds / theirs.seconds if theirs.seconds > 0 else float("inf")
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": "report" if target is None else f"<= {target}",
        "pass": None if target is None else value <= target,
    }


def render(result: dict[str, Any]) -> list[str]:
    """Timing lines for the text summary."""
    lines = [
        "",
        f"== one-off DML and restore: {result['rows']:,} rows, {result['deltas']} CDC batches "
        f"of {result['batch_rows']:,} (both engines)",
    ]
    lines += lb.timing_lines(result["timings"], LABELS)
    restore = next(t for t in result["timings"] if t["step"] == "lakectl_restore")
    lines.append(
        f"  lakectl restore: {restore['deleted']:,} deleted, {restore['reinserted']:,} written "
        f"again, method {restore['method']}, {restore['directories_read']} directories "
        f"({restore['bytes_read'] / 1e6:,.1f} MB) read"
    )
    bad = {
        k: v
        for k, v in result["checks"].items()
        if v != "ok" and not (isinstance(v, dict) and set(v.values()) == {"ok"})
    }
    lines.append("  checks: " + ("counts and rows agree across engines" if not bad else str(bad)))
    return lines  # the ratios are listed with the others
