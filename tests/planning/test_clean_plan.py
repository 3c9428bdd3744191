"""The cleaner as a pure function: retention of obsolete directories, dead writers, leftovers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lakectl.planning.clean_plan import (
    ABORTED,
    DAY_MS,
    LEFTOVER,
    OBSOLETE,
    STAGING,
    STATUS,
    CompactionRun,
    Writer,
    plan_clean,
)
from lakectl.table.log import CommitRecord, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.retention import DELETED_KEY, needed_dirs, with_following_compactions
from lakectl.table.schema import parse_schema

META = TableMetadata(parse_schema("id bigint, p string"), ("id",), ("p",))
D1, D2, X2 = (
    "p=a/delta_0000001_0000001_0000",
    "p=a/delta_0000002_0000002_0000",
    ("p=a/delete_delta_0000002_0000002_0000"),
)
M12, MX12 = "p=a/delta_0000001_0000002", "p=a/delete_delta_0000001_0000002"
D3, B3 = "p=a/delta_0000003_0000003_0000", "p=a/base_0000003_v0000003"
NOW = 100_000


def _log(w2_effective: int | None = None) -> TableState:
    """create@0, w1@1000, w2@2000, minor@3000 (1..2), w3@4000, major@5000 (-> base_3)."""
    return TableState(
        (
            CommitRecord(0, "create", 0, metadata=META),
            CommitRecord(1, "cdc", 1000, write_id=1, added=(D1,)),
            CommitRecord(2, "cdc", 2000, write_id=2, effective_at=w2_effective, added=(D2, X2)),
            CommitRecord(
                3,
                "compact",
                3000,
                added=(M12, MX12),
                obsolete=(D1, D2, X2),
                info={"max_write_id": 2},
            ),
            CommitRecord(4, "cdc", 4000, write_id=3, added=(D3,)),
            CommitRecord(
                5, "compact", 5000, added=(B3,), obsolete=(M12, MX12, D3), info={"max_write_id": 3}
            ),
        )
    )


ALL_DIRS = {d: 10 for d in (D1, D2, X2, M12, MX12, D3, B3)}


def _plan(state: TableState, horizon: int, **kw):
    return plan_clean(
        state, now=NOW, retain=NOW - horizon, present=kw.pop("present", ALL_DIRS), **kw
    )


def _paths(items, kind=None) -> set[str]:
    return {i.path for i in items if kind is None or i.kind == kind}


def test_nothing_goes_while_the_compaction_is_inside_the_window():
    plan = _plan(_log(), horizon=2999)
    assert plan.delete == () and plan.record_deleted == ()
    assert _paths(plan.keep) == {D1, D2, X2, M12, MX12, D3}
    [kept] = [i for i in plan.keep if i.path == D1]
    assert kept.reason.startswith("replaced by compact at log seq 3; time travel inside")


@pytest.mark.parametrize(
    ("horizon", "deleted"),
    [(3000, {D1, D2, X2}), (4999, {D1, D2, X2}), (5000, {D1, D2, X2, M12, MX12, D3})],
)
def test_inputs_go_once_their_compaction_committed_before_the_horizon(horizon, deleted):
    plan = _plan(_log(), horizon)
    assert _paths(plan.delete) == deleted == set(plan.record_deleted)
    assert not (_paths(plan.delete) & needed_dirs(_log().records))  # never what is current


def test_oldest_available_state_after_cleaning():
    plan = _plan(_log(), horizon=3000)
    # Version 2 stays readable: the compaction right after it holds the same rows.
    assert plan.oldest is not None
    assert (plan.oldest.seq, plan.oldest.version, plan.oldest.committed_at) == (2, 2, 2000)
    plan = _plan(_log(), horizon=5000)
    assert plan.oldest is not None and (plan.oldest.seq, plan.oldest.version) == (4, 3)


def test_valid_time_keeps_inputs_of_a_compaction_folding_a_future_effective_write():
    # w2 takes effect at 9000: `--as-of 8000` drops the compaction and reads D1, D2, X2.
    assert _plan(_log(w2_effective=9000), horizon=8000).delete == ()
    assert _plan(_log(w2_effective=9000), horizon=8999).delete == ()  # the major folds w2 too
    assert len(_plan(_log(w2_effective=9000), horizon=9000).delete) == 6


@pytest.mark.parametrize("horizon", [0, 1500, 2500, 3000, 3500, 4500, 5000, 6000])
@pytest.mark.parametrize("effective", [None, 2500, 4500, 9000])
def test_no_state_current_inside_the_window_loses_a_directory(horizon, effective):
    """Brute force over every state a reader inside the window can ask for."""
    state = _log(effective)
    deleted = _paths(_plan(state, horizon).delete)
    records = state.records
    # The state current at the horizon, and every later one (each with following compactions).
    first = max(i for i, r in enumerate(records) if r.committed_at <= horizon or i == 0)
    times = {horizon, *(r.effective_time for r in records if r.effective_time >= horizon)}
    for i in range(first, len(records)):
        prefix = with_following_compactions(TableState(records[: i + 1]), state)
        assert not needed_dirs(prefix.records) & deleted
        for t in times:
            assert not needed_dirs(prefix.effective_at(t).records) & deleted


def test_a_rerun_deletes_what_is_left_and_records_nothing_new():
    done = CommitRecord(6, "clean", 6000, info={DELETED_KEY: [D1, D2, X2]})
    state = TableState((*_log().records, done))
    plan = _plan(state, horizon=3000, present={D2: 10, M12: 10, MX12: 10, D3: 10, B3: 10})
    assert _paths(plan.delete) == {D2} and plan.record_deleted == ()


WRITERS = [
    Writer(4, NOW - 10, aborted=True),
    Writer(5, NOW - 3 * DAY_MS, alive=True),  # old but running here: kept
    Writer(6, NOW - 2 * DAY_MS),  # other host, allocated two days ago: abandoned
    Writer(7, NOW - 60_000),  # other host, recent: may be running
    Writer(8, NOW - 10, alive=False, where="pid 42 on h"),
]


def _uncommitted(w: int, delete: bool = False) -> str:
    kind = "delete_delta" if delete else "delta"
    return f"p=a/{kind}_{w:07d}_{w:07d}_0000"


def test_writers_judged_gone_are_aborted_and_their_files_deleted():
    present = {**ALL_DIRS, **{_uncommitted(w): 5 for w in range(4, 10)}, _uncommitted(8, True): 5}
    staging = {"w0000004-1-1": 7, "w0000005-1-1": 7, "w0000001-1-1": 7}
    plan = _plan(_log(), 0, present=present, staging=staging, writers=WRITERS)
    gone = {_uncommitted(4), _uncommitted(6), _uncommitted(8), _uncommitted(8, True)}
    assert _paths(plan.delete, ABORTED) == gone
    assert plan.abort_write_ids == (6, 8)  # 4 is already marked
    kept = {i.path: i.reason for i in plan.keep if i.kind == ABORTED}
    assert kept == {
        _uncommitted(5): "write id 5 may still be running",
        _uncommitted(7): "write id 7 may still be running",
        _uncommitted(9): "write id 9 is not allocated",
    }
    assert _paths(plan.delete, STAGING) == {
        "_lakectl/staging/w0000004-1-1",
        "_lakectl/staging/w0000001-1-1",  # committed write id: its writer crashed after commit
    }
    assert plan.notes == (
        "write id 6 was allocated 2d ago and never committed (abandoned after 1d)",
        "write id 8: its process (pid 42 on h) is no longer running",
    )


def test_compaction_leftovers_are_deleted_unless_a_live_compaction_or_open_write_id_owns_them():
    live = CompactionRun(
        "1700000000000-abc123",
        "working",
        NOW - 1000,
        NOW - 1000,
        None,
        ("p=a/base_0000002_v0000009",),
    )
    dead = CompactionRun(
        "1700000000000-0001d0", "working", NOW - DAY_MS, NOW - DAY_MS, None, ("p=a/base_0000001",)
    )
    present = {
        **ALL_DIRS,
        "p=a/base_0000002_v0000009": 1,  # a live compaction is writing it
        "p=a/base_0000001": 1,  # its compaction stopped beating a day ago
        "p=a/delta_0000001_0000003": 1,  # nobody's
        "p=a/delta_0000006_0000007": 1,  # write id 7 is open
    }
    staging = {"compact-1700000000000-abc123": 3, "compact-1700000000000-0001d0": 3, "notes.txt": 1}
    plan = _plan(
        _log(), 0, present=present, staging=staging, writers=WRITERS, compactions=[live, dead]
    )
    assert _paths(plan.delete, LEFTOVER) == {"p=a/base_0000001", "p=a/delta_0000001_0000003"}
    assert _paths(plan.keep, LEFTOVER) == {"p=a/base_0000002_v0000009", "p=a/delta_0000006_0000007"}
    assert _paths(plan.delete, STAGING) == {"_lakectl/staging/compact-1700000000000-0001d0"}
    assert _paths(plan.keep, STAGING) == {
        "_lakectl/staging/compact-1700000000000-abc123",
        "_lakectl/staging/notes.txt",
    }
    assert OBSOLETE not in {i.kind for i in plan.delete}  # horizon 0: every state is kept
    # Status files: the dead run's goes (started before the horizon), the live one's stays.
    assert _paths(plan.delete, STATUS) == {"_lakectl/compactions/1700000000000-0001d0.json"}


def test_status_files_of_committed_compactions_go():
    done = CompactionRun("1700000000001-aaaaaa", "committed", NOW - 10, NOW - 10)
    crashed_after_commit = CompactionRun(
        "1700000000002-bbbbbb", "working", NOW - 10, NOW - 10, False
    )
    log = _log()
    records = (*log.records[:-1], replace(log.records[-1], info={"run_id": "1700000000002-bbbbbb"}))
    plan = _plan(TableState(records), 0, compactions=[done, crashed_after_commit])
    assert _paths(plan.delete, STATUS) == {
        "_lakectl/compactions/1700000000001-aaaaaa.json",
        "_lakectl/compactions/1700000000002-bbbbbb.json",
    }
