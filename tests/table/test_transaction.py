"""The one write path (``with store.transaction(op) as txn``): only lakectl/table/transaction.py
allocates write ids, builds commit records and aborts writers; every writer that needs no Spark,
stopped at each of its failpoints as a kill would stop it, leaves the table as it was and is
recovered: tests/table/test_writer_crashes.py (those that need Spark:
tests/ops/test_transaction_crashes.py).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from lakectl.failpoints import SimulatedCrash, crash_at
from lakectl.ops.create import create_table
from lakectl.storage.fs import storage_for
from lakectl.table.log import (
    CommitRecord,
    LoadMode,
    Operation,
    TableState,
    find_conflict,
)
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema
from lakectl.table.store import TableStore
from lakectl.table.transaction import FAILPOINT_PREFIX, VERSIONED_OPS, failpoints_of

PACKAGE = Path(__file__).resolve().parents[2] / "lakectl"
HOME = "table/transaction.py"
# The store's own methods (defined in table/store.py) only the transaction calls.
ONLY_THE_TRANSACTION = {"allocate_write_id", "mark_aborted"}


def _calls_outside_the_transaction() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in (HOME, "table/store.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name, owner = node.func.attr, ast.unparse(node.func.value)
            if (
                name in ONLY_THE_TRANSACTION
                or (name == "draft" and owner == "CommitRecord")
                or (name == "commit" and not owner.endswith("txn"))
            ):
                found.append(f"{rel}:{node.lineno} {owner}.{name}()")
    return found


def test_only_the_transaction_allocates_write_ids_and_appends_commit_records() -> None:
    assert _calls_outside_the_transaction() == []


def test_every_operation_has_failpoints_and_records_that_make_versions_have_write_ids() -> None:
    creating = {Operation.CREATE}  # log entry 0, written by TableStore.create
    assert set(FAILPOINT_PREFIX) == set(Operation) - creating
    assert failpoints_of(Operation.CDC) == (
        "load.after_begin",
        "load.before_commit",
        "store.before_commit",
        "load.after_commit",
    )
    assert {m.operation for m in LoadMode} <= VERSIONED_OPS
    assert Operation.COMPACT not in VERSIONED_OPS and Operation.LIST_BUCKET in VERSIONED_OPS


def test_records_hold_the_operation_enum_and_store_its_text() -> None:
    record = CommitRecord(3, "upsert", 10, write_id=2)  # type: ignore[arg-type]
    assert type(record.operation) is Operation and record.operation is Operation.UPSERT
    data = record.to_json()
    assert json.dumps(data["operation"]) == '"upsert"'
    back = CommitRecord.from_json(json.loads(json.dumps(data)))
    assert back == record and type(back.operation) is Operation


# --- load --evolve: one record that changes the schema and adds rows ------------------------------

META = TableMetadata(parse_schema("id bigint, qty int"), primary_key=("id",))
WIDER = TableMetadata(parse_schema("id bigint, qty int, note string"), primary_key=("id",))


def _evolving_load(seq: int, effective_at: int | None = None) -> CommitRecord:
    return CommitRecord(
        seq,
        Operation.UPSERT,
        seq * 1000,
        write_id=seq,
        read_seq=seq - 1,
        effective_at=effective_at,
        added=(f"delta_{seq:07d}_{seq:07d}_0000",),
        metadata=WIDER,
    )


def test_an_evolving_load_conflicts_with_schema_and_property_changes_only() -> None:
    mine = _evolving_load(2)
    alter = CommitRecord(2, Operation.ALTER, 5, read_seq=1, metadata=META)
    props = CommitRecord(2, Operation.SET_PROPERTIES, 5, read_seq=1, metadata=META)
    append = CommitRecord(2, Operation.APPEND, 5, write_id=3, read_seq=1)
    assert find_conflict(mine, [append]) is None
    assert find_conflict(mine, [alter]) == alter
    assert find_conflict(mine, [props]) == props
    assert find_conflict(alter, [mine]) == mine


def test_valid_time_before_an_evolving_load_drops_its_rows_but_keeps_its_schema() -> None:
    state = TableState(
        (
            CommitRecord(0, Operation.CREATE, 0, metadata=META),
            CommitRecord(1, Operation.APPEND, 1000, write_id=1, read_seq=0, effective_at=0),
            _evolving_load(2, effective_at=5000),
        )
    )
    earlier = state.effective_at(1000)
    assert earlier.committed_write_ids == {1}
    assert earlier.metadata == WIDER
    assert state.effective_at(6000).committed_write_ids == {1, 2}


# --- the writers without Spark, stopped at each failpoint ----------------------------------------


def _table(tmp_path: Path) -> tuple[Path, TableStore]:
    path = tmp_path / "t"
    storage, root = storage_for(str(path))
    store = TableStore(storage, root, "t")
    create_table(store, "id bigint, qty int, day string", ("id",), ("day",), 0)
    return path, store


def test_an_error_in_the_block_aborts_and_removes_what_the_writer_wrote(tmp_path) -> None:
    _, store = _table(tmp_path)
    state = store.read_state()
    with pytest.raises(ValueError, match="disk"), store.transaction("append", read=state) as txn:
        (Path(txn.staging) / "part").mkdir(parents=True)
        txn.claim("day=d1/delta_0000001_0000001_0000", source="a test")
        (Path(store.root) / "day=d1" / "delta_0000001_0000001_0000").mkdir(parents=True)
        raise ValueError("disk full")
    assert not Path(txn.staging).exists()
    assert not (Path(store.root) / "day=d1" / "delta_0000001_0000001_0000").exists()
    assert store.allocated_write_ids()[txn.version]["aborted"] is True
    assert store.read_state() == state


def test_a_simulated_crash_in_the_block_leaves_everything_for_clean(tmp_path) -> None:
    _, store = _table(tmp_path)
    state = store.read_state()
    with (
        pytest.raises(SimulatedCrash),
        crash_at("load.after_begin"),
        store.transaction(Operation.APPEND, read=state),
    ):
        pass
    [entry] = store.allocated_write_ids().values()
    assert entry["aborted"] is False and entry["pid"] == os.getpid()


def test_a_block_that_ends_without_a_commit_aborts(tmp_path) -> None:
    _, store = _table(tmp_path)
    with store.transaction(Operation.DELETE, read=store.read_state()) as txn:
        pass
    assert txn.committed is None
    assert store.allocated_write_ids()[txn.version]["aborted"] is True


def test_the_record_is_built_from_the_transaction_and_the_operation_fields(tmp_path) -> None:
    _, store = _table(tmp_path)
    state = store.read_state()
    with store.transaction(Operation.UPSERT, read=state) as txn:
        txn.added.append("day=d2/delta_0000001_0000001_0000")
        record = txn.commit(partitions={"day=d1"}, counts={"inserted": 2}, info={"source": "x"})
    assert (record.seq, record.operation, record.write_id, record.read_seq) == (
        1,
        Operation.UPSERT,
        txn.version,
        state.last_seq,
    )
    assert record.partitions == ("day=d1", "day=d2")
    assert record.added == ("day=d2/delta_0000001_0000001_0000",)
    assert (record.counts, record.info) == ({"inserted": 2}, {"source": "x"})
    assert store.read_state().records[-1] == record
