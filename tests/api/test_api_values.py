"""Python values the API takes where the CLI takes text: no Spark needed."""

from __future__ import annotations

import datetime as dt

import pytest

from lakectl.api import _keys_text, to_millis
from lakectl.errors import UsageError
from lakectl.planning.list_bucket_plan import parse_keys


@pytest.mark.parametrize(
    ("keys", "columns", "types", "expected"),
    [
        ([6, 20], ("x",), ["int"], (("6",), ("20",))),
        (
            ["S01", "O'Brien", "back\\slash"],
            ("s",),
            ["string"],
            (("S01",), ("O'Brien",), ("back\\slash",)),
        ),
        ([(10, "a"), (20, "c")], ("x", "y"), ["int", "string"], (("10", "a"), ("20", "c"))),
        ([dt.date(2024, 1, 2)], ("d",), ["date"], (("2024-01-02",),)),
        ([True], ("b",), ["boolean"], (("true",),)),
    ],
)
def test_list_bucket_keys_as_python_values(keys, columns, types, expected) -> None:
    assert parse_keys(_keys_text(keys), columns, types) == expected


def test_times_as_python_values() -> None:
    assert to_millis(dt.datetime(2024, 1, 2, tzinfo=dt.UTC), "t") == 1704153600000
    assert to_millis(dt.date(2024, 1, 2), "t") == 1704153600000
    assert to_millis("2024-01-02", "t") == 1704153600000
    with pytest.raises(UsageError):
        to_millis(True, "t")
