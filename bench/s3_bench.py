"""Load and snapshot on S3 (SeaweedFS, fsspec data sources) against local files.

    python -m bench.s3_bench                # 100k rows
    python -m bench.s3_bench --rows 20000   # smoke run

Three targets in one warm Spark session (local[2]): a local table through Spark's own readers and
writers, the same local table forced through lakectl's fsspec data sources
(``spark.lakectl.orc.io=fsspec``: ACID ORC files, the CSV sources and the snapshot output, which
isolates the data sources' cost from the network's), and an ``s3://`` table on a SeaweedFS server
started here on loopback, with its sources read from and its snapshot written to S3. Each target
first gets an untimed warm-up table (Python workers, JIT), then: ``load`` of the generated CSV
(append), a CDC ``load`` of a 10% batch, and ``snapshot --out`` of the whole table as Parquet.
Prints one JSON line per measurement (with the 1-minute load average before and after) and a
summary with each step's ratio to the local Spark target.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "id bigint, name string, amount double, ts string, day string"


def write_csv(path: Path, first: int, count: int, op: str | None = None) -> None:
    """Deterministic rows ``first .. first+count-1`` over 10 days; CDC rows (``op`` given) carry
    that operation and a newer ``ts``."""
    ts = "2025-01-01 00:00:00" if op else "2024-01-01 00:00:00"
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["id", "name", "amount", "ts", "day"] + (["op"] if op else []))
        for i in range(first, first + count):
            day = f"2024-01-{i % 10 + 1:02d}"
            row: list[Any] = [i, f"name-{i % 9973}", round(i * 0.37 % 1000, 2), ts, day]
            out.writerow(row + ([op] if op else []))


def cli(*args: object) -> dict[str, Any]:
    """Run lakectl in this process (reusing its Spark session) and return its JSON."""
    import contextlib
    import io

    from lakectl.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in args] + ["--json"])
    if code != 0:
        raise SystemExit(f"lakectl {' '.join(map(str, args))} failed ({code})")
    return json.loads(out.getvalue())


def run_target(
    spark: Any, name: str, url: str, io: str, sources: dict[str, str], out: str
) -> dict[str, float]:
    """Warm up on a throwaway table, then time load, CDC load and snapshot on ``url``."""
    import os

    from lakectl.spark.fsspec_orc import IO_CONF

    spark.conf.set(IO_CONF, io)
    warm = url + "_warmup"
    cli("create", warm, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "day")
    cli("load", warm, sources["small"])
    cli("snapshot", warm, "--out", out + "_warmup")
    cli("create", url, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "day")
    times: dict[str, float] = {}
    for step, args in (
        ("load", ("load", url, sources["base"])),
        ("cdc load", ("load", url, sources["cdc"], "--mode", "cdc", "--op-column", "op",
                      "--order-by", "ts")),
        ("snapshot", ("snapshot", url, "--out", out, "--format", "parquet")),
    ):  # fmt: skip
        before = os.getloadavg()[0]
        start = time.perf_counter()
        cli(*args)
        times[step] = time.perf_counter() - start
        after = os.getloadavg()[0]
        print(json.dumps({"target": name, "step": step, "seconds": round(times[step], 2),
                          "load_avg_1m": [round(before, 1), round(after, 1)]}))  # fmt: skip
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO / "tests" / "s3"))
    import os

    from seaweed_server import BUCKET, SeaweedServer

    from lakectl.spark.session import SparkSettings, get_session

    work = Path(tempfile.mkdtemp(prefix="s3bench-"))
    local = {"small": work / "small.csv", "base": work / "base.csv", "cdc": work / "cdc.csv"}
    write_csv(local["small"], 0, 1000)
    write_csv(local["base"], 0, args.rows)
    write_csv(local["cdc"], args.rows // 2, args.rows // 10, op="U")
    server = SeaweedServer(work / "seaweed")
    server.start()
    load_avg = [os.getloadavg()[0]]
    try:
        os.environ.update(server.env())
        from lakectl.storage.fs import storage_for

        storage, _ = storage_for(f"s3://{BUCKET}/x")
        on_s3 = {k: f"s3://{BUCKET}/bench/landing/{p.name}" for k, p in local.items()}
        for key, path in local.items():
            storage.fs.put_file(str(path), on_s3[key].removeprefix("s3://"))
        spark = get_session(SparkSettings(master="local[2]"))
        plain = {k: str(p) for k, p in local.items()}
        targets = (
            ("local (Spark ORC)", str(work / "t1"), "auto", plain, str(work / "out1")),
            ("local (fsspec source)", str(work / "t2"), "fsspec", plain, str(work / "out2")),
            ("s3 (fsspec source)", f"s3://{BUCKET}/bench/t3", "auto", on_s3,
             f"s3://{BUCKET}/bench/out3"),
        )  # fmt: skip
        results = {
            name: run_target(spark, name, url, io, sources, out)
            for name, url, io, sources, out in targets
        }
        load_avg.append(os.getloadavg()[0])
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{args.rows} rows; seconds (one warm Spark session, local[2]); 1-minute load average "
        f"{load_avg[0]:.1f} at the start, {load_avg[-1]:.1f} at the end, on {os.cpu_count()} cores"
    )
    reference = results["local (Spark ORC)"]
    print(f"{'target':24} {'load':>8} {'cdc load':>9} {'snapshot':>9}   ratios to local Spark")
    for name, t in results.items():
        ratios = " ".join(f"{t[s] / reference[s]:5.2f}x" for s in ("load", "cdc load", "snapshot"))
        print(f"{name:24} {t['load']:8.1f} {t['cdc load']:9.1f} {t['snapshot']:9.1f}   {ratios}")


if __name__ == "__main__":
    main()
