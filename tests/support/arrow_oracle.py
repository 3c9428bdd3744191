"""Comparing the Arrow reader with the Spark path: the same columns, types and rows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa


def _plain_type(t: pa.DataType) -> pa.DataType:
    """Timestamps without their zone (Spark hands them over in the session's zone)."""
    return pa.timestamp(t.unit) if pa.types.is_timestamp(t) else t


def assert_same_rows(table: Any, **read: Any) -> pa.Table:
    """``table.scan(**read).to_arrow()`` equals ``table.scan(**read).to_spark()``: column names and types,
    and rows as a multiset. Returns the Arrow result."""
    got = table.scan(**read).to_arrow()
    want = table.scan(**read).to_spark().toArrow()
    assert got.schema.names == want.schema.names
    assert [_plain_type(t) for t in got.schema.types] == [_plain_type(t) for t in want.schema.types]
    assert Counter(map(_row, got.to_pylist())) == Counter(map(_row, want.to_pylist()))
    return got


def _row(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.values())
