"""Time travel after clean: which states are still readable, and the error for the others."""

from __future__ import annotations

import pytest

from lakectl.errors import TimeTravelError
from lakectl.ops.reading import choose_state
from lakectl.table.log import CommitRecord, TableState
from lakectl.table.retention import DELETED_KEY, availability, with_following_compactions
from tests.planning.test_clean_plan import D1, D2, D3, M12, MX12, X2, _log


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
