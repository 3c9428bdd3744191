"""A table created by the write that first fills it is removed again when that write does not
commit (:func:`lakectl.table.created_table.table_to_write`): only what creating it made, never
a directory or file that was there before, and never a table another writer committed into.
The loads that create tables through it: tests/ops/test_engine_fallback.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.failpoints import SimulatedCrash
from lakectl.table.created_table import table_to_write
from lakectl.table.log import Operation
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema
from tests.support.table_files import tree
from tests.support.table_logs import store_at

META = TableMetadata(parse_schema("id bigint, qty int, part string"), ("id",), ("part",))


def _fail_after_creating(root: Path) -> None:
    """Create the table at ``root``, start a write that adds a partition, then fail."""
    store = store_at(root)
    with (
        pytest.raises(RuntimeError, match="the write failed"),
        table_to_write(store, None, META) as state,
        store.transaction(Operation.APPEND, read=state) as txn,
    ):
        assert state.last_seq == 0
        (root / "part=a").mkdir()  # as a writer's partition directory
        txn.claim("part=a/delta_0000001_0000001", source="a test")
        raise RuntimeError("the write failed")


def test_a_directory_it_made_is_removed(tmp_path) -> None:
    _fail_after_creating(tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_a_directory_that_was_there_keeps_exactly_what_it_held(tmp_path) -> None:
    root = tmp_path / "t"
    (root / "_lakectl" / "notes").mkdir(parents=True)  # even a _lakectl without a log
    (root / "_lakectl" / "notes" / "mine.txt").write_text("kept\n")
    (root / "README").write_text("the user's own file\n")
    before = tree(root)
    _fail_after_creating(root)
    assert tree(root) == before


def test_a_table_another_writer_committed_into_is_kept(tmp_path) -> None:
    store = store_at(tmp_path / "t")
    with pytest.raises(RuntimeError), table_to_write(store, None, META) as state:
        with store_at(tmp_path / "t").transaction(Operation.SET_PROPERTIES, read=state) as other:
            other.commit(info={"by": "another writer"})
        raise RuntimeError("the write failed")
    assert store.read_state().last_seq == 1


def test_a_crash_leaves_the_table_as_a_killed_process_would(tmp_path) -> None:
    store = store_at(tmp_path / "t")
    with pytest.raises(SimulatedCrash), table_to_write(store, None, META):
        raise SimulatedCrash("killed")
    assert store.read_state().last_seq == 0


def test_an_existing_table_is_left_alone(tmp_path) -> None:
    store = store_at(tmp_path / "t")
    with table_to_write(store, None, META):
        pass
    state = store.read_state()
    with pytest.raises(RuntimeError), table_to_write(store, state, META) as read:
        assert read is state
        raise RuntimeError("the write failed")
    assert store.read_state().last_seq == 0
