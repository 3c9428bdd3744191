"""Every writer, stopped at every failpoint it passes, as a ``kill -9`` would stop it; then recovered.

The writers run in this process with the Arrow engine where they have one (no JVM: ``java`` is
hidden). Which failpoints a writer passes is taken from a run of it (:func:`lakectl.failpoints.
traced`), never listed here, so a failpoint added to a writer is crash-tested at once; every
failpoint in the code must be passed by one of these writers or be one only Spark's writers pass.

For each (writer, failpoint): the writer stops there (no abort or cleanup runs, as after a kill)
and its process is made gone. Stopped before its commit, the table reads exactly as before (log,
checkpoints, rows); after it, exactly as a finished run leaves it. Then the writer is recovered
the way every writer is: ``clean`` (a stream: the next stream) marks its write id aborted or its
compaction failed and deletes what it wrote, nothing of it is left, and the writer run again
commits and gives the rows of an uninterrupted run. (The writers that need Spark, list bucketing
among them: tests/ops/test_transaction_crashes.py; real processes killed: tests/ops/
test_compact_processes.py and test_a_killed_compaction_process_is_recovered_like_a_load below.)
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.errors import CommitConflictError
from lakectl.failpoints import traced
from lakectl.table.compaction_runs import new_run
from lakectl.table.log import Operation
from lakectl.table.open_writers import OpenWriter, mark_gone
from lakectl.table.transaction import FAILPOINT_PREFIX, failpoints_of
from tests.support.arrow_loads import load_rows
from tests.support.cli import run_lakectl, run_lakectl_until_crash
from tests.support.killed_writers import as_if_killed, dead_pid, leftovers, store_of

PACKAGE = Path(__file__).resolve().parents[2] / "lakectl"
NO_JAVA = Path(__file__).resolve().parents[1] / "support" / "no_java"
SCHEMA = "id bigint, qty int, day string"
ROWS = [(i, i % 5, f"d{i % 2}") for i in range(12)]
MORE = [(i, 9, f"d{i % 2}") for i in range(8, 16)]
ARROW = ("--engine", "arrow")
# Failpoints only writers that need Spark pass, crash-tested where Spark runs: list bucketing
# (tests/ops/test_transaction_crashes.py) and Spark's ACID writer moving its files into place
# (tests/ops/test_crash_and_concurrency.py).
SPARK_ONLY = {p for p in failpoints_of(Operation.LIST_BUCKET) if p.startswith("list_bucket.")} | {
    "write.after_first_move"
}


@dataclass(frozen=True)
class Writer:
    """A command line (``{t}`` the table, ``{d}`` the folder of the inputs), the operation its
    record has, and the table it starts from (``base`` or ``compacted``)."""

    args: tuple[str, ...]
    operation: Operation
    table: str = "base"


WRITERS = {
    "load append": Writer(("load", "{t}", "{d}/append.csv", "--mode", "append", *ARROW), Operation.APPEND),
    "load upsert": Writer(("load", "{t}", "{d}/upsert.csv", "--mode", "upsert", *ARROW), Operation.UPSERT),
    "load cdc": Writer(
        ("load", "{t}", "{d}/cdc.csv", "--op-column", "op_code", *ARROW),
        Operation.CDC,
    ),
    "load --evolve": Writer(
        ("load", "{t}", "{d}/wider.csv", "--mode", "upsert", "--evolve", *ARROW), Operation.UPSERT
    ),
    "stream": Writer(
        ("stream", "{t}", "{d}/land", "--mode", "upsert", "--trigger", "100ms", "--max-batches",
         "1", "--no-compact", *ARROW),
        Operation.UPSERT,
    ),
    "delete": Writer(("delete", "{t}", "--where", "qty = 3", *ARROW), Operation.DELETE),
    "update": Writer(("update", "{t}", "--set", "qty = 0", "--where", "id = 1", *ARROW), Operation.UPDATE),
    "restore": Writer(("restore", "{t}", "--version", "1", *ARROW), Operation.RESTORE),
    "alter": Writer(("alter", "{t}", "--add-column", "note string"), Operation.ALTER),
    "set": Writer(("set", "{t}", "clean.retain=3d"), Operation.SET_PROPERTIES),
    "apply-updates": Writer(("apply-updates", "{t}", "{d}/updates.sql"), Operation.APPLY_UPDATES),
    "materialize": Writer(
        ("apply-updates", "{t}", "--materialize", "--until", "2000-01-01", *ARROW),
        Operation.MATERIALIZE,
        "compacted",
    ),
    "compact --minor": Writer(("compact", "{t}", "--minor", *ARROW), Operation.COMPACT),
    "compact --major": Writer(("compact", "{t}", "--major", *ARROW), Operation.COMPACT),
    "clean": Writer(("clean", "{t}", "--retain", "0s", "--force"), Operation.CLEAN, "compacted"),
}  # fmt: skip
INPUTS = {
    "append.csv": "id,qty,day\n100,1,d0\n101,2,d1\n",
    "upsert.csv": "id,qty,day\n1,8,d1\n40,8,d0\n",
    "cdc.csv": "op_code,id,qty,day\nU,2,7,d0\nD,3,0,d1\nI,50,5,d0\n",
    "wider.csv": "id,qty,day,note\n2,8,d0,hello\n41,8,d1,new\n",
    "updates.sql": "-- time=100\nUPDATE t SET qty = 7 WHERE id = 1;\n",
    "land/f1.csv": "id,qty,day\n5,6,d1\n60,6,d0\n",
}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def no_java() -> Iterator[None]:
    """Whatever would start a JVM finds a `java` that fails."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("JAVA_HOME", raising=False)
        patch.setenv("PATH", f"{NO_JAVA}:{os.environ['PATH']}")
        yield


def _ok(*args: object) -> Any:
    done = run_lakectl(*args, "--json")
    assert done.code == 0, (args, done.out[-2000:], done.err[-2000:])
    return done.json


def _dead_load(table: Path) -> None:
    """A write id a killed load left on this host, and the directory it wrote."""
    store = store_of(table)
    write_id = max(store.allocated_write_ids()) + 1
    body = {"operation": "append", "started_at": 1, "host": socket.gethostname(), "pid": dead_pid()}
    (table / "_lakectl" / "txns" / f"{write_id:020d}.json").write_text(json.dumps(body))
    left = table / "day=d1" / f"delta_{write_id:07d}_{write_id:07d}_0000"
    left.mkdir()
    (left / "bucket_00000").write_bytes(b"never committed")


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> Path:
    """Two starting tables (a checkpoint after every commit, so each writer passes the
    checkpoint's failpoint too): ``base`` (two loads and applied updates) and ``compacted``
    (``base`` compacted, with updates to materialize and a dead load's leftovers), and inputs."""
    root = tmp_path_factory.mktemp("writer_crashes")
    for name, text in INPUTS.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    table = lakectl.create_table(
        str(root / "base"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    load_rows(table, ROWS, SCHEMA)
    load_rows(table, MORE, SCHEMA)
    _ok("set", root / "base", "log.checkpoint.interval=1")
    shutil.copytree(root / "base", root / "compacted")
    _ok("apply-updates", root / "compacted", root / "updates.sql")
    _ok("compact", root / "compacted", "--major", *ARROW)
    _dead_load(root / "compacted")
    # No checkpoint: clean writes the one history will start at (and passes its failpoint).
    shutil.rmtree(root / "compacted" / "_lakectl" / "checkpoints")
    return root


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run: the failpoints it passed, and what the table reads after it."""

    points: tuple[str, ...]
    reads: tuple[Any, ...]


def _args(writer: Writer, table: Path, inputs: Path) -> list[str]:
    return [a.format(t=table, d=inputs) for a in writer.args]


def _copy(bases: Path, writer: Writer, to: Path) -> Path:
    shutil.copytree(bases / writer.table, to)
    return to


def _reads(table: Path) -> tuple[Any, ...]:
    """What a reader sees: log entries (bytes), the columns and the rows."""
    log = sorted(
        (f.name, hashlib.sha256(f.read_bytes()).hexdigest())
        for f in (table / "_lakectl" / "log").iterdir()
    )
    data = lakectl.open_table(str(table)).scan().to_arrow()
    return log, tuple(data.column_names), sorted(tuple(r.values()) for r in data.to_pylist())


def _checkpoints(table: Path) -> dict[str, str]:
    folder = table / "_lakectl" / "checkpoints"
    files = sorted(folder.iterdir()) if folder.is_dir() else []
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def _rows(reads: tuple[Any, ...]) -> tuple[Any, ...]:
    return reads[1:]


def _log(table: Path) -> list[Operation]:
    return [r.operation for r in store_of(table).read_state().records]


@pytest.fixture(scope="module")
def references(bases, tmp_path_factory) -> dict[str, Reference]:
    out = {}
    for name, writer in WRITERS.items():
        table = _copy(bases, writer, tmp_path_factory.mktemp("reference") / "t")
        with traced() as seen:
            _ok(*_args(writer, table, bases))
        # One commit per writer (``load --evolve`` too: its schema change and its rows).
        assert _log(table) == [*_log(bases / writer.table), writer.operation], name
        out[name] = Reference(tuple(dict.fromkeys(seen)), _reads(table))
    assert "note" in out["load --evolve"].reads[1] and "note" not in _reads(bases / "base")[1]
    return out


def _failpoints_in_the_code() -> set[str]:
    """Every failpoint name in lakectl: literal ``failpoint("x.y")`` calls, and the
    transaction's points of every operation."""
    found = {p for op in FAILPOINT_PREFIX for p in failpoints_of(op)}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "failpoint"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(node.args[0].value)
    return found


def test_every_failpoint_in_the_code_is_passed_by_a_writer_crash_tested_here(references) -> None:
    passed = {p for ref in references.values() for p in ref.points}
    assert _failpoints_in_the_code() - passed == SPARK_ONLY
    assert _failpoints_in_the_code() >= SPARK_ONLY  # no stale entry
    covered = {w.operation for w in WRITERS.values()} | {Operation.LIST_BUCKET}  # Spark only
    assert covered == set(FAILPOINT_PREFIX)
    for name, writer in WRITERS.items():  # each passes every point of the one transaction
        assert set(failpoints_of(writer.operation)) <= set(references[name].points), name


def _recover(name: str, writer: Writer, table: Path, inputs: Path) -> dict[str, Any]:
    """Recover the killed writer as every writer is: the next stream for a stream (then
    ``clean`` deletes what it left), else ``clean``. Returns clean's result."""
    if name == "stream":
        _ok(*_args(writer, table, inputs), "--max-batches", "0")  # starts, recovers, stops
        assert not [w for w in leftovers(table) if w.startswith("write id")]
    return _ok("clean", table)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_writer_killed_at_each_of_its_failpoints_is_recovered(
    bases, references, tmp_path, name
) -> None:
    writer, reference = WRITERS[name], references[name]
    before, commits = _reads(bases / writer.table), len(_log(bases / writer.table))
    for n, point in enumerate(reference.points):
        table = _copy(bases, writer, tmp_path / f"{n}")
        args = _args(writer, table, bases)
        killed = run_lakectl_until_crash(*args, "--json", failpoint=point)
        assert killed.code == 137, (point, killed.err[-2000:])
        as_if_killed(table)
        committed = len(_log(table)) > commits
        if point in failpoints_of(writer.operation):  # the transaction's: commits at the log
            assert committed == (point == failpoints_of(writer.operation)[-1]), point
        if committed:  # the commit stands: the table reads as after an uninterrupted run
            assert _log(table)[-1] is writer.operation, point
            assert _rows(_reads(table)) == _rows(reference.reads), point
        else:  # the same log and rows; a checkpoint may have been added (of the same state)
            assert _reads(table) == before, point
            kept = _checkpoints(bases / writer.table).items()
            assert kept <= _checkpoints(table).items(), point
        open_before = leftovers(table)
        cleaned = _recover(name, writer, table, bases)
        assert leftovers(table) == [], (point, open_before)
        marked = cleaned["plan"]["abort_write_ids"] + cleaned["plan"]["abort_compactions"]
        if writer.operation is Operation.COMPACT and not committed:
            run = [r for r in open_before if r.startswith("compaction ")]
            assert len(run) == 1 and [f"compaction {r}" for r in marked] == run, point
            [status] = (table / "_lakectl" / "compactions").glob("*.json")
            assert json.loads(status.read_text())["state"] == "failed"
        if writer.operation is not Operation.COMPACT and not committed and name != "stream":
            opened = [w for w in open_before if w.startswith("write id ")]
            assert [f"write id {w}" for w in marked] == opened, (point, open_before)
        if not committed:  # the writer run again commits, as if never stopped
            _ok(*args)
            assert _rows(_reads(table)) == _rows(reference.reads), point
            assert _log(table)[-1] is writer.operation, point
        else:  # the next commit goes through
            _ok("set", table, "clean.retain=5d")


def test_the_next_compaction_recovers_a_killed_load_and_a_killed_compaction(
    bases, tmp_path
) -> None:
    table = _copy(bases, WRITERS["load upsert"], tmp_path / "t")
    killed = run_lakectl_until_crash(
        "load", table, bases / "upsert.csv", *ARROW, failpoint="load.before_commit"
    )
    assert killed.code == 137
    killed = run_lakectl_until_crash(
        "compact", table, "--major", *ARROW, failpoint="compact.before_commit"
    )
    assert killed.code == 137
    [write_id] = [w for w in leftovers(table) if w.startswith("write id")]
    as_if_killed(table)
    done = _ok("compact", table, "--major", *ARROW)
    assert done["lowest_open_write_id"] is None  # the killed load no longer holds it back
    statuses = sorted(
        json.loads(f.read_text())["state"]
        for f in (table / "_lakectl" / "compactions").glob("*.json")
    )
    assert statuses == ["committed", "failed"]
    store = store_of(table)
    assert store.allocated_write_ids()[int(write_id.split()[-1])]["aborted"] is True
    _ok("clean", table)
    assert leftovers(table) == []


def test_a_writer_marked_aborted_while_it_ran_does_not_commit(bases, tmp_path) -> None:
    """A writer judged gone that was only slow (its allocation a day old on another host, its
    heartbeat stalled): it was marked aborted and its files may be deleted, so it cannot commit."""
    store = store_of(_copy(bases, WRITERS["load upsert"], tmp_path / "t"))
    state = store.read_state()
    refused = "was marked aborted while this {} ran"
    with (
        pytest.raises(CommitConflictError, match=refused.format("append")),
        store.transaction(Operation.APPEND, read=state) as txn,
    ):
        mark_gone(store, OpenWriter.of_write_id(txn.version), "clean: judged gone")
        txn.commit()
    run = new_run("major", [])
    with (
        pytest.raises(CommitConflictError, match=refused.format("compact")),
        store.transaction(Operation.COMPACT, read=state, run=run) as txn,
    ):
        mark_gone(store, OpenWriter.of_run(run.id, "working"), "clean: judged gone")
        txn.commit()
    assert store.read_state() == state


def test_a_killed_compaction_process_is_recovered_like_a_load(bases, tmp_path) -> None:
    """A real ``kill -9`` (the process ends at the failpoint): its status still says working,
    its process is gone, and ``clean`` marks it failed and deletes its outputs."""
    table = _copy(bases, WRITERS["compact --major"], tmp_path / "t")
    env = {**os.environ, "LAKECTL_FAILPOINTS": "compact.before_commit=crash"}
    done = subprocess.run(
        [sys.executable, "-m", "lakectl", "compact", str(table), "--major", *ARROW],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 137, done.stderr[-2000:]
    open_before = leftovers(table)
    assert [w for w in open_before if w.startswith("compaction ")] and any(
        "base_" in w for w in open_before
    ), open_before
    cleaned = _ok("clean", table)
    assert len(cleaned["plan"]["abort_compactions"]) == 1
    assert "is no longer running" in cleaned["plan"]["notes"][0]
    assert leftovers(table) == []
    assert _rows(_reads(table)) == _rows(_reads(bases / "base"))
