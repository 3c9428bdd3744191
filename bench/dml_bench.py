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

Each lakectl step runs in this process's warm session (the command's work, not the JVM start);
each delta-rs step opens the table, as a new ``DeltaTable`` would. Counts must agree between the
engines, and after the three steps both tables must hold the same rows (count, sum of
``total_amt``, rows per status). The ratios (lakectl / delta-rs) are reported; the issue sets
no target for them.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from bench import compact_bench as cb
from bench import load_bench as lb

DELETE_WHERE = "sell_id % 100 = 7"
UPDATE_WHERE = "sell_id % 100 = 11"
UPDATE_SET = {"status_id": "'CANCELLED'", "total_amt": "0.0"}
LABELS = {
    "lakectl_restore": "lakectl: restore --version (10 loads back)",
    "delta_restore": "delta-rs: DeltaTable.restore(version)",
    "lakectl_delete": f"lakectl: delete --where {DELETE_WHERE!r}",
    "delta_delete": "delta-rs: DeltaTable.delete(predicate)",
    "lakectl_update": f"lakectl: update --set ... --where {UPDATE_WHERE!r}",
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


def _lakectl_restore(ctx, table: str, version: int) -> lb.Timing:
    from lakectl.ops.restore import restore

    timing, result = cb._cpu_timed("lakectl_restore", lambda: restore(ctx, table, version=version))
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
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    data = DeltaTable(path).to_pyarrow_table(columns=["total_amt", "status_id"])
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
    delta = os.path.join(root, "delta", "sales")
    lb.log("dml bench: delta-rs writes the base and MERGEs the same batches")
    timings.append(lb.delta_write_base(delta, dataset))
    for batch in dataset.batches:
        lb.delta_merge(delta, batch, f"delta_merge_{batch.name}")
    checks: dict[str, Any] = {}

    lb.log("dml bench: restore 10 loads back")
    timings.append(_lakectl_restore(ctx, table, _base_version(ctx, table)))
    timings.append(_delta_step("delta_restore", lambda: DeltaTable(delta).restore(0)))
    checks["rows_after_restore"] = {
        "lakectl": cb._check(lb.lakectl_row_count(ctx, table), rows),
        "delta": cb._check(lb.delta_row_count(delta), rows),
    }

    lb.log(f"dml bench: delete where {DELETE_WHERE}")
    timings.append(
        _lakectl_dml(ctx, table, "lakectl_delete", DmlRequest("delete", where=DELETE_WHERE))
    )
    timings.append(
        _delta_step("delta_delete", lambda: DeltaTable(delta).delete(predicate=DELETE_WHERE))
    )
    lb.log(f"dml bench: update where {UPDATE_WHERE}")
    assignments = ", ".join(f"{c} = {v}" for c, v in UPDATE_SET.items())
    request = DmlRequest("update", where=UPDATE_WHERE, assignments=assignments)
    timings.append(_lakectl_dml(ctx, table, "lakectl_update", request))
    timings.append(
        _delta_step(
            "delta_update",
            lambda: DeltaTable(delta).update(updates=UPDATE_SET, predicate=UPDATE_WHERE),
        )
    )
    by_step = {t.step: t for t in timings}
    checks["deleted"] = _agree(
        by_step["lakectl_delete"].detail["deleted"],
        by_step["delta_delete"].detail["metrics"].get("num_deleted_rows"),
    )
    checks["updated"] = _agree(
        by_step["lakectl_update"].detail["updated"],
        by_step["delta_update"].detail["metrics"].get("num_updated_rows"),
    )
    mine, theirs = _lakectl_summary(ctx, table), _delta_summary(delta)
    checks["same_rows_at_end"] = "ok" if mine == theirs else f"MISMATCH: {mine} vs {theirs}"
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
            _ratio(what, by_step[f"lakectl_{what}"], by_step[f"delta_{what}"])
            for what in ("delete", "update", "restore")
        ],
    }


def _agree(mine: int, theirs: int | None) -> str:
    return "ok" if mine == theirs else f"MISMATCH: lakectl {mine:,}, delta-rs {theirs}"


def _ratio(what: str, mine: lb.Timing, theirs: lb.Timing) -> dict[str, Any]:
    value = mine.seconds / theirs.seconds if theirs.seconds > 0 else float("inf")
    return {
        "name": f"dml_{what}_vs_delta",
        "label": f"lakectl {what} / delta-rs {what}",
        "value": round(value, 3),
        "target": "report",
        "pass": None,  # no target: reported
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
