"""Every writer that runs Spark goes through the one transaction: stopped at each of its
failpoints before the commit (in this process, as a kill would stop it: no abort runs), the table
reads exactly as before, log and rows; ``clean`` then recovers them (marks each aborted, a
compaction failed, and deletes what it wrote), and a rerun commits exactly one record.
``load --evolve`` is one of them: its schema change and its rows commit together or not at all.

The writers without Spark, at every failpoint they pass: tests/table/test_writer_crashes.py.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.storage.fs import storage_for
from lakectl.table.log import Operation
from lakectl.table.store import TableStore
from lakectl.table.transaction import failpoints_of
from tests.support.arrow_loads import load_rows
from tests.support.cli import run_lakectl, run_lakectl_until_crash
from tests.support.killed_writers import as_if_killed, leftovers

SCHEMA = "id bigint, qty int, day string"
ROWS = [(i, i % 5, f"d{i % 2}") for i in range(12)]
MORE = [(i, 9, f"d{i % 2}") for i in range(8, 16)]
STATEMENTS = "-- time=100\nUPDATE t SET qty = 7 WHERE id = 1;\n"

# operation -> (command line, what to prepare, the operation its record has)
WRITERS: dict[str, tuple[tuple[str, ...], Operation]] = {
    "load": (("load", "{t}", "{batch}", "--mode", "upsert"), Operation.UPSERT),
    "load --evolve": (("load", "{t}", "{wider}", "--mode", "upsert", "--evolve"), Operation.UPSERT),
    "delete": (("delete", "{t}", "--where", "qty = 3"), Operation.DELETE),
    "update": (("update", "{t}", "--set", "qty = 0", "--where", "id = 1"), Operation.UPDATE),
    "restore": (("restore", "{t}", "--version", "1"), Operation.RESTORE),
    "compact --minor": (("compact", "{t}", "--minor"), Operation.COMPACT),
    "compact --major": (("compact", "{t}", "--major"), Operation.COMPACT),
    "list-bucket": (("list-bucket", "{t}", "--column", "qty", "--keys", "1,2"), Operation.LIST_BUCKET),
    "materialize": (
        ("apply-updates", "{t}", "--materialize", "--until", "2000-01-01"),
        Operation.MATERIALIZE,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("txn_crashes")
    table = lakectl.create_table(
        str(root / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    load_rows(table, ROWS, SCHEMA)
    load_rows(table, MORE, SCHEMA)
    (root / "batch.csv").write_text("id,qty,day\n1,8,d1\n40,8,d0\n")
    (root / "wider.csv").write_text("id,qty,day,note\n2,8,d0,hello\n41,8,d1,new\n")
    (root / "updates.sql").write_text(STATEMENTS)
    return root


def _reads(path: Path) -> tuple[Any, ...]:
    """What a reader of the table sees: the log and checkpoints (bytes), the schema, the rows."""
    meta = sorted(
        (f.relative_to(path).as_posix(), hashlib.sha256(f.read_bytes()).hexdigest())
        for f in (path / "_lakectl").rglob("*")
        if f.is_file() and f.parent.name in ("log", "checkpoints")
    )
    data = lakectl.open_table(str(path)).scan().to_arrow()
    rows = sorted(tuple(r.values()) for r in data.to_pylist())
    return meta, data.column_names, rows


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_writer_stopped_before_its_commit_changes_nothing_and_a_rerun_commits_once(
    built, tmp_path, writer
) -> None:
    shutil.copytree(built, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "t"
    if writer == "materialize":
        assert run_lakectl("apply-updates", path, tmp_path / "updates.sql").code == 0
    command, operation = WRITERS[writer]
    args = [
        a.format(t=path, batch=tmp_path / "batch.csv", wider=tmp_path / "wider.csv")
        for a in command
    ]
    before = _reads(path)
    for point in failpoints_of(operation)[:-1]:
        killed = run_lakectl_until_crash(*args, "--json", failpoint=point)
        assert killed.code == 137, (point, killed.err[-2000:])
        assert _reads(path) == before, point
    # Their processes gone, clean recovers them: marks them aborted (a compaction failed) and
    # deletes what they wrote.
    as_if_killed(path)
    killed_writers = leftovers(path)
    cleaned = run_lakectl("clean", path, "--json")
    assert cleaned.code == 0, cleaned.err
    marked = cleaned.json["plan"]["abort_write_ids"] + cleaned.json["plan"]["abort_compactions"]
    assert len(marked) == len(failpoints_of(operation)) - 1, killed_writers
    assert leftovers(path) == []
    assert _reads(path)[1:] == before[1:]
    rerun = run_lakectl(*args, "--json")
    assert rerun.code == 0, rerun.out
    storage, root = storage_for(str(path))
    records = TableStore(storage, root).read_state().records
    # one commit (the log had no checkpoint yet) after clean's
    assert len(records) == len(before[0]) + 2
    assert [r.operation for r in records[-2:]] == [Operation.CLEAN, operation]
    after = _reads(path)
    if writer == "load --evolve":  # the column and the rows that bring it, in that one commit
        assert "note" in after[1] and "note" not in before[1]
        assert records[-1].metadata is not None and "note" in records[-1].metadata.schema
        assert {r[after[1].index("note")] for r in after[2]} == {None, "hello", "new"}
