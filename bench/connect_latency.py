"""Latency of one lakectl command: a fresh local JVM per command vs a warm Spark Connect server.

    python -m bench.connect_latency              # the sample sales table, 3 repetitions
    python -m bench.connect_latency --repeat 5

Loads sample_data/sales (three CDC batches) into a temporary table, starts a Connect server on
127.0.0.1, waits until one command has warmed it, then times `lakectl snapshot` and `lakectl
load` (a CDC batch) in new processes: with `--master local[2]` (each one starts a JVM) and with
`--remote sc://...` (each one only opens a gRPC channel). Wall time per process, as a user sees it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lakectl.spark.daemons import free_port, start_connect_server

SALES = Path(__file__).resolve().parents[1] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")


def timed_lakectl(*args: object) -> float:
    """Seconds one ``python -m lakectl ARGS --json`` process takes, start to exit."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "lakectl", *map(str, args), "--json"],
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")},
    )
    return time.perf_counter() - started


def main() -> None:
    """Run the comparison and print a small table of median / min / max seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory(prefix="lakectl-connect-bench-") as tmp:
        wh = ("--warehouse", Path(tmp) / "wh")
        port = free_port()
        server = start_connect_server(port, Path(tmp) / "server.log", master="local[2]")
        remote = ("--remote", f"sc://127.0.0.1:{port}")
        try:
            timed_lakectl(*wh, "create", "sales", "--schema", SCHEMA,
                          "--primary-key", "sell_id", "--partition-by", "create_date")  # fmt: skip
            for name in ("base.csv", "cdc_batch_1.csv"):
                timed_lakectl(*wh, *remote, "load", "sales", SALES / name, *CDC)  # warms it
            commands = {
                "snapshot": ("snapshot", "sales", "--where", "store_id = 'S01'"),
                # --force: the same batch each time (else every load after the first is skipped)
                "load": ("load", "sales", SALES / "cdc_batch_2.csv", *CDC, "--force"),
            }
            print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print(f"{'command':<10}{'mode':<22}{'median s':>10}{'min s':>8}{'max s':>8}")
            for name, command in commands.items():
                for mode, spark_args in (("fresh JVM local[2]", ("--master", "local[2]")),
                                         ("warm Connect server", remote)):  # fmt: skip
                    times = [timed_lakectl(*wh, *spark_args, *command) for _ in range(repeat)]
                    print(
                        f"{name:<10}{mode:<22}{statistics.median(times):>10.2f}"
                        f"{min(times):>8.2f}{max(times):>8.2f}"
                    )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
