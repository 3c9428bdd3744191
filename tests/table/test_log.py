"""The transaction log as values (time travel, conflicts) and on local storage (commits)."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from lakectl.errors import (
    AlreadyLoadedError,
    CommitConflictError,
    TableExistsError,
    TableNotFoundError,
    TimeTravelError,
)
from lakectl.storage.fs import storage_for
from lakectl.table.log import CommitRecord, TableState, conflict_error, find_conflict
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema
from lakectl.table.store import TableStore
from lakectl.times import format_millis

META = TableMetadata(
    parse_schema("id bigint, amount double, region string"),
    primary_key=("id",),
    partition_by=("region",),
)
META_V2 = META.with_properties({"clean.retain": "1d"})


def _history() -> TableState:
    """create@100, w1@1000, w2@2000 (effective 500), properties@3000, w3@4000 (effective 9000)."""
    return TableState(
        (
            CommitRecord(0, "create", 100, metadata=META),
            CommitRecord(1, "cdc", 1000, write_id=1, read_seq=0, partitions=("region=a",)),
            CommitRecord(
                2,
                "upsert",
                2000,
                write_id=2,
                read_seq=1,
                effective_at=500,
                partitions=("region=b",),
            ),
            CommitRecord(3, "set-properties", 3000, read_seq=2, metadata=META_V2),
            CommitRecord(4, "append", 4000, write_id=3, read_seq=3, effective_at=9000),
        )
    )


def _seqs(state: TableState) -> list[int]:
    return [r.seq for r in state.records]


# --- folding the log --------------------------------------------------------------------------


def test_current_state():
    state = _history()
    assert state.last_seq == 4
    assert state.committed_write_ids == {1, 2, 3}
    assert state.max_write_id == 3
    assert state.metadata == META_V2  # the newest metadata record wins
    valid = state.valid_write_ids()
    assert (valid.high_watermark, valid.exceptions) == (3, frozenset())


@pytest.mark.parametrize(("version", "seqs"), [(1, [0, 1]), (2, [0, 1, 2]), (3, [0, 1, 2, 3, 4])])
def test_at_version_is_the_state_right_after_that_write_id(version, seqs):
    state = _history().at_version(version)
    assert _seqs(state) == seqs
    assert state.max_write_id == version


def test_at_version_keeps_metadata_as_it_was():
    assert _history().at_version(2).metadata == META
    assert _history().at_version(3).metadata == META_V2


def test_at_version_zero_is_the_empty_table():
    state = _history().at_version(0)
    assert _seqs(state) == [0]
    assert state.committed_write_ids == set()


def test_missing_version_names_the_committed_ones():
    with pytest.raises(TimeTravelError) as info:
        _history().at_version(7)
    assert "version 7 does not exist" in info.value.message
    assert info.value.hint == "committed versions: 1-3"
    assert info.value.exit_code == 67


def test_aborted_write_id_is_a_gap():
    state = TableState(
        (
            CommitRecord(0, "create", 1, metadata=META),
            CommitRecord(1, "cdc", 2, write_id=1),
            CommitRecord(2, "cdc", 3, write_id=2),
            CommitRecord(3, "cdc", 4, write_id=4),  # write id 3 was aborted
            CommitRecord(4, "cdc", 5, write_id=6),
        )
    )
    valid = state.valid_write_ids()
    assert (valid.high_watermark, valid.exceptions) == (6, frozenset({3, 5}))
    assert _seqs(state.at_version(4)) == [0, 1, 2, 3]
    assert state.at_version(4).valid_write_ids().exceptions == frozenset({3})
    with pytest.raises(TimeTravelError) as info:
        state.at_version(3)
    assert info.value.hint == "committed versions: 1-2, 4, 6"


@pytest.mark.parametrize(
    ("millis", "seqs"),
    [
        (100, [0]),
        (999, [0]),
        (1000, [0, 1]),
        (2500, [0, 1, 2]),
        (3000, [0, 1, 2, 3]),
        (10**13, [0, 1, 2, 3, 4]),
    ],
)
def test_known_at_is_transaction_time(millis, seqs):
    assert _seqs(_history().known_at(millis)) == seqs


def test_known_at_before_the_table_existed():
    with pytest.raises(TimeTravelError, match="did not exist yet") as info:
        _history().known_at(99)
    created = _history().records[0].committed_at
    assert info.value.message == (
        f"the table did not exist yet at 1970-01-01T00:00:00.099Z (created at "
        f"{format_millis(created)})"
    )
    assert " ms" not in info.value.message


@pytest.mark.parametrize(
    ("millis", "write_ids"),
    [
        (400, set()),
        (500, {2}),  # w2 is back-dated to 500, before w1 took effect
        (999, {2}),
        (1000, {1, 2}),
        (8999, {1, 2}),
        (9000, {1, 2, 3}),  # w3 takes effect in the future
    ],
)
def test_effective_at_is_valid_time(millis, write_ids):
    state = _history().effective_at(millis)
    assert state.committed_write_ids == write_ids
    # Metadata changes always apply, whatever their time.
    assert {r.operation for r in state.records} >= {"create", "set-properties"}
    assert state.metadata == META_V2


def test_effective_time_defaults_to_commit_time():
    assert CommitRecord(1, "cdc", 1234, write_id=1).effective_time == 1234
    assert CommitRecord(1, "cdc", 1234, write_id=1, effective_at=7).effective_time == 7


def test_state_without_metadata():
    with pytest.raises(TimeTravelError):
        TableState(()).metadata  # noqa: B018


def test_commit_record_json_round_trip():
    record = CommitRecord(
        seq=5,
        operation="cdc",
        committed_at=1700000000000,
        write_id=4,
        read_seq=3,
        effective_at=1600000000000,
        partitions=("region=a", "region=b"),
        added=("region=a/delta_0000004_0000004_0000",),
        obsolete=("region=a/delta_0000001_0000001_0000",),
        counts={"inserted": 3, "updated": 1},
        metadata=META,
        info={"source": "batch.csv"},
    )
    assert CommitRecord.from_json(record.to_json()) == record
    bare = CommitRecord(0, "create", 1)
    assert CommitRecord.from_json(bare.to_json()) == bare


# --- conflicts --------------------------------------------------------------------------------


def _rec(
    operation: str, *partitions: str, write_id: int | None = 9, read_seq: int | None = None
) -> CommitRecord:
    return CommitRecord(
        -1, operation, 0, write_id=write_id, read_seq=read_seq, partitions=partitions
    )


def _loaded(operation: str, url: str, digest: str, **info: object) -> CommitRecord:
    record = _rec(operation, "region=a")
    return replace(record, info={"source_url": url, "source_hash": digest, **info})


@pytest.mark.parametrize("mode", ["append", "upsert", "cdc"])
def test_a_load_of_a_source_another_writer_just_loaded_commits_nothing(mode):
    """Two runs loading one source at once: the one committing second finds the first one's
    record (even for appends, which conflict with nothing else) and reports it skipped."""
    first = replace(_loaded("append", "file:///l/a.csv", "sha256:1"), write_id=4)
    mine = _loaded(mode, "file:///l/a.csv", "sha256:1")
    assert find_conflict(mine, [first]) is first
    error = conflict_error(mine, first)
    assert isinstance(error, AlreadyLoadedError) and error.version == 4
    for other in (
        _loaded("append", "file:///l/a.csv", "sha256:2"),
        _loaded("append", "x", "sha256:1"),
    ):
        assert find_conflict(_loaded("append", "file:///l/a.csv", "sha256:1"), [other]) is None
    forced = _loaded("append", "file:///l/a.csv", "sha256:1", reloaded=True)
    assert find_conflict(forced, [first]) is None
    state = TableState((replace(first, seq=0), replace(forced, seq=1, write_id=5)))
    assert state.loaded(("file:///l/a.csv", "sha256:1")).write_id == 5
    assert state.loaded(("file:///l/a.csv", "sha256:3")) is None


@pytest.mark.parametrize("mine", ["cdc", "upsert", "delete"])
@pytest.mark.parametrize("theirs", ["cdc", "upsert", "append", "delete"])
def test_merge_conflicts_with_data_change_in_a_shared_partition(mine, theirs):
    other = _rec(theirs, "region=a", "region=b")
    assert find_conflict(_rec(mine, "region=b", "region=c"), [other]) is other
    assert find_conflict(_rec(mine, "region=c"), [other]) is None


def test_unpartitioned_merges_conflict():
    other = _rec("cdc", "")
    assert find_conflict(_rec("upsert", ""), [other]) is other


@pytest.mark.parametrize("theirs", ["cdc", "upsert", "append", "create", "set-properties"])
def test_append_conflicts_with_nothing(theirs):
    assert find_conflict(_rec("append", "region=a"), [_rec(theirs, "region=a")]) is None


def test_metadata_changes_conflict_with_each_other_only():
    meta_change = _rec("set-properties", write_id=None)
    assert find_conflict(_rec("set-properties", write_id=None), [meta_change]) is meta_change
    assert find_conflict(_rec("set-properties", write_id=None), [_rec("cdc", "region=a")]) is None
    assert find_conflict(_rec("cdc", "region=a"), [meta_change]) is None


def test_first_conflicting_record_is_reported():
    harmless = _rec("cdc", "region=z", write_id=4)
    first = _rec("upsert", "region=a", write_id=5)
    second = _rec("cdc", "region=a", write_id=6)
    assert find_conflict(_rec("cdc", "region=a"), [harmless, first, second]) is first


def test_conflict_error_says_what_and_where():
    mine = _rec("cdc", "region=a", "region=b")
    other = replace(_rec("upsert", "region=b", "region=c"), write_id=12)
    error = conflict_error(mine, other)
    assert isinstance(error, CommitConflictError)
    assert error.exit_code == 75
    assert "commit conflict" in error.message
    assert "upsert (version 12)" in error.message
    assert "region=b" in error.message and "region=a" not in error.message
    assert "nothing of this one is visible" in error.message


# --- the log on local storage -----------------------------------------------------------------


def _store(tmp_path) -> TableStore:
    storage, path = storage_for(str(tmp_path / "t"))
    return TableStore(storage, path, "t")


def test_missing_table_has_no_log(tmp_path):
    store = _store(tmp_path)
    assert not store.has_log()
    with pytest.raises(TableNotFoundError, match="does not exist"):
        store.read_state()
    (tmp_path / "t").mkdir()
    with pytest.raises(TableNotFoundError, match="no lakectl log"):
        store.read_state()


def test_create_once(tmp_path):
    store = _store(tmp_path)
    store.create(META)
    assert store.read_state().metadata == META
    with pytest.raises(TableExistsError):
        store.create(META)


def test_commits_append_in_order_and_check_conflicts(tmp_path):
    store = _store(tmp_path)
    store.create(META)
    base = store.read_state()
    a = store.commit(_rec("cdc", "region=a", write_id=1, read_seq=base.last_seq))
    # A writer that read the same state, on a disjoint partition: commits after a.
    b = store.commit(_rec("cdc", "region=b", write_id=2, read_seq=base.last_seq))
    assert (a.seq, b.seq) == (1, 2)
    # One that read the same state but touches region=a: conflicts with a.
    with pytest.raises(CommitConflictError, match=r"version 1\) in partition\(s\) region=a"):
        store.commit(_rec("upsert", "region=a", write_id=3, read_seq=base.last_seq))
    # Having read the newest state, it commits.
    c = store.commit(_rec("upsert", "region=a", write_id=3, read_seq=b.seq))
    assert c.seq == 3
    state = store.read_state()
    assert [r.seq for r in state.records] == [0, 1, 2, 3]
    assert state.committed_write_ids == {1, 2, 3}
    assert all(r.committed_at > 0 for r in state.records)


def test_concurrent_commits_on_disjoint_partitions_all_land(tmp_path):
    store = _store(tmp_path)
    store.create(META)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def commit(i: int) -> None:
        barrier.wait()
        try:
            store.commit(_rec("cdc", f"region={i}", write_id=i + 1, read_seq=0))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    state = store.read_state()
    assert [r.seq for r in state.records] == list(range(9))
    assert state.committed_write_ids == set(range(1, 9))


def test_concurrent_commits_on_one_partition_exactly_one_wins(tmp_path):
    store = _store(tmp_path)
    store.create(META)
    barrier = threading.Barrier(6)
    results: list[object] = []

    def commit(i: int) -> None:
        barrier.wait()
        try:
            results.append(store.commit(_rec("cdc", "region=a", write_id=i + 1, read_seq=0)))
        except CommitConflictError as exc:
            results.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if isinstance(r, CommitRecord)]
    assert len(winners) == 1
    assert sum(isinstance(r, CommitConflictError) for r in results) == 5
    assert store.read_state().committed_write_ids == {winners[0].write_id}


def test_write_ids_are_unique_under_concurrency(tmp_path):
    store = _store(tmp_path)
    store.create(META)
    barrier = threading.Barrier(8)
    got: list[int] = []

    def allocate() -> None:
        barrier.wait()
        got.append(store.allocate_write_id("cdc"))

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 9))
    store.mark_aborted(3, "test")
    store.mark_aborted(3, "again")  # idempotent
    allocated = store.allocated_write_ids()
    assert sorted(allocated) == list(range(1, 9))
    assert [w for w, e in sorted(allocated.items()) if e["aborted"]] == [3]
    assert store.allocate_write_id("cdc") == 9


@pytest.mark.parametrize("theirs", ["cdc", "upsert", "append", "delete", "materialize"])
def test_materialize_conflicts_with_any_data_change_anywhere(theirs):
    """A materialize rewrote rows it read from the whole table: any data commit since then
    (in any partition) invalidates it; compactions and metadata-free ops do not."""
    other = _rec(theirs, "region=a")
    assert find_conflict(_rec("materialize", "region=c"), [other]) is other
    assert find_conflict(_rec("materialize", "region=c"), [_rec("compact", "region=c")]) is None
