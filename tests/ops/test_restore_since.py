"""``restore`` reads the change since the restored version, not the whole table twice: the rows
added since from the directories committed since, the rows deleted since from the files the
delete events committed since point to. After a compaction it compares the whole table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.ops.restore import change_scope
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema
from tests.support.arrow_loads import load_rows

SCHEMA = "id bigint, name string, qty int, day string"


def _rows(table: lakectl.Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.scan(**kw).to_spark().collect())


def _arrow_rows(table: lakectl.Table, **kw: Any) -> list[tuple[Any, ...]]:
    """A state read with pyarrow (no Spark job for a check)."""
    return sorted(tuple(r.values()) for r in table.scan(**kw).to_arrow().to_pylist())


# --- which commits tell the difference (no Spark) ----------------------------------------------


def _meta(schema: str = SCHEMA) -> TableMetadata:
    return TableMetadata(parse_schema(schema), ("id",), ("day",))


def _record(seq: int, op: Operation, *added: str, **kw: Any) -> CommitRecord:
    return CommitRecord(seq=seq, operation=op, committed_at=seq, added=added, **kw)


def _log(*later: CommitRecord) -> tuple[TableState, TableState]:
    then = TableState(
        (
            _record(0, Operation.CREATE, metadata=_meta()),
            _record(1, Operation.APPEND, "day=a/delta_1_1_0000", write_id=1),
        )
    )
    return TableState(then.records + later), then


def test_the_directories_committed_since_are_the_scope() -> None:
    now, then = _log(
        _record(
            2, Operation.CDC, "day=a/delta_2_2_0000", "day=a/delete_delta_2_2_0000", write_id=2
        ),
        _record(3, Operation.DELETE, "day=b/delete_delta_3_3_0000", write_id=3),
        _record(4, Operation.APPLY_UPDATES, write_id=4),
    )
    scope = change_scope(now, then)
    assert scope.fallback is None
    assert scope.since == {
        "day=a/delta_2_2_0000",
        "day=a/delete_delta_2_2_0000",
        "day=b/delete_delta_3_3_0000",
    }


@pytest.mark.parametrize("op", [Operation.COMPACT, Operation.LIST_BUCKET])
def test_a_rewrite_of_files_since_falls_back_to_the_full_comparison(op: Operation) -> None:
    now, then = _log(
        _record(2, Operation.CDC, "day=a/delta_2_2_0000", write_id=2),
        _record(3, op, "day=a/base_2"),
    )
    scope = change_scope(now, then)
    assert scope.fallback is not None and op.value in scope.fallback


def test_a_schema_change_since_falls_back_but_a_property_change_does_not() -> None:
    props = _record(2, Operation.SET_PROPERTIES, metadata=_meta())
    assert change_scope(*_log(props)).fallback is None
    wider = _record(2, Operation.SET_PROPERTIES, metadata=_meta(SCHEMA + ", extra int"))
    assert "schema" in (change_scope(*_log(wider)).fallback or "")


# --- the restore itself ------------------------------------------------------------------------


@pytest.fixture
def table(spark, tmp_path: Path) -> lakectl.Table:
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    load_rows(table, [(i, f"n{i}", i % 5, f"d{i % 3}") for i in range(40)], SCHEMA)
    return table


def test_only_the_changed_partitions_and_directories_are_read(spark, table) -> None:
    """Restoring over a load into a new partition and a delete in one partition reads the new
    delta, the delete delta, and the one directory that held the deleted row: 3 of the 8 a
    comparison of the whole table now (5) and then (3) reads."""
    first = table.version
    expected = _rows(table)
    load_rows(table, [(i, f"z{i}", 1, "d9") for i in range(100, 110)], SCHEMA)
    table.delete("id = 4")
    result = table.restore(first)
    assert (result.method, result.directories_read) == ("changes", 3)
    assert (result.deleted, result.reinserted) == (10, 1)
    assert _rows(table) == expected
    read = result.to_dict()["read"]
    assert (read["method"], read["directories"]) == ("changes", 3)
    assert 0 < read["bytes"] == result.bytes_read


def test_every_version_restores_as_time_travel_reads_it(spark, table) -> None:
    """Loads, upserts over the same keys, deletes, updates and a restore in between; each
    version, restored from the newest, reads as time travel read it before the restore."""
    load_rows(table, [(i, f"u{i}", 9, f"d{i % 3}") for i in range(20, 60)], SCHEMA)
    table.delete("qty = 2 OR day = 'd0'")
    table.update_rows("name = concat(name, '!'), qty = qty * 10", "id % 4 = 1")
    table.restore(table.version - 2)
    load_rows(table, [(i, "late", 3, f"d{i % 4}") for i in range(5, 80, 7)], SCHEMA)
    table.delete("id > 70")
    # Time travel read with pyarrow (the engines' time travel agrees at every version:
    # tests/arrow/test_random_histories.py); the restores are Spark's.
    seen = {v: _arrow_rows(table, version=v) for v in range(1, table.version + 1)}
    assert _rows(table) == seen[table.version]
    for version in sorted(seen, reverse=True)[1:]:
        result = table.restore(version)
        assert result.method == "changes", result.notes
        assert _arrow_rows(table) == seen[version], version
    assert _rows(table) == seen[1]  # the last restore, read with Spark too


def test_after_a_compaction_the_whole_table_is_compared(table, spark) -> None:
    first = table.version
    expected = _rows(table)
    load_rows(table, [(i, "x", 1, "d1") for i in range(0, 40, 2)], SCHEMA)
    table.compact("major", engine="arrow")
    result = table.restore(first)
    assert result.method == "full" and "compact" in result.notes[0]
    assert result.directories_read > 0 and result.bytes_read > 0
    assert _rows(table) == expected
    # Once the restore is committed, the changes since it restore cheaply again.
    restored = table.version
    table.delete("id < 10")
    assert table.restore(restored).method == "changes"
    assert _rows(table) == expected
