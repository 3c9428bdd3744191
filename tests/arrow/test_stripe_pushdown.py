"""``where`` pushed into the ORC reader: stripes skipped by their statistics never change an
answer. The table is a Hive layout written here with many small stripes (ids ascending, so each
stripe holds one id range), delete events aimed at rows in stripes a predicate skips and in
stripes it keeps, and updated rows whose new version moves into or out of the range. The
oracle is DuckDB, running the same condition over the live rows computed here from the events.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.arrow.event_reader import EventRead
from lakectl.arrow.pushdown import stripe_test
from lakectl.expr import bind_where
from lakectl.kernel.live_rows import EVENT_COLUMNS
from lakectl.storage.fs import storage_for
from lakectl.table.orc_stats import ColumnStats, stripe_statistics
from lakectl.table.schema import Column, Schema

BUCKET = 536870912  # bucket 0 in Hive's bucket codec
ROWS = 6000
STRIPE_BYTES = 16 * 1024  # uncompressed, the writer closes a stripe every 1024 rows
DATA = pa.struct(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("amount", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("score", pa.float64()),
    ]
)
EVENTS = pa.schema(
    [
        ("operation", pa.int32()),
        ("originalTransaction", pa.int64()),
        ("bucket", pa.int32()),
        ("rowId", pa.int64()),
        ("currentTransaction", pa.int64()),
        ("row", DATA),
    ]
)


def _row(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "name": f"n{i:05d}",
        "amount": Decimal(i) / 4,
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=i // 100),
        "score": float(i % 97),
    }


def _write(path: Path, events: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(events, schema=EVENTS)
    orc.write_table(table, str(path), stripe_size=STRIPE_BYTES, compression="uncompressed")


def _event(op: int, txn: int, row_id: int, current: int, row: dict | None) -> dict[str, Any]:
    return {
        "operation": op,
        "originalTransaction": txn,
        "bucket": BUCKET,
        "rowId": row_id,
        "currentTransaction": current,
        "row": row,
    }


# Write 2 deletes rows spread over the id range (some in stripes a predicate skips, some in
# stripes it keeps) and updates others: their new versions (in delta 2) move ids across ranges.
DELETED = [5, 1500, 2999, 3000, 4100, 5999]
UPDATED = {10: 5500, 5200: 20, 3100: 3101, 700: 700}  # old id -> new id


@pytest.fixture(scope="module")
def hive_table(tmp_path_factory) -> tuple[Path, list[dict[str, Any]]]:
    """A Hive-layout ACID table (no log) and its live rows."""
    root = tmp_path_factory.mktemp("pushdown") / "t"
    base = [_event(0, 1, i, 1, _row(i)) for i in range(ROWS)]
    _write(root / "base_0000001" / "bucket_00000", base)
    gone = [*DELETED, *UPDATED]
    deletes = [_event(2, 1, i, 2, None) for i in sorted(gone)]
    _write(root / "delete_delta_0000002_0000002_0000" / "bucket_00000", deletes)
    inserts = [
        _event(0, 2, n, 2, {**_row(old), "id": new}) for n, (old, new) in enumerate(UPDATED.items())
    ]
    _write(root / "delta_0000002_0000002_0000" / "bucket_00000", inserts)
    live = [_row(i) for i in range(ROWS) if i not in gone]
    live += [{**_row(old), "id": new} for old, new in UPDATED.items()]
    return root, live


WHERES = [
    "id >= 3000",
    "id < 1024",
    "id > 5990 OR id < 12",
    "id BETWEEN 2000 AND 2100",
    "id IN (20, 3101, 5500, 4100)",
    "id = 5500",
    "3000 > id AND score > 50",
    "name >= 'n05000'",
    "name = 'n00020'",
    "amount < 10.5",
    "amount > 1400.125",
    "day >= '2024-02-25'",
    "day = '2024-01-03' AND id <> 250",
    "id > 100000",
    "NOT id < 5000",
    "score = 3 OR name < 'n00100'",
]


@pytest.mark.parametrize("where", WHERES)
def test_where_with_stripe_skipping_equals_duckdb(hive_table, where):
    root, live = hive_table
    got = lakectl.open_table(str(root)).scan(where=where).to_arrow()
    rows = pa.Table.from_pylist(live, schema=pa.schema(list(DATA)))  # noqa: F841 (DuckDB's)
    want = duckdb.sql(f"SELECT * FROM rows WHERE {where}").arrow()
    want = want.read_all() if isinstance(want, pa.RecordBatchReader) else want
    assert Counter(map(_key, got.to_pylist())) == Counter(map(_key, want.to_pylist()))


def test_only_the_columns_asked_for_and_the_where_are_decoded(hive_table):
    root, live = hive_table
    got = lakectl.open_table(str(root)).scan(columns=["name"], where="id < 30").to_arrow()
    assert got.schema.names == ["name"]
    want = sorted(r["name"] for r in live if r["id"] < 30)
    assert sorted(got.column("name").to_pylist()) == want


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.values())


SCHEMA = Schema(
    (
        Column("id", "int"),
        Column("name", "string"),
        Column("amount", "decimal(10,2)"),
        Column("day", "date"),
        Column("score", "double"),
    )
)


def _stripes_read(root: Path, where: str) -> int:
    storage, path = storage_for(str(root / "base_0000001" / "bucket_00000"), {})
    read = EventRead(EVENT_COLUMNS, tuple(pa.schema(list(DATA))), tuple(SCHEMA.names))
    return sum(1 for _ in read.stripes(storage, path, _test(where)))


def test_a_selective_where_skips_stripes_and_a_broad_one_none(hive_table):
    root, _ = hive_table
    total = orc.ORCFile(str(root / "base_0000001" / "bucket_00000")).nstripes
    assert total >= 4
    assert _stripes_read(root, "id >= 5990") == 1
    assert _stripes_read(root, "id = 5500 OR id = 3") == 2
    assert _stripes_read(root, "name < 'n00010'") == 1
    assert _stripes_read(root, "id >= 0") == total
    assert _stripes_read(root, "score > 1000") == total  # doubles: no statistics used
    assert _stripes_read(root, "NOT id < 5000") == total  # NOT: not judged


def _test(where: str):
    return stripe_test(bind_where(where, SCHEMA), SCHEMA)


def test_conditions_nothing_can_exclude_have_no_test():
    assert _test("score > 1") is None
    assert _test("id > 1 OR score > 1") is None
    assert _test("id = NULL") is None
    assert _test("id > 2.5e0") is None  # compared as doubles: not every bigint is one
    assert _test("CAST(id AS tinyint) = 3") is None  # a narrowing cast
    assert _test("score > 1 AND id > 1") is not None


def _stats(column: str, low: Any, high: Any) -> dict[str, ColumnStats | None]:
    return {column: ColumnStats(values=10, minimum=low, maximum=high)}


def test_constants_compare_with_the_bounds_as_the_filter_compares_them():
    # a fraction against a bigint: compared as decimals, exactly
    above = _test("id > 2.5")
    assert above is not None
    assert not above(_stats("id", 0, 2)) and above(_stats("id", 0, 3))
    # more digits than the column's scale: the column widens, the constant stays exact
    at_least = _test("amount >= 10.555")
    assert at_least is not None
    assert not at_least(_stats("amount", Decimal("1.00"), Decimal("10.55")))
    assert at_least(_stats("amount", Decimal("1.00"), Decimal("10.56")))
    # string literals converted to the column's type, as the filter converts them
    day = _test("day = '2024-1-5'")
    assert day is not None
    assert day(_stats("day", dt.date(2024, 1, 1), dt.date(2024, 1, 9)))
    assert not day(_stats("day", dt.date(2024, 1, 6), dt.date(2024, 1, 9)))
    listed = _test("id IN ('7', ' 9 ', NULL)")
    assert listed is not None
    assert listed(_stats("id", 8, 9)) and not listed(_stats("id", 10, 20))
    mirrored = _test("100 < id")
    assert mirrored is not None
    assert not mirrored(_stats("id", 0, 100)) and mirrored(_stats("id", 0, 101))


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_stripe_statistics_match_the_stripes(tmp_path, compression):
    path = tmp_path / "f.orc"
    rows = 40_000  # compressed, enough for a few stripes
    table = pa.Table.from_pylist([_row(i) for i in range(rows)], schema=pa.schema(list(DATA)))
    orc.write_table(table, str(path), stripe_size=STRIPE_BYTES, compression=compression)
    reader = orc.ORCFile(str(path))
    offset = (
        reader.file_length
        - 1
        - reader.file_postscript_length
        - reader.file_footer_length
        - reader.stripe_statistics_length
    )
    with open(path, "rb") as handle:
        stats = stripe_statistics(
            handle, offset, reader.stripe_statistics_length, reader.compression, list(table.schema)
        )
    if stats is None:  # a codec not decoded here: nothing is skipped
        assert compression == "lz4"
        return
    assert len(stats) == reader.nstripes > 1
    for number, stripe in enumerate(stats):
        rows = reader.read_stripe(number).to_pylist()
        for name in ("id", "name", "amount", "day"):
            values = [r[name] for r in rows]
            found = stripe[name]
            assert found is not None and found.values == len(values)
            assert (found.minimum, found.maximum) == (min(values), max(values))
        assert not stripe["score"].has_range
