"""Log checkpoints: the file format, when one is due, and reads that never depend on one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.checkpoint import (
    checkpoint_due,
    checkpoint_name,
    decode_checkpoint,
    encode_checkpoint,
    parse_checkpoint_name,
)
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.store import CHECKPOINT_DIR, LOG_DIR, TableStore
from tests.support.processes import run_crashing
from tests.support.table_logs import append_table, as_json, log_on_disk


def _store(root: Path) -> TableStore:
    storage, path = storage_for(str(root))
    return TableStore(storage, path, "t")


def _table(tmp_path: Path, commits: int, interval: int) -> TableStore:
    """A table with ``commits`` property changes after its creation and interval setting."""
    store = _store(tmp_path / "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    set_properties(store, (f"log.checkpoint.interval={interval}",))
    for i in range(commits):
        _touch(store, i)
    return store


def _touch(store: TableStore, i: int) -> None:
    """One commit (a fresh store, as a new process would have)."""
    set_properties(TableStore(store.storage, store.root, "t"), (f"clean.retain={i % 3 + 1}d",))


def _checkpoints(store: TableStore) -> list[int]:
    directory = Path(store.path(CHECKPOINT_DIR))
    names = [p.name for p in directory.iterdir()] if directory.is_dir() else []
    return sorted(s for s in map(parse_checkpoint_name, names) if s is not None)


def _fresh_read(store: TableStore) -> TableState:
    return TableStore(store.storage, store.root, "t").read_state()


# --- pure -------------------------------------------------------------------------------------


def _records(n: int) -> list[CommitRecord]:
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.schema import parse_schema

    meta = TableMetadata(parse_schema("id bigint, v string"), primary_key=("id",))
    out = [CommitRecord(0, Operation.CREATE, 10, metadata=meta)]
    for seq in range(1, n):
        out.append(
            CommitRecord(
                seq,
                Operation.APPEND,
                10 + seq,
                write_id=seq,
                read_seq=seq - 1,
                added=(f"delta_{seq:07d}_{seq:07d}_0000",),
            )
        )
    out.append(CommitRecord(n, Operation.SET_PROPERTIES, 99, metadata=meta, read_seq=n - 1))
    return out


def test_a_checkpoint_round_trips_and_stores_each_metadata_once() -> None:
    records = _records(5)
    raw = encode_checkpoint(records)
    assert decode_checkpoint(raw, 5) == tuple(records)
    assert len(json.loads(raw)["metadata"]) == 1  # create and set share one value


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # a writer killed mid-write on a non-atomic store
        lambda raw: b"",
        lambda raw: b"\xff\xfe not json",
        lambda raw: raw.replace(b'"seq":5', b'"seq":6', 1),
        lambda raw: raw.replace(b'"metadata_ref":0', b'"metadata_ref":7', 1),
    ],
)
def test_a_damaged_checkpoint_is_not_used(damage: Any) -> None:
    assert decode_checkpoint(damage(encode_checkpoint(_records(5))), 5) is None


def test_a_checkpoint_must_start_at_entry_0_and_end_at_its_name() -> None:
    records = _records(5)
    assert decode_checkpoint(encode_checkpoint(records[1:]), 5) is None
    assert decode_checkpoint(encode_checkpoint(records), 4) is None
    assert parse_checkpoint_name(checkpoint_name(42)) == 42
    assert parse_checkpoint_name(".tmp-abc") is None


@pytest.mark.parametrize(
    ("seq", "last", "interval", "due"),
    [
        (100, -1, 100, True),
        (99, -1, 100, False),
        (5000, -1, 100, True),  # a table written before checkpoints: due on its next commit
        (150, 100, 100, False),
        (200, 100, 100, True),
        (201, 100, 100, True),  # the writer at 200 failed to write one
        (300, None, 100, True),
        (301, None, 100, False),
        (300, -1, 0, False),  # 0 turns automatic checkpoints off
    ],
)
def test_when_a_checkpoint_is_due(seq: int, last: int | None, interval: int, due: bool) -> None:
    assert checkpoint_due(seq, last, interval) is due


# --- on storage -------------------------------------------------------------------------------


def test_writers_checkpoint_every_interval_and_reads_equal_the_records(tmp_path: Path) -> None:
    store = _table(tmp_path, 35, interval=10)  # seqs 0 (create), 1 (interval), 2..36
    assert _checkpoints(store) == [10, 20, 30]
    state = _fresh_read(store)
    assert as_json(state) == log_on_disk(store)
    assert state.metadata.property("clean.retain") == "2d"  # the 35th change: 34 % 3 + 1


def test_reads_start_from_the_newest_checkpoint_and_read_only_later_records(
    tmp_path: Path,
) -> None:
    store = _table(tmp_path, 25, interval=10)
    # Make the records a checkpoint covers unreadable: a read that touched them would fail.
    for seq in range(1, 20):
        Path(store.path(LOG_DIR, f"{seq:020d}.json")).write_text("{")
    state = _fresh_read(store)
    assert state.last_seq == 26
    reader = TableStore(store.storage, store.root, "t")
    reader.read_state()
    assert reader.last_read is not None and reader.last_read.checkpoint_seq == 20


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete", "all"])
def test_a_damaged_or_deleted_checkpoint_falls_back(tmp_path: Path, damage: str) -> None:
    store = _table(tmp_path, 25, interval=10)
    expected = log_on_disk(store)
    newest = Path(store.path(CHECKPOINT_DIR, checkpoint_name(20)))
    if damage == "truncate":
        newest.write_bytes(newest.read_bytes()[:1000])
    elif damage == "garbage":
        newest.write_text('{"format": 1, "seq": 20, "records": "no"}')
    elif damage == "delete":
        newest.unlink()
    else:
        for path in Path(store.path(CHECKPOINT_DIR)).iterdir():
            path.unlink()
    reader = TableStore(store.storage, store.root, "t")
    assert as_json(reader.read_state()) == expected
    assert reader.last_read is not None
    assert reader.last_read.checkpoint_seq == (-1 if damage == "all" else 10)
    # The next commit writes a new checkpoint, as the newest usable one is too old.
    _touch(reader, 7)
    assert max(_checkpoints(store)) == 27


def test_a_checkpoint_ahead_of_the_log_is_ignored(tmp_path: Path) -> None:
    store = _table(tmp_path, 12, interval=10)
    state = _fresh_read(store)
    fake = TableState((*state.records, CommitRecord(14, Operation.SET_PROPERTIES, 1, read_seq=13)))
    Path(store.path(CHECKPOINT_DIR, checkpoint_name(14))).write_bytes(
        encode_checkpoint(fake.records)
    )
    assert as_json(_fresh_read(store)) == log_on_disk(store)


def test_a_failing_checkpoint_never_fails_the_commit(tmp_path: Path) -> None:
    store = _table(tmp_path, 3, interval=2)
    checkpoints = Path(store.path(CHECKPOINT_DIR))
    for path in checkpoints.iterdir():
        path.unlink()
    checkpoints.rmdir()
    checkpoints.write_text("a file where the directory should be")
    for i in range(4):
        _touch(store, i)
    assert as_json(_fresh_read(store)) == log_on_disk(store)
    assert len(log_on_disk(store)) == 2 + 3 + 4


def test_time_travel_before_a_checkpoint(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=12, interval=5)
    assert _checkpoints(store) == [5, 10]
    state = _fresh_read(store)
    assert state.at_version(3).last_seq == 4
    assert sorted(state.at_version(3).committed_write_ids) == [1, 2, 3]
    assert sorted(state.at_version(11).committed_write_ids) == list(range(1, 12))
    assert as_json(state) == log_on_disk(store)


def test_a_writer_killed_while_checkpointing_leaves_the_table_readable(tmp_path: Path) -> None:
    store = _table(tmp_path, 8, interval=10)  # the next commit, seq 10, is due a checkpoint
    done = run_crashing("set", store.root, "clean.retain=9d", failpoint="store.before_checkpoint")
    assert done.returncode == 137, done.stderr
    assert _checkpoints(store) == []
    # A partial file as a killed writer on a store without atomic creates could leave it.
    Path(store.path(CHECKPOINT_DIR)).mkdir(parents=True)
    full = encode_checkpoint(_fresh_read(store).records)
    Path(store.path(CHECKPOINT_DIR, checkpoint_name(10))).write_bytes(full[: len(full) // 3])
    state = _fresh_read(store)
    assert state.metadata.property("clean.retain") == "9d"  # the killed writer's commit landed
    assert as_json(state) == log_on_disk(store)
    _touch(store, 0)
    assert _checkpoints(store) == [10, 11]
    assert decode_checkpoint(Path(store.path(CHECKPOINT_DIR, checkpoint_name(11))).read_bytes(), 11)
