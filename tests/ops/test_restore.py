"""``restore``: after it, the table reads exactly as it did at the restored version (rows and
Type 7 statements), history is kept, and a crash changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.table.log import CommitRecord, Operation, find_conflict
from tests.support.arrow_loads import load_rows
from tests.support.cli import run_lakectl_until_crash

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "id bigint, name string, qty int, day string"


def _rows(table: lakectl.Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.scan(**kw).to_spark().collect())


def _arrow_rows(table: lakectl.Table) -> list[tuple[Any, ...]]:
    """The current rows as :func:`_rows` reads them, read with pyarrow (no Spark job)."""
    return sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """A table with loads, a one-off delete and update, statements and a materialize; the rows
    read after each version (with pyarrow; the tests read the table with Spark)."""
    tmp_path = tmp_path_factory.mktemp("restore")
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    seen: dict[int, list[tuple[Any, ...]]] = {0: []}
    load_rows(table, [(i, f"n{i}", i % 5, f"d{i % 3}") for i in range(40)], SCHEMA)
    seen[table.version] = _arrow_rows(table)
    load_rows(table, [(i, f"m{i}", 7, f"d{i % 3}") for i in range(30, 60)], SCHEMA)
    seen[table.version] = _arrow_rows(table)
    table.delete("qty = 0")
    seen[table.version] = _arrow_rows(table)
    statements = tmp_path / "fix.updates"
    statements.write_text("-- time=2020-01-01\nUPDATE t SET name = 'fixed' WHERE id < 5;\n")
    table.apply_updates(str(statements))
    seen[table.version] = _arrow_rows(table)
    table.update_rows("qty = qty + 100", "day = 'd1'")
    seen[table.version] = _arrow_rows(table)
    table.materialize(until="2021-01-01")
    seen[table.version] = _arrow_rows(table)
    load_rows(table, [(i, f"z{i}", 1, "d9") for i in range(100, 110)], SCHEMA)
    seen[table.version] = _arrow_rows(table)
    return Path(table.location.removeprefix("file://")), seen


@pytest.fixture
def history(built, tmp_path):
    """A copy of the built table for one test to change."""
    source, seen = built
    shutil.copytree(source, tmp_path / "t")
    return lakectl.open_table(str(tmp_path / "t")), seen


def test_restore_each_version_reads_as_it_did(history) -> None:
    table, seen = history
    latest = table.version
    for version in (5, 2, 4, 6, 1, 0):
        result = table.restore(version)
        assert result.version == table.version > latest
        latest = table.version
        assert _rows(table) == seen[version], version
        assert table.history()[-1].operation == "restore"
    for version, rows in seen.items():  # every earlier version still reads by time travel
        assert _rows(table, version=version) == rows


def test_statements_follow_the_restore(history) -> None:
    table, seen = history
    assert table.statements() == []  # the materialize retired the statement
    table.restore(4)  # after the install, before the update and the materialize
    assert [u.statement.sql for u in table.statements()] == [
        "UPDATE t SET name = 'fixed' WHERE id < 5"
    ]
    assert _rows(table) == seen[4]
    assert _rows(table, as_of=-1) != seen[4]  # raw data: the statement is applied on read
    # the rows as loaded read as at version 4 too: the materialize left out, neither the rows
    # it replaced nor those an update after version 4 wrote (and it replaced) come back
    assert _rows(table, raw=True) == _rows(table, version=4, raw=True)
    table.restore(3)  # before the install
    assert table.statements() == []
    assert _rows(table) == seen[3]


def test_raw_reads_after_restoring_to_before_a_materialize(tmp_path, spark) -> None:
    """The rows as loaded read as they did at the restored version: the rows the materialize
    replaced are there once (the restore wrote them again and deleted the originals)."""
    table = lakectl.create_table(str(tmp_path / "m"), schema=SCHEMA, primary_key="id")
    table.load(spark.createDataFrame([(i, f"n{i}", i, "d") for i in range(8)], SCHEMA))
    loaded = table.version
    statements = tmp_path / "fix.updates"
    statements.write_text("-- time=2020-01-01\nUPDATE t SET qty = -1 WHERE id < 3;\n")
    table.apply_updates(str(statements))
    table.materialize(until="2021-01-01")
    materialized = table.version
    assert _rows(table, raw=True) == _rows(table, version=loaded)  # the materialize left out
    table.restore(loaded)
    assert _rows(table) == _rows(table, version=loaded)
    assert _rows(table, raw=True) == _rows(table, version=loaded)
    assert _rows(table, as_of=-1) == _rows(table, version=loaded)
    # the deleted originals' repeated delete events are no changes: the feed shows the undo
    columns = ("id", "qty", "_change_type")
    feed = sorted(
        tuple(r[c] for c in columns)
        for r in table.changes(from_version=materialized).to_spark().collect()
    )
    assert feed == [
        (i, qty, kind)
        for i in range(3)
        for qty, kind in ((-1, "update_preimage"), (i, "update_postimage"))
    ]


def test_dry_run_and_nothing_to_do(history) -> None:
    table, _ = history
    before = (table.version, len(table.history()))
    dry = table.restore(2, dry_run=True)
    assert dry.version is None and dry.deleted > 0 and dry.reinserted > 0
    assert (table.version, len(table.history())) == before
    assert table.restore(table.version).version is None  # already reads as itself
    assert len(table.history()) == before[1]


def test_restore_across_a_compaction(history) -> None:
    table, seen = history
    table.compact("major")
    result = table.restore(2)
    assert _rows(table) == seen[2]
    # Rows kept since version 2 keep their identity through the compaction: only the difference
    # is written.
    assert result.deleted + result.reinserted < len(seen[2]) + len(seen[max(seen)])


def test_raw_reads_after_a_restore_across_a_minor_compaction(history) -> None:
    """The whole table compared (a compaction since): rows an update after version 4 wrote and
    the materialize replaced are still found (a minor compaction keeps them) and deleted again."""
    table, seen = history
    table.compact("minor")
    result = table.restore(4)
    assert result.method == "full"
    assert _rows(table) == seen[4]
    assert _rows(table, raw=True) == _rows(table, version=4, raw=True)


def test_restore_after_clean(history) -> None:
    """Once clean has removed the files of a version, restoring it is a clear error that
    changes nothing; versions whose files are kept still restore."""
    table, seen = history
    table.compact("major")
    newest = max(seen)
    table.clean(retain="0s", force=True)
    before = table.history()
    with pytest.raises(lakectl.TimeTravelError):
        table.restore(2)
    assert table.history() == before and _rows(table) == seen[newest]
    result = table.restore(newest)
    assert result.version is None  # it already reads as the newest version
    assert _rows(table) == seen[newest]


def test_as_of_picks_the_version_committed_by_then(history) -> None:
    table, seen = history
    commits = table.history()
    third = next(e for e in commits if e.version == 3)
    table.restore(as_of=third.committed_at)
    assert _rows(table) == seen[3]
    with pytest.raises(lakectl.TimeTravelError, match="did not exist yet"):
        table.restore(as_of="1999-01-01")
    with pytest.raises(lakectl.UsageError):
        table.restore(99)


def test_a_killed_restore_changes_nothing(history) -> None:
    """Stopped in this process as a kill would stop it (no abort runs); a real kill of a
    restore: test_change_commands_safety."""
    table, seen = history
    before = (table.version, _rows(table))
    killed = run_lakectl_until_crash(
        "restore", table.location, "--version", 2, "--json", failpoint="restore.before_commit"
    )
    assert killed.code == 137, killed.err[-2000:]
    table.refresh()  # what the killed writer left
    assert (table.version, _rows(table)) == before
    table.restore(2)
    assert _rows(table) == seen[2]


def test_a_restore_conflicts_with_any_concurrent_data_commit() -> None:
    restore = CommitRecord.draft(Operation.RESTORE, write_id=9, read_seq=3, partitions=("day=a",))
    for op, parts in ((Operation.APPEND, ("day=z",)), (Operation.UPSERT, ("day=b",))):
        other = CommitRecord(seq=4, operation=op, committed_at=1, write_id=8, partitions=parts)
        assert find_conflict(restore, [other]) is other
    compaction = CommitRecord(
        seq=4, operation=Operation.COMPACT, committed_at=1, partitions=("day=a",)
    )
    assert find_conflict(restore, [compaction]) is None
