"""``delete``, ``update`` and ``restore`` under crashes, concurrent writers and clean: a killed
command leaves the table readable and unchanged and a rerun completes; a concurrent data commit
is a conflict that commits nothing; a restore inside the retention window works after compaction
and clean, outside it is the clear error."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.table.log import CommitRecord, Operation, find_conflict
from tests.support.arrow_loads import load_rows
from tests.support.cli import run_lakectl_until_crash
from tests.support.processes import run_crashing

SCHEMA = "id bigint, label string, qty int, day string"


def _rows(table: lakectl.Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.scan(**kw).to_spark().collect())


def _state(table: lakectl.Table) -> tuple[int, int, list[tuple[Any, ...]]]:
    """Version, history length and rows (read with pyarrow: no Spark job for a check; the rows
    after each command that changes them are read with Spark)."""
    table.refresh()  # what other processes committed
    rows = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    return table.version, len(table.history()), rows


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two loads over three partitions (the second updates half of the first's keys), made once:
    each test works on a byte-for-byte copy (see :func:`table`)."""
    path = tmp_path_factory.mktemp("loaded") / "t"
    table = lakectl.create_table(str(path), schema=SCHEMA, primary_key="id", partition_by="day")
    load_rows(table, [(i, f"a{i}", i % 4, f"d{i % 3}") for i in range(30)], SCHEMA)
    load_rows(table, [(i, f"b{i}", 9, f"d{i % 3}") for i in range(15, 45)], SCHEMA)
    return path


@pytest.fixture
def table(spark, loaded: Path, tmp_path: Path) -> lakectl.Table:
    """A copy of the :func:`loaded` table, files and log byte for byte, for this test alone."""
    shutil.copytree(loaded, tmp_path / "t")
    return lakectl.open_table(str(tmp_path / "t"))


# --- kill -9 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["dml.before_commit", "write.after_first_move"])
def test_a_killed_update_changes_nothing_and_a_rerun_completes(table, point) -> None:
    """Stopped in this process as a kill would stop it (no abort runs); a real kill of this
    write protocol: test_crash_and_concurrency."""
    before = _state(table)
    args = ("update", table.location, "--set", "qty = qty + 1", "--where", "day = 'd1'")
    killed = run_lakectl_until_crash(*args, "--json", failpoint=point)
    assert killed.code == 137, killed.err[-2000:]
    assert killed.out == ""
    assert _state(table) == before
    done = table.update_rows("qty = qty + 1", "day = 'd1'")
    assert done.updated == sum(1 for r in before[2] if r[3] == "d1") > 0
    assert _rows(table) == sorted(
        (i, label, qty + (day == "d1"), day) for i, label, qty, day in before[2]
    )


def test_a_restore_killed_while_moving_its_files_changes_nothing(table, jvm_processes) -> None:
    """A real ``kill -9`` of a restore (a new process), in the middle of moving its files."""
    first = table.version - 1
    expected = _rows(table, version=first)
    before = _state(table)
    killed = run_crashing(
        "restore", table.location, "--version", first, failpoint="write.after_first_move"
    )
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert _state(table) == before
    assert table.restore(first).version == before[0] + 2  # the killed write id stays unused
    assert _rows(table) == expected


# --- concurrent writers -----------------------------------------------------------------------


@pytest.mark.parametrize("mine", [Operation.DELETE, Operation.UPDATE])
def test_a_delete_or_update_conflicts_with_a_data_commit_in_a_partition_it_read(mine) -> None:
    change = CommitRecord.draft(mine, write_id=9, read_seq=3, partitions=("day=a", "day=b"))
    for op in (Operation.APPEND, Operation.CDC, Operation.DELETE, Operation.RESTORE):
        there = CommitRecord(seq=4, operation=op, committed_at=1, write_id=8, partitions=("day=b",))
        elsewhere = CommitRecord(
            seq=4, operation=op, committed_at=1, write_id=8, partitions=("day=z",)
        )
        assert find_conflict(change, [there]) is there
        assert find_conflict(change, [elsewhere]) is None


def test_a_load_committed_while_a_restore_runs_makes_the_restore_a_conflict(
    table, spark, tmp_path, lakectl_cli, monkeypatch
) -> None:
    """The restore reads the table, then waits at its commit while a load commits (in another
    partition): it must fail with the conflict exit code and commit nothing. The restore runs in
    this thread on the warm session; the load commits from a helper thread meanwhile."""
    reached, go = tmp_path / "reached", tmp_path / "go"
    monkeypatch.setenv(
        "LAKECTL_FAILPOINTS",
        f"restore.before_commit=touch:{reached},restore.before_commit=wait:{go}",
    )

    def load_when_reached() -> tuple[int, int, list[tuple[Any, ...]]]:
        try:
            deadline = time.monotonic() + 600
            while not reached.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert reached.exists(), "the restore never reached its commit"
            table.load(spark.createDataFrame([(100, "new", 1, "d7")], SCHEMA))
            return _state(table)
        finally:  # never leave the restore waiting
            go.touch()

    with ThreadPoolExecutor(1) as pool:
        loading = pool.submit(load_when_reached)
        restoring = lakectl_cli(
            "restore", table.location, "--version", str(table.version - 1), "--json"
        )
        after_load = loading.result()
    monkeypatch.delenv("LAKECTL_FAILPOINTS")
    assert restoring.code == 75, restoring.err[-2000:]
    error = restoring.json["error"]
    assert error["type"] == "conflict" and "nothing of this one is visible" in error["message"]
    assert _state(table) == after_load


# --- compaction and clean -----------------------------------------------------------------------


def test_restore_after_compaction_and_clean_inside_the_retention_window(table) -> None:
    first = table.version - 1
    expected = _rows(table, version=first)
    table.delete("qty = 9 AND day = 'd0'")
    table.compact("major")
    table.clean()  # the default retention keeps every version of this young table
    assert _rows(table, version=first) == expected
    result = table.restore(first)
    assert result.version is not None and _rows(table) == expected


def test_restore_outside_the_retention_window_is_the_clear_error(table, lakectl_cli) -> None:
    first = table.version - 1
    table.compact("major")
    table.clean(retain="0s", force=True)
    before = _state(table)
    refused = lakectl_cli("restore", table.location, "--version", str(first), "--json")
    assert refused.code == 67, refused.out
    assert "error" in refused.json and "version" in refused.json["error"]["message"]
    assert _state(table) == before
