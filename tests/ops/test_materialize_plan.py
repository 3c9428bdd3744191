"""Materializing statements, the pure half: what a materialize retires and what each read sees.

No Spark: the log is built as values, and :func:`installed_statements` is read from states chosen
by the time-travel functions, as a snapshot would.
"""

from __future__ import annotations

import pytest

from lakectl.errors import UsageError
from lakectl.ops.materialize import plan_materialize
from lakectl.scan.statements import installed_statements
from lakectl.scan.target import choose_state
from lakectl.table.log import CommitRecord, TableState, find_conflict
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema

META = TableMetadata(parse_schema("id int, name string"))
NOW = 10_000


def _install(seq: int, at: int, write_id: int, *effective: int) -> CommitRecord:
    statements = [
        {
            "effective_ms": ms,
            "sql": f"UPDATE t SET name = 'v{write_id}.{i}' WHERE id = {i}",
            "kind": "update",
            "table": "t",
            "line": i + 1,
        }
        for i, ms in enumerate(effective)
    ]
    return CommitRecord(
        seq, "apply-updates", at, write_id=write_id, info={"statements": statements}
    )


def _materialize(seq: int, at: int, write_id: int, effective_at: int, *retired: tuple[int, int]):
    return CommitRecord(
        seq,
        "materialize",
        at,
        write_id=write_id,
        effective_at=effective_at,
        info={"retired": [list(r) for r in retired]},
    )


def _base(*more: CommitRecord) -> TableState:
    """create@0, a load effective 0 (w1), statements at 100, 200, 50 (w2), ``more``."""
    return TableState(
        (
            CommitRecord(0, "create", 0, metadata=META),
            CommitRecord(1, "append", 10, write_id=1, effective_at=0),
            _install(2, 20, 2, 100, 200, 50),
            *more,
        )
    )


def _effective(state: TableState) -> list[int]:
    return [i.statement.effective_ms for i in installed_statements(state)]


def test_retires_the_leading_run_effective_by_until():
    plan = plan_materialize(_base(), 150, NOW)
    assert [(i.version, i.index) for i in plan.retire] == [(2, 0)]
    assert plan.remaining == 2
    # 50 <= 150 but it follows the statement at 200 in install order: folding it first would
    # apply it before that one, so it stays active.
    assert [i.statement.effective_ms for i in plan.held_back] == [50]
    assert plan.effective_at == 150


def test_retires_everything_effective_when_the_order_allows():
    plan = plan_materialize(_base(), 200, NOW)
    assert [i.index for i in plan.retire] == [0, 1, 2]
    assert plan.remaining == 0 and plan.held_back == ()


def test_nothing_to_retire_before_the_first_statement():
    plan = plan_materialize(_base(), 99, NOW)
    assert plan.retire == () and plan.remaining == 3


def test_until_in_the_future_is_refused():
    with pytest.raises(UsageError, match="in the future"):
        plan_materialize(_base(), NOW + 1, NOW)


def test_effective_time_moves_past_a_later_load():
    """A load effective after T is dropped by reads before its time; so must be the folded rows."""
    state = _base(CommitRecord(3, "append", 30, write_id=3, effective_at=700))
    assert plan_materialize(state, 150, NOW).effective_at == 700


def test_retired_statements_are_inactive_only_in_states_with_the_materialize():
    state = _base(_materialize(3, 1000, 3, 150, (2, 0)), _install(4, 1100, 4, 300))
    assert _effective(state) == [200, 50, 300]
    # the valid-time axis: before the materialize took effect, the statement is active again
    assert _effective(choose_state(state, as_of=149)) == [100, 200, 50, 300]
    assert _effective(choose_state(state, as_of=150)) == [200, 50, 300]
    # the transaction-time axis: before it committed
    assert _effective(choose_state(state, known_at=999)) == [100, 200, 50]
    # --raw reads drop the materialized rows and keep the statements (none are applied)
    assert _effective(choose_state(state, raw=True)) == [100, 200, 50, 300]
    assert 3 not in choose_state(state, raw=True).committed_write_ids


def test_a_materialize_conflicts_with_any_data_change_since_its_read():
    mine = CommitRecord(-1, "materialize", 0, write_id=5, read_seq=2, partitions=("p=a",))
    elsewhere = CommitRecord(3, "append", 0, write_id=4, partitions=("p=b",))
    statements = _install(3, 0, 4, 10)
    assert find_conflict(mine, [elsewhere]) is elsewhere
    assert find_conflict(mine, [statements]) is None  # appended after: still active, in order
