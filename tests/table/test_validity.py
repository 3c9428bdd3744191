"""Valid write-id lists: which write ids a reader sees, and Hive's string form."""

from __future__ import annotations

import pytest

from lakectl.errors import UsageError
from lakectl.table.validity import ValidWriteIds, parse_valid_write_ids

NO_OPEN = 9223372036854775807


def test_validity_below_and_above_high_watermark():
    valid = ValidWriteIds(5, frozenset({3}))
    assert [w for w in range(1, 9) if valid.is_valid(w)] == [1, 2, 4, 5]


def test_from_committed_marks_gaps_as_exceptions():
    valid = ValidWriteIds.from_committed({1, 2, 4, 7})
    assert valid.high_watermark == 7
    assert valid.exceptions == frozenset({3, 5, 6})
    assert [w for w in range(0, 10) if valid.is_valid(w)] == [0, 1, 2, 4, 7]


def test_from_nothing_committed_sees_nothing_but_originals():
    valid = ValidWriteIds.from_committed(set())
    assert valid.high_watermark == 0
    assert not valid.is_valid(1)
    assert valid.is_valid(0)  # write id 0: original (pre-ACID) rows


def test_ranges():
    valid = ValidWriteIds(6, frozenset({4}))
    assert valid.is_range_valid(1, 3)
    assert not valid.is_range_valid(3, 5)  # 4 is an exception
    assert not valid.is_range_valid(5, 7)  # 7 is above the watermark
    assert valid.is_range_partly_valid(3, 5)
    assert valid.is_range_partly_valid(6, 9)
    assert not valid.is_range_partly_valid(4, 4)
    assert not valid.is_range_partly_valid(7, 9)
    assert not ValidWriteIds(6, frozenset({4, 5})).is_range_partly_valid(4, 5)


@pytest.mark.parametrize(
    ("text", "hwm", "exceptions"),
    [
        # What Hive's ValidReaderWriteIdList.writeToString produces.
        (f"default.nation_acid:3:{NO_OPEN}::", 3, set()),
        (f"default.nation_acid:2:{NO_OPEN}::", 2, set()),
        ("default.t:5:3:3:", 5, {3}),
        ("default.t:5:3:3:4", 5, {3, 4}),
        (f"db.t:10:{NO_OPEN}::4,7", 10, {4, 7}),
        ("db.t:10:2:2,8:4,7", 10, {2, 4, 7, 8}),
        # Without the table name, and a bare high watermark.
        (f"4:{NO_OPEN}::", 4, set()),
        ("5:3:3:", 5, {3}),
        ("3", 3, set()),
        (" 3 ", 3, set()),
    ],
)
def test_parse_hive_string_form(text, hwm, exceptions):
    valid = parse_valid_write_ids(text)
    assert valid.high_watermark == hwm
    assert valid.exceptions == frozenset(exceptions)


@pytest.mark.parametrize(
    "valid",
    [
        ValidWriteIds(0),
        ValidWriteIds(3),
        ValidWriteIds(9, frozenset({2, 5})),
        ValidWriteIds.from_committed({1, 3, 4, 8}),
    ],
)
def test_hive_string_round_trip(valid):
    text = valid.to_hive_string("default.sales")
    assert text.startswith("default.sales:")
    assert parse_valid_write_ids(text) == valid
    assert len(text.split(":")) == 5


def test_hive_string_without_exceptions_has_no_min_open():
    assert ValidWriteIds(3).to_hive_string("default.t") == f"default.t:3:{NO_OPEN}::"


@pytest.mark.parametrize("text", ["abc", "default.t:x:1::", "default.t", "", "t:3:1:a,b:"])
def test_invalid_strings_are_usage_errors(text):
    with pytest.raises(UsageError) as info:
        parse_valid_write_ids(text)
    assert "not a valid write-id list" in info.value.message
    assert info.value.hint and "highWatermark" in info.value.hint
    assert info.value.exit_code == 2
