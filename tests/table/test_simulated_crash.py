"""The in-process crash tests use: an armed failpoint raises ``SimulatedCrash``, which no abort or
cleanup path handles, so storage is left as a killed process leaves it; a Ctrl-C still cleans up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.failpoints import SimulatedCrash, crash_at, failpoint
from lakectl.ops.create import create_table
from lakectl.storage.fs import storage_for
from lakectl.table.compaction_runs import new_run, read_statuses, tracked
from lakectl.table.store import TableStore
from lakectl.table.transaction import WriteTransaction

ITEM = {"partition": "p=a", "type": "major", "outputs": ["p=a/base_0000003_v0000004"]}


def _store(tmp_path: Path) -> TableStore:
    storage, root = storage_for(str(tmp_path / "t"))
    store = TableStore(storage, root, "t")
    create_table(store, "id bigint, p string", ("id",), ("p",), 0)
    return store


def test_an_armed_point_raises_a_crash_no_except_exception_catches(monkeypatch) -> None:
    assert not issubclass(SimulatedCrash, Exception)
    with crash_at("x.here"):
        failpoint("x.elsewhere")  # other points pass
        with pytest.raises(SimulatedCrash, match=r"^x\.here$"):
            failpoint("x.here")
    failpoint("x.here")  # disarmed on leaving the block
    monkeypatch.setenv("LAKECTL_FAILPOINTS", "x.other=sleep:0,x.here=raise")
    with pytest.raises(SimulatedCrash):
        failpoint("x.here")


def _write(store: TableStore) -> tuple[WriteTransaction, Path, Path]:
    """A transaction that wrote a data directory and its staging directory."""
    txn = WriteTransaction.begin(store, "append")
    data = Path(store.root) / "p=a" / f"delta_{txn.write_id:07d}_{txn.write_id:07d}_0000"
    data.mkdir(parents=True)
    (data / "bucket_00000").write_bytes(b"x")
    txn.added.append(f"p=a/{data.name}")
    staging = Path(txn.staging)
    staging.mkdir(parents=True)
    return txn, data, staging


def test_a_simulated_crash_leaves_what_a_killed_writer_leaves(tmp_path) -> None:
    store = _store(tmp_path)
    txn, data, staging = _write(store)
    with pytest.raises(SimulatedCrash):
        try:
            raise SimulatedCrash("load.before_commit")
        except BaseException as exc:  # the writers' abort path
            txn.abort(exc)
            raise
    assert data.is_dir() and staging.is_dir()
    assert store.allocated_write_ids()[txn.write_id]["aborted"] is False


def test_a_ctrl_c_still_aborts_and_removes_what_was_written(tmp_path) -> None:
    store = _store(tmp_path)
    txn, data, staging = _write(store)
    txn.abort(KeyboardInterrupt())
    assert not data.exists() and not staging.exists()
    assert store.allocated_write_ids()[txn.write_id]["aborted"] is True


@pytest.mark.parametrize(
    ("stop", "state"),
    [(SimulatedCrash("compact.before_commit"), "working"), (KeyboardInterrupt(), "failed")],
)
def test_a_compaction_status_stays_working_after_a_simulated_crash(tmp_path, stop, state) -> None:
    """A killed run cannot mark itself failed (readers judge it by its process); a Ctrl-C does."""
    store = _store(tmp_path)
    with pytest.raises(type(stop)), tracked(store, new_run("major", [ITEM])):
        raise stop
    [status] = read_statuses(store)
    assert status.state == state
