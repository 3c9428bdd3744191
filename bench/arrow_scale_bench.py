"""The Arrow engine at 10M rows next to delta-rs: a warm CDC load of a 500k-row batch against
delta-rs' MERGE of the same batch, a delete of 1% of the rows against delta-rs' delete, and each
lakectl step's peak memory next to the size of the largest partition it handled.

    python -m bench.arrow_scale_bench [--rows 10000000] [--batch 500000] [--dates 40]
    python -m bench.run_all --only arrow-scale     # the same inside `make bench` (5% batch)

The data is :mod:`bench.datagen`'s (a base of ``rows`` rows over ``dates`` create_date
partitions, one CDC batch of 60% updates, 30% inserts, 10% deletes). lakectl's table is created
and its base appended with ``--engine arrow``; delta-rs writes the same base. Each lakectl step
runs in its own new Python process that imports lakectl first and opens the table (warm: the
imports and the log read are not timed) so that its peak resident memory is the step's own,
not the base load's; delta-rs runs in this process. Both tables must hold the same number of
rows after the steps. The bases are made once per dataset (kept under
``<data dir>/arrow-scale-<rows>/``) and copied for each run.

Targets: the Arrow engine's CDC load at most :data:`LOAD_TARGET` of delta-rs' MERGE; its delete
at most :data:`DELETE_TARGET` of delta-rs' delete.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from bench import datagen
from bench import load_bench as lb

LOAD_TARGET = 0.5
DELETE_TARGET = 0.3
DELETE_WHERE = "sell_id % 100 = 7"
LABELS = {
    "lakectl_base_append_arrow": "lakectl: load the base (append, --engine arrow)",
    "delta_write_base": "delta-rs: write_deltalake(base)",
    "lakectl_cdc_load_arrow": "lakectl: load --mode cdc --engine arrow (warm process)",
    "delta_merge": "delta-rs: MERGE of the same batch",
    "lakectl_delete_arrow": f"lakectl: delete --where {DELETE_WHERE!r} --engine arrow (warm)",
    "delta_delete": "delta-rs: DeltaTable.delete(predicate)",
}


# --- lakectl steps, each in a new process -------------------------------------------------------


def _worker(step: str, table: str, source: str) -> dict[str, Any]:
    """One lakectl step in this (new) process; what it did, its time and peak memory."""
    from lakectl.arrow.bucket_compaction import peak_memory_bytes
    from lakectl.ops.dml import DmlRequest, run_dml
    from lakectl.ops.load import LoadOptions, load

    ctx = lb.lakectl_context(os.path.dirname(table))
    ctx.table(table).read_state()  # warm: imports and the first log read not timed
    before = peak_memory_bytes()
    started = time.perf_counter()
    if step == "load":
        options = LoadOptions(
            source=source,
            format="parquet",
            mode="cdc",
            op_column="op_code",
            order_by="change_ts",
            engine="arrow",
        )
        result: Any = load(ctx, table, options)
        counts = result.counts
    elif step == "append":
        options = LoadOptions(source=source, format="parquet", mode="append", engine="arrow")
        result = load(ctx, table, options)
        counts = result.counts
    else:
        result = run_dml(ctx, table, DmlRequest("delete", where=source, engine="arrow"))
        counts = result.counts
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "counts": counts,
        "engine": result.engine,
        "phases_s": {k: round(v, 3) for k, v in getattr(result, "phases", {}).items()},
        "peak_memory_bytes": result.peak_memory_bytes,
        "memory_before_bytes": before,
    }


def _run_worker(step: str, name: str, table: str, source: str) -> lb.Timing:
    command = [sys.executable, "-m", "bench.arrow_scale_bench", "--worker", step, table, source]
    lb.log(f"arrow scale bench: {name}")
    load_before = os.getloadavg()[0]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {proc.stdout}{proc.stderr[-3000:]}")
    done = json.loads(proc.stdout.strip().splitlines()[-1])
    timing = lb.Timing(name, done.pop("seconds"), load_before, os.getloadavg()[0])
    timing.detail = done
    return timing


# --- sizes --------------------------------------------------------------------------------------


def _largest_partition(path: str) -> dict[str, Any]:
    """The largest create_date partition of the Parquet data at ``path``: rows, and its rows'
    size in memory as Arrow holds them."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(path, format="parquet").to_table()
    counts = pc.value_counts(table.column(datagen.PARTITION_BY)).to_pylist()
    largest = max(counts, key=lambda c: c["counts"])
    rows = table.filter(pc.equal(table.column(datagen.PARTITION_BY), largest["values"]))
    return {
        "partition": largest["values"],
        "rows": largest["counts"],
        "arrow_bytes": rows.nbytes,
        "partitions": len(counts),
        "all_rows_arrow_bytes": table.nbytes,
    }


def _stored_partition_bytes(table: str) -> int:
    """The bytes on disk of the table's largest partition directory."""
    sizes = []
    for entry in os.scandir(table):
        if entry.is_dir() and "=" in entry.name:
            total = 0
            for root, _, files in os.walk(entry.path):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
            sizes.append(total)
    return max(sizes, default=0)


# --- the run ------------------------------------------------------------------------------------


def _ratio(name: str, label: str, ours: lb.Timing, theirs: lb.Timing, target: float) -> dict:
    value = ours.seconds / theirs.seconds if theirs.seconds else float("inf")
    return {
        "name": name,
        "label": label,
        "value": round(value, 3),
        "target": target,
        "pass": value <= target,
    }


_LAKECTL_BASE = "lakectl-base"
_DELTA_BASE = "delta-base"


def _bases(root: str, dataset: datagen.Dataset) -> list[lb.Timing]:
    """lakectl's table (the base appended by the Arrow engine) and delta-rs' (the base
    written), made once per dataset and copied for each run (the steps change them)."""
    from lakectl.ops.create import create_table

    done = os.path.join(root, "bases.json")
    if dataset.reused and os.path.exists(done):
        with open(done) as handle:
            return [lb.Timing(**t) for t in json.load(handle)]
    table = os.path.join(root, _LAKECTL_BASE)
    shutil.rmtree(table, ignore_errors=True)
    ctx = lb.lakectl_context(root)
    create_table(ctx.table(table), datagen.SCHEMA, (datagen.PRIMARY_KEY,), (datagen.PARTITION_BY,))
    timings = [_run_worker("append", "lakectl_base_append_arrow", table, dataset.base_path)]
    lb.log("arrow scale bench: delta-rs base")
    timings.append(lb.delta_write_base(os.path.join(root, _DELTA_BASE), dataset))
    with open(done, "w") as handle:
        json.dump(
            [
                {
                    "step": t.step,
                    "seconds": t.seconds,
                    "load_before": t.load_before,
                    "load_after": t.load_after,
                    "detail": t.detail,
                }
                for t in timings
            ],
            handle,
        )
    return timings


def run(data_dir: str, rows: int, batch_rows: int, dates: int) -> dict[str, Any]:
    """The whole comparison; returns timings, ratios and memory figures."""
    from deltalake import DeltaTable

    root = os.path.join(data_dir, f"arrow-scale-{rows}")
    lb.log(f"arrow scale bench: generating {rows:,} rows + a {batch_rows:,}-row CDC batch")
    dataset = datagen.generate(None, os.path.join(root, "data"), rows, dates, [("cdc", batch_rows)])
    batch = dataset.batch("cdc")
    timings = _bases(root, dataset)
    table = os.path.join(root, "lakectl", "sales")
    delta = os.path.join(root, "delta", "sales")
    for base, work in ((_LAKECTL_BASE, table), (_DELTA_BASE, delta)):
        shutil.rmtree(os.path.dirname(work), ignore_errors=True)
        shutil.copytree(os.path.join(root, base), work, symlinks=True)
    load = _run_worker("load", "lakectl_cdc_load_arrow", table, batch.path)
    lb.log("arrow scale bench: delta-rs MERGE")
    merge = lb.delta_merge(delta, batch, "delta_merge")
    stored_after_load = _stored_partition_bytes(table)
    delete = _run_worker("delete", "lakectl_delete_arrow", table, DELETE_WHERE)
    lb.log("arrow scale bench: delta-rs delete")
    delta_delete, _ = lb.timed(
        "delta_delete", lambda: DeltaTable(delta).delete(predicate=DELETE_WHERE)
    )
    timings += [load, merge, delete, delta_delete]
    lakectl_rows = _lakectl_rows(table)
    delta_rows = lb.delta_row_count(delta)
    expected = dataset.expected_rows() - delete.detail["counts"]["deleted"]
    memory = {
        "batch_largest_partition": _largest_partition(batch.path),
        "base_largest_partition": _largest_partition(dataset.base_path),
        "stored_largest_partition_bytes": stored_after_load,
        "load_peak_bytes": load.detail["peak_memory_bytes"],
        "load_before_bytes": load.detail["memory_before_bytes"],
        "delete_peak_bytes": delete.detail["peak_memory_bytes"],
        "delete_before_bytes": delete.detail["memory_before_bytes"],
    }
    # what the load added to the process, in multiples of the largest partition as Arrow
    memory["load_growth_per_largest_partition"] = round(
        (memory["load_peak_bytes"] - memory["load_before_bytes"])
        / max(1, memory["base_largest_partition"]["arrow_bytes"]),
        1,
    )
    return {
        "rows": rows,
        "batch_rows": batch_rows,
        "dates": dates,
        "timings": [t.to_json() for t in timings],
        "ratios": [
            _ratio(
                "arrow_load_vs_delta_merge",
                "CDC load: Arrow / delta-rs MERGE",
                load,
                merge,
                LOAD_TARGET,
            ),
            _ratio(
                "arrow_delete_vs_delta_delete",
                "delete 1%: Arrow / delta-rs",
                delete,
                delta_delete,
                DELETE_TARGET,
            ),
        ],
        "checks": {
            "rows_lakectl": lakectl_rows,
            "rows_delta": delta_rows,
            "rows_expected": expected,
            "ok": lakectl_rows == delta_rows == expected,
        },
        "memory": memory,
    }


def _lakectl_rows(table: str) -> int:
    """The table's live rows, counted by the Arrow reader in a new process."""
    code = (
        "import sys, lakectl\n"
        "scan = lakectl.open_table(sys.argv[1]).scan(engine='arrow')\n"
        "print(sum(b.num_rows for b in scan.to_batches()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, table], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return -1
    return int(proc.stdout.strip().splitlines()[-1])


def render(report: dict[str, Any]) -> list[str]:
    """Markdown lines: timings, ratios, memory."""
    mb = 1 << 20
    lines = [
        f"### Arrow engine at {report['rows']:,} rows ({report['batch_rows']:,}-row CDC batch)",
        "",
        *lb.timing_lines(report["timings"], LABELS),
        "",
    ]
    for r in report["ratios"]:
        mark = "met" if r["pass"] else "MISSED"
        lines.append(f"- {r['label']}: {r['value']:.2f}x (target {r['target']}x, {mark})")
    m = report["memory"]
    part = m["batch_largest_partition"]
    base = m["base_largest_partition"]
    lines += [
        f"- load peak memory {m['load_peak_bytes'] / mb:.0f} MB (process {m['load_before_bytes'] / mb:.0f}"
        f" MB before the load); the batch's largest partition: {part['rows']:,} rows,"
        f" {part['arrow_bytes'] / mb:.0f} MB in Arrow (whole batch {part['all_rows_arrow_bytes'] / mb:.0f} MB);"
        f" the table's largest partition: {base['rows']:,} rows, {base['arrow_bytes'] / mb:.0f} MB"
        f" in Arrow, {m['stored_largest_partition_bytes'] / mb:.0f} MB stored; the load added"
        f" {m['load_growth_per_largest_partition']}x that partition's Arrow size",
        f"- delete peak memory {m['delete_peak_bytes'] / mb:.0f} MB (process"
        f" {m['delete_before_bytes'] / mb:.0f} MB before)",
        f"- rows after: lakectl {report['checks']['rows_lakectl']:,}, delta-rs"
        f" {report['checks']['rows_delta']:,}, expected {report['checks']['rows_expected']:,}",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("STEP", "TABLE", "SOURCE"))
    parser.add_argument("--rows", default="10000000")
    parser.add_argument("--batch", default="500000")
    parser.add_argument("--dates", type=int, default=40)
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("BENCH_DATA_DIR")
        or os.path.join(os.environ.get("TMPDIR", "/tmp"), "lakectl-bench"),
    )
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return
    report = run(
        args.data_dir, int(args.rows.replace("_", "")), int(args.batch.replace("_", "")), args.dates
    )
    print("\n".join(render(report)))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
