"""A small CDC table driven through the in-process CLI with its DuckDB twin, and `lakectl`
loads in processes of their own (each its own JVM) that tests pause, kill or race."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cdc_oracle import CdcOracle
from tests.support.processes import JVM_OPTIONS

SCHEMA = "id bigint, change_ts timestamp, val string, part string"
COLUMNS = {"id": "BIGINT", "change_ts": "TIMESTAMP", "val": "VARCHAR", "part": "VARCHAR"}
HEADER = "op_code,id,change_ts,val,part"
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
PROCESS_TIMEOUT = 300


def part_of(key: int) -> str:
    """The partition of a key: p1 for 1-10 and above 20, p2 for 11-20."""
    return "p1" if key <= 10 or key > 20 else "p2"


def write_changes(path: Path, rows: list[tuple[str, int, str, str]]) -> Path:
    """A CDC file of (op, key, change time, value) rows."""
    lines = [HEADER] + [f"{op},{key},{ts},{val},{part_of(key)}" for op, key, ts, val in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


BASE = [("I", k, "2024-01-01 00:00:00", f"base{k}") for k in range(1, 21)]
CHANGES = (
    [("U", k, "2024-01-02 00:00:00", f"changed{k}") for k in range(1, 6)]
    + [("D", 6, "2024-01-02 00:00:00", ""), ("D", 7, "2024-01-02 00:00:00", "")]
    + [("I", 21, "2024-01-02 00:00:00", "new21"), ("I", 22, "2024-01-02 00:00:00", "new22")]
    + [("U", 12, "2024-01-02 00:00:00", "changed12")]
)


def start_lakectl(*args: object, failpoints: str | None = None, cwd: Path) -> subprocess.Popen:
    """``lakectl ARGS --json`` in a new process (local[1], cheap JVM options)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYSPARK_PYTHON"] = sys.executable
    if failpoints:
        env["LAKECTL_FAILPOINTS"] = failpoints
    command = [sys.executable, "-m", "lakectl", *map(str, args), "--json", "--master", "local[1]"]
    command += JVM_OPTIONS
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    """Its exit code, stdout and stderr (fails the test after the timeout)."""
    try:
        out, err = process.communicate(timeout=PROCESS_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"lakectl did not finish in {PROCESS_TIMEOUT}s: {err[-2000:]}")
    return process.returncode, out, err


class OracleTable:
    """A table driven through the in-process CLI, with its DuckDB twin."""

    def __init__(self, path: Path, cli, *, create: bool = True) -> None:
        self.path, self.cli = path, cli
        self.oracle = CdcOracle(COLUMNS, key=("id",), order_by="change_ts", op_column="op_code")
        self.loaded: list[Path] = []
        if create:
            created = cli(
                "create", path, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "part"
            )
            assert created.code == 0, created.err

    def load(self, source: Path) -> dict:
        result = self.cli("load", self.path, source, *CDC, "--json")
        assert result.code == 0, result.err
        assert result.json["counts"] == self.oracle.apply_csv(str(source), "cdc")
        self.loaded.append(source)
        return result.json

    def copy(self, path: Path) -> OracleTable:
        """An independent table in the same state, files and log copied byte for byte (loading
        each scenario's table again would cost a Spark job per load)."""
        shutil.copytree(self.path, path)
        twin = OracleTable(path, self.cli, create=False)
        for source in self.loaded:
            twin.oracle.apply_csv(str(source), "cdc")
        twin.loaded = list(self.loaded)
        return twin

    def rows(self) -> list[tuple]:
        """The current rows as a reader sees them, read with pyarrow (no Spark job: these tests
        check what crashes and races leave committed; the Spark read of such tables is checked
        in tests/ops/test_compact.py and by the crash tests' time-travel reads)."""
        result = self.cli("snapshot", self.path, "--engine", "arrow", "--json")
        assert result.code == 0, result.err
        return sorted((r["id"], r["val"], r["part"]) for r in result.json["rows"])

    def expected(self, oracle: CdcOracle | None = None) -> list[tuple]:
        return sorted((r["id"], r["val"], r["part"]) for r in (oracle or self.oracle).rows())

    def history(self) -> list[dict]:
        return self.cli("history", self.path, "--json").json["commits"]

    def log_records(self) -> list[dict]:
        log = self.path / "_lakectl" / "log"
        return [json.loads(p.read_text()) for p in sorted(log.glob("*.json"))]


def wait_for_file(path: Path, process: subprocess.Popen) -> None:
    """Until ``process`` creates ``path`` (fails the test if it exits or times out first)."""
    deadline = time.time() + PROCESS_TIMEOUT
    while not path.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    if not path.exists():
        process.kill()
        pytest.fail(f"lakectl never reached {path.name}: {process.communicate()[1][-2000:]}")
