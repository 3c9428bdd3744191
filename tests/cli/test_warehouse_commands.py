"""``lakectl tables`` and ``lakectl maintain`` where no Spark is needed: listings in every format
with a damaged table among them, a missing warehouse, waiting for a locked table, table-name
completion, and proof that listing and planning never start a JVM (a fake ``java`` on PATH)."""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.shell_completion import ShellComplete

from lakectl.cli.main import cli
from lakectl.storage.fs import storage_for
from lakectl.table.maintenance_lock import MaintenanceLock
from lakectl.table.store import TableStore
from tests.support.cli import run_lakectl
from tests.support.paths import REPO

SCHEMA = "id bigint, v string"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """`sales` and `orders` (empty), `broken` (log entry 0 damaged), and `hive_t` (a folder
    without `_lakectl`, not a lakectl table)."""
    wh = tmp_path / "wh"
    for name in ("sales", "orders", "broken"):
        created = run_lakectl("create", name, "--warehouse", wh, "--schema", SCHEMA)
        assert created.code == 0, created.err
    (wh / "broken" / "_lakectl" / "log" / f"{0:020d}.json").write_text("[1, 2")
    (wh / "hive_t" / "base_0000001").mkdir(parents=True)
    return wh


def test_tables_lists_each_table_and_a_damaged_one_with_its_error(warehouse: Path) -> None:
    run = run_lakectl("tables", "--warehouse", warehouse, "--json")
    assert run.code == 0, run.err
    assert run.json["warehouse"] == f"file://{warehouse}"
    tables = {t["table"]: t for t in run.json["tables"]}
    assert list(tables) == ["broken", "orders", "sales"]
    assert {k: tables["sales"][k] for k in ("version", "rows", "bytes", "deltas")} == {
        "version": 0,
        "rows": 0,
        "bytes": 0,
        "deltas": 0,
    }
    assert tables["sales"]["pending_compaction"] == [] and tables["sales"]["error"] is None
    assert tables["sales"]["last_commit"].endswith("Z")
    assert tables["broken"]["error"]["type"] == "format"
    assert f"{warehouse}/broken/_lakectl/log/" in tables["broken"]["error"]["message"]
    assert tables["broken"]["version"] is None

    as_csv = run_lakectl("tables", "--warehouse", warehouse, "--format", "csv")
    assert as_csv.code == 0, as_csv.err
    rows = list(csv.DictReader(io.StringIO(as_csv.out)))
    assert [r["table"] for r in rows] == ["broken", "orders", "sales"]
    assert list(rows[0]) == [
        "table",
        "version",
        "rows",
        "bytes",
        "deltas",
        "pending_compaction",
        "last_commit",
        "error",
    ]
    assert rows[2]["bytes"] == "0" and rows[2]["last_commit"] == tables["sales"]["last_commit"]
    plain = run_lakectl("tables", "--warehouse", warehouse)
    assert plain.code == 0 and "damaged" in plain.out and "hive_t" not in plain.out


def test_a_missing_warehouse_is_not_found(tmp_path: Path) -> None:
    for command in ("tables", "maintain"):
        run = run_lakectl(command, "--warehouse", tmp_path / "nowhere", "--json")
        assert run.code == 66, run.err
        assert run.json["error"]["message"] == f"warehouse file://{tmp_path}/nowhere does not exist"
        assert "--warehouse" in run.json["error"]["hint"]


def test_maintain_waits_for_a_locked_table_with_wait(warehouse: Path) -> None:
    storage, path = storage_for(str(warehouse / "sales"))
    lock = MaintenanceLock(TableStore(storage, path, "sales"))
    assert lock.acquire() is None
    skipped = run_lakectl("maintain", "sales", "orders", "--warehouse", warehouse, "--json")
    assert skipped.code == 0, skipped.err
    assert [t["status"] for t in skipped.json["tables"]] == ["skipped", "ok"]
    threading.Timer(0.3, lock.release).start()
    waited = run_lakectl("maintain", "sales", "--wait", "--warehouse", warehouse, "--json")
    assert waited.code == 0, waited.err
    assert [t["status"] for t in waited.json["tables"]] == ["ok"]
    assert not (warehouse / "sales" / "_lakectl" / "maintain.lock").exists()


def test_maintain_names_a_missing_table_and_goes_on(warehouse: Path) -> None:
    run = run_lakectl("maintain", "slaes", "sales", "--warehouse", warehouse)
    assert run.code == 79, run.err
    assert "slaes" in run.out and "does not exist" in run.out
    assert "2 table(s): 1 ok, 0 skipped, 1 failed" in run.out


def test_table_names_complete_from_the_warehouse_given_so_far(warehouse: Path) -> None:
    complete = ShellComplete(cli, {}, "lakectl", "_LAKECTL_COMPLETE")

    def names(args: list[str], incomplete: str) -> list[str]:
        return [c.value for c in complete.get_completions(args, incomplete)]

    assert names(["history", "--warehouse", str(warehouse)], "s") == ["sales"]
    assert names(["--warehouse", str(warehouse), "compact"], "") == ["broken", "orders", "sales"]
    assert names(["maintain", "--warehouse", str(warehouse), "sales"], "o") == ["orders"]
    assert names(["history", "--warehouse", str(warehouse)], "./s") == []
    assert names(["history", "--warehouse", str(warehouse / "nowhere")], "") == []


def test_listing_and_planning_never_start_a_jvm(warehouse: Path, tmp_path: Path) -> None:
    """The commands run as users run them, with a `java` that records being called."""
    marker = tmp_path / "java-was-called"
    fake = tmp_path / "fakejava" / "bin"
    fake.mkdir(parents=True)
    java = fake / "java"
    java.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
        "JAVA_HOME": str(fake.parent),
        "PYTHONPATH": str(REPO),
    }
    for args in (["tables"], ["maintain", "--dry-run"], ["maintain", "sales", "orders"]):
        done = subprocess.run(
            [sys.executable, "-m", "lakectl", *args, "--warehouse", str(warehouse), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (0, 79), done.stderr
        assert not marker.exists(), f"{args} started a JVM"
