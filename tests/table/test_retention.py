"""Time travel after clean: which states are still readable, and the error for the others."""

from __future__ import annotations

import pytest

from lakectl.errors import TimeTravelError
from lakectl.scan.target import choose_state
from lakectl.table.log import CommitRecord, TableState
from lakectl.table.retention import (
    DELETED_KEY,
    Availability,
    availability,
    format_time,
    with_following_compactions,
)
from tests.planning.test_clean_plan import D1, D2, D3, M12, META, MX12, X2, _log


def _cleaned(*dirs: str) -> TableState:
    return TableState(
        (*_log().records, CommitRecord(6, "clean", 6000, info={DELETED_KEY: list(dirs)}))
    )


def test_with_following_compactions_adds_only_the_run_right_after_the_prefix():
    full = _log()
    assert [r.seq for r in with_following_compactions(full.prefix(2), full).records] == [0, 1, 2, 3]
    assert [r.seq for r in with_following_compactions(full.prefix(1), full).records] == [0, 1]
    assert with_following_compactions(full, full) == full


def test_time_travel_inside_what_is_left_works():
    state = _cleaned(D1, D2, X2)
    assert choose_state(state, version=2).last_seq == 3  # with the minor compaction after it
    assert choose_state(state, version=3).last_seq == 6  # + major compaction and the clean
    assert choose_state(state, known_at=2500).last_seq == 3
    assert choose_state(state, as_of=2000).last_seq == 6
    assert choose_state(state, version=0).last_seq == 0  # the empty table needs no files


@pytest.mark.parametrize(
    ("kwargs", "what"),
    [
        ({"version": 1}, "version 1"),
        ({"known_at": 1500}, "the table as known at 1970-01-01 00:00:01 UTC"),
        ({"as_of": 1500}, "the table as of 1970-01-01 00:00:01 UTC"),
    ],
)
def test_time_travel_to_a_cleaned_state_names_the_oldest_available(kwargs, what):
    with pytest.raises(TimeTravelError) as err:
        choose_state(_cleaned(D1, D2, X2), **kwargs)
    assert err.value.message == (
        f"{what} is no longer available: `lakectl clean` deleted 1 directory it needs "
        "(e.g. p=a/delta_0000001_0000001_0000), obsolete for longer than the retention window"
    )
    assert err.value.hint == (
        "the oldest state available is version 2 (committed 1970-01-01 00:00:02 UTC)"
    )
    assert err.value.exit_code == 67


def test_availability_moves_forward_as_more_is_cleaned():
    assert availability(_log(), set()).seq == 0
    oldest = availability(_cleaned(D1, D2, X2, M12, MX12, D3))
    assert oldest is not None and (oldest.seq, oldest.version, oldest.committed_at) == (4, 3, 4000)


def test_the_newest_version_reads_through_property_changes_and_later_compactions():
    base = "p=a/base_0000002_v0000002"
    records = (
        CommitRecord(0, "create", 0, metadata=META),
        CommitRecord(1, "cdc", 1000, write_id=1, added=(D1,)),
        CommitRecord(2, "cdc", 2000, write_id=2, added=(D2, X2)),
        CommitRecord(3, "compact", 3000, added=(M12, MX12), obsolete=(D1, D2, X2)),
        CommitRecord(4, "set-properties", 3500, metadata=META),
        CommitRecord(5, "compact", 4000, added=(base,), obsolete=(M12, MX12)),
        CommitRecord(6, "clean", 5000, info={DELETED_KEY: [D1, D2, X2, M12, MX12]}),
    )
    state = TableState(records)
    # Version 2 is the current rows: the property change in between changes none of them.
    assert choose_state(state, version=2).last_seq == 6
    oldest = availability(state)
    assert oldest is not None and (oldest.seq, oldest.version) == (2, 2)
    with pytest.raises(TimeTravelError) as err:
        choose_state(state, version=1)
    assert err.value.hint == (
        "the oldest state available is version 2 (committed 1970-01-01 00:00:02 UTC)"
    )


def test_the_oldest_state_is_named_by_its_log_entry_when_no_version_reads():
    assert Availability(0, None, 0).describe() == (
        "the oldest state available is the empty table (committed 1970-01-01 00:00:00 UTC)"
    )
    assert Availability(10, None, 3000).describe() == (
        "the oldest state available is the one of log entry 10 (committed 1970-01-01 00:00:03 UTC)"
    )


def test_format_time_outside_the_calendar_gives_the_number():
    assert format_time(-(10**19)) == f"{-(10**19)} ms after the epoch"
