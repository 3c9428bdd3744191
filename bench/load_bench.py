"""The timed steps: lakectl (session start, cold load, warm load, snapshot), delta-rs MERGE and a
naive Spark full rewrite, all on the files ``bench.datagen`` wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.datagen import COLUMNS, PARTITION_BY, PRIMARY_KEY, SCHEMA, BatchSpec, Dataset

T = TypeVar("T")
CDC_ARGS = ["--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts"]


@dataclass
class Timing:
    """One measured step: wall seconds plus the machine's load while it ran."""

    step: str
    seconds: float
    load_before: float
    load_after: float
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "seconds": round(self.seconds, 3),
            "loadavg_1m_before": round(self.load_before, 2),
            "loadavg_1m_after": round(self.load_after, 2),
            **self.detail,
        }


def timed(step: str, fn: Callable[[], T]) -> tuple[Timing, T]:
    before = os.getloadavg()[0]
    started = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - started
    return Timing(step, seconds, before, os.getloadavg()[0]), result


def env_flag(name: str) -> bool:
    """Whether an environment variable is set to a true value."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def add_common_arguments(parser: Any) -> None:
    """Options every bench entry point takes: partitions, where data goes, keep, quick."""
    import tempfile

    parser.add_argument("--dates", type=int, default=int(os.environ.get("BENCH_DATES", "40")))
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("BENCH_DATA_DIR")
        or os.path.join(tempfile.gettempdir(), "lakectl-bench"),
    )
    parser.add_argument("--keep", action="store_true", default=env_flag("BENCH_KEEP"))
    parser.add_argument("--quick", action="store_true", default=env_flag("BENCH_QUICK"))


def timing_lines(timings: list[dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """One aligned text line per timed step, with the machine's load around it."""
    width = max(len(v) for v in labels.values())
    lines = []
    for t in timings:
        label = labels.get(t["step"], t["step"])
        note = f"load {t['loadavg_1m_before']:.1f}->{t['loadavg_1m_after']:.1f}"
        lines.append(f"  {label:<{width}}  {t['seconds']:>8.2f} s   {note}")
    return lines


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- Spark ------------------------------------------------------------------------------------


def start_session():
    """lakectl's own session (lakectl.spark.session defaults), as every lakectl command gets."""
    from lakectl.spark.session import SparkSettings, get_session

    return get_session(SparkSettings())


_SESSION_PROBE = """
import json, time
t0 = time.perf_counter()
import pyspark.sql  # noqa
t1 = time.perf_counter()
from lakectl.spark.session import SparkSettings, get_session
get_session(SparkSettings()).range(1).count()
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "session": t2 - t1}))
"""


def session_start_fresh_process() -> Timing:
    """Start lakectl's Spark session in a new Python process: interpreter, imports, JVM, first job."""
    timing, proc = timed(
        "session_start_fresh_process",
        lambda: subprocess.run(
            [sys.executable, "-c", _SESSION_PROBE], capture_output=True, text=True, check=False
        ),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"session probe failed: {proc.stderr[-2000:]}")
    inner = json.loads(proc.stdout.strip().splitlines()[-1])
    timing.detail = {
        "pyspark_import_s": round(inner["import"], 3),
        "session_and_first_job_s": round(inner["session"], 3),
    }
    return timing


# --- lakectl ----------------------------------------------------------------------------------


def lakectl_context(warehouse: str):
    from lakectl.config import Config
    from lakectl.ops.context import Context

    return Context(config=Config(warehouse=warehouse))


def lakectl_create_and_load_base(ctx, table: str, dataset: Dataset) -> Timing:
    from lakectl.ops.create import create_table
    from lakectl.ops.load import LoadOptions, load

    if os.path.exists(table):
        shutil.rmtree(table)
    create_table(ctx.table(table), SCHEMA, (PRIMARY_KEY,), (PARTITION_BY,))
    options = LoadOptions(source=dataset.base_path, format="parquet", mode="append")
    timing, result = timed("lakectl_base_append", lambda: load(ctx, table, options))
    timing.detail = _load_detail(result)
    return timing


def _load_detail(result) -> dict[str, Any]:
    return {
        "counts": result.counts,
        "phases_s": {k: round(v, 3) for k, v in result.phases.items()},
        "in_process_s": round(result.seconds, 3),
        "directories_added": len(result.added),
    }


def lakectl_load_warm(ctx, table: str, batch: BatchSpec, step: str) -> Timing:
    """A CDC load in this process's (already running) session."""
    from lakectl.ops.load import LoadOptions, load

    options = LoadOptions(
        source=batch.path, format="parquet", mode="cdc", op_column="op_code", order_by="change_ts"
    )
    timing, result = timed(step, lambda: load(ctx, table, options))
    timing.detail = {"batch": batch.name, "batch_rows": batch.rows, **_load_detail(result)}
    return timing


def lakectl_load_cold(table: str, batch: BatchSpec) -> Timing:
    """``lakectl load`` as a new process (cold JVM): the wall time of the whole command."""
    exe = Path(sys.executable).with_name("lakectl")
    cmd = [str(exe), "load", table, batch.path, "--format", "parquet", *CDC_ARGS, "--json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    timing, proc = timed(
        "lakectl_load_cold_cli",
        lambda: subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=env, cwd=os.path.dirname(table)
        ),
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stdout}{proc.stderr}"
        )
    out = json.loads(proc.stdout)
    timing.detail = {
        "batch": batch.name,
        "batch_rows": batch.rows,
        "counts": out["counts"],
        "in_process_s": out["seconds"],  # load() incl. its session start, excl. Python startup
        "command": " ".join(cmd),
    }
    return timing


def lakectl_snapshot_out(ctx, table: str, out: str) -> Timing:
    """``lakectl snapshot TABLE --out OUT --format parquet`` in the warm session."""
    from lakectl.ops.snapshot import SnapshotRequest, snapshot

    if os.path.exists(out):
        shutil.rmtree(out)
    request = SnapshotRequest(out=out, out_format="parquet")
    timing, result = timed("lakectl_snapshot_to_parquet", lambda: snapshot(ctx, table, request))
    timing.detail = {"rows": result.rows_written}
    return timing


def lakectl_snapshot_count(ctx, table: str) -> Timing:
    """Merge-on-read of every column of every row, counted (no output written)."""
    from pyspark.sql import functions as F

    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.scan.target import open_for_read

    def run() -> int:
        target = open_for_read(ctx.table(table))
        frame = snapshot_frame(ctx, target, SnapshotRequest())
        # Hash every column so the read cannot skip decoding any of them.
        row = frame.agg(F.count(F.lit(1)), F.sum(F.hash(*frame.columns))).collect()[0]
        return int(row[0])

    timing, rows = timed("lakectl_snapshot_hash_all_columns", run)
    timing.detail = {"rows": rows}
    return timing


def lakectl_row_count(ctx, table: str) -> int:
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.scan.target import open_for_read

    target = open_for_read(ctx.table(table))
    return int(snapshot_frame(ctx, target, SnapshotRequest()).count())


# --- delta-rs ---------------------------------------------------------------------------------


def delta_write_base(path: str, dataset: Dataset) -> Timing:
    import pyarrow.dataset as ds
    from deltalake import write_deltalake

    if os.path.exists(path):
        shutil.rmtree(path)

    def run() -> None:
        reader = ds.dataset(dataset.base_path, format="parquet").scanner().to_reader()
        write_deltalake(path, reader, partition_by=[PARTITION_BY], mode="error")

    timing, _ = timed("delta_write_base", run)
    return timing


def delta_merge(path: str, batch: BatchSpec, step: str) -> Timing:
    """MERGE the batch (read from its Parquet file inside the timing) with lakectl's semantics:
    key = sell_id within its create_date partition; a change applies only if newer (change_ts)."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    def run() -> dict[str, Any]:
        source = ds.dataset(batch.path, format="parquet").to_table()
        newer = "s.change_ts > t.change_ts"
        return (
            DeltaTable(path)
            .merge(
                source=source,
                predicate="t.sell_id = s.sell_id AND t.create_date = s.create_date",
                source_alias="s",
                target_alias="t",
            )
            .when_matched_delete(predicate=f"s.op_code = 'D' AND {newer}")
            .when_matched_update_all(predicate=f"s.op_code <> 'D' AND {newer}")
            .when_not_matched_insert_all(predicate="s.op_code <> 'D'")
            .execute()
        )

    timing, metrics = timed(step, run)
    keep = (
        "num_target_rows_updated",
        "num_target_rows_inserted",
        "num_target_rows_deleted",
        "num_target_files_added",
        "num_target_files_removed",
        "num_target_rows_copied",
    )
    timing.detail = {
        "batch": batch.name,
        "batch_rows": batch.rows,
        "metrics": {k: metrics.get(k) for k in keep},
    }
    return timing


def delta_row_count(path: str) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(path).to_pyarrow_dataset().count_rows())


# --- naive Spark rewrite ----------------------------------------------------------------------


def naive_rewrite(spark, dataset: Dataset, batch: BatchSpec, out: str) -> Timing:
    """The table kept as plain Parquet: union it with the batch, keep the newest version of each
    key, drop deletes, and overwrite the whole table (partitioned by create_date)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if os.path.exists(out):
        shutil.rmtree(out)

    def run() -> None:
        table = spark.read.parquet(dataset.base_path)
        changes = spark.read.parquet(batch.path)
        both = table.unionByName(changes)
        window = Window.partitionBy(PRIMARY_KEY).orderBy(F.col("change_ts").desc())
        latest = (
            both.withColumn("__rn", F.row_number().over(window))
            .where("__rn = 1 AND op_code <> 'D'")
            .select(*COLUMNS)
        )
        latest.write.mode("overwrite").partitionBy(PARTITION_BY).parquet(out)

    timing, _ = timed("naive_spark_rewrite", run)
    timing.detail = {"batch": batch.name, "batch_rows": batch.rows}
    return timing


def parquet_copy(spark, source: str, out: str) -> Timing:
    """Reference for the snapshot read: read a plain Parquet table (no merge) and write it out."""
    if os.path.exists(out):
        shutil.rmtree(out)
    timing, _ = timed(
        "plain_parquet_read_write", lambda: spark.read.parquet(source).write.parquet(out)
    )
    return timing
