"""Timestamp columns written by the Arrow engine (load and compaction), without a JVM.

The files must hold ORC ``timestamp`` (what Spark's ORC writer stores, and the only timestamp
type Hive 2.3's reader knows), and every reader must get the instants loaded back, times
pyarrow cannot store as Spark does (outside 1677-09-21 .. 2262-04-11, or before 1970 with a
fraction of a second) included (tests/arrow/test_wide_timestamps.py). Spark's and Hive 2.3's
readers of the same table: tests/interop/test_arrow_timestamps_read.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.errors import UsageError
from lakectl.kernel.orc_timestamps import batch_to_orc
from tests.support.cli import run_lakectl

ARROW = ("--engine", "arrow")
SCHEMA = "id bigint, at timestamp, day date, note string"
UTC = dt.UTC
# Loaded in two CDC batches: the second changes id 2 (a later ``at`` wins), deletes id 1 and
# an absent id at a time the writer could not store (a delete stores no time).
FIRST = [
    "id,at,day,note,op",
    "1,2024-03-10 12:34:56.123456,2024-03-10,a,I",
    "2,1677-09-21 00:12:44,1677-09-21,lowest,I",
    "2,1677-09-21 00:12:45,1677-09-21,lowest+1s,U",
    "3,2262-04-11 23:47:16.854775,2262-04-11,highest,I",
    "4,1969-12-31 23:59:59,1969-12-31,before 1970,I",
    "5,1970-01-01 00:00:00.000001,1970-01-01,after 1970,I",
    "6,,,no time,I",
    "7,2024-03-10 12:34:56.123456,2024-03-10,a,I",
]
SECOND = [
    "id,at,day,note,op",
    "2,1800-01-01 00:00:00,1800-01-01,changed,U",
    "1,2025-01-01 00:00:00,2025-01-01,,D",
    "8,1500-06-01 00:00:00,1500-06-01,,D",
]
CDC = ("--mode", "cdc", "--order-by", "at", "--op-column", "op")
EXPECTED = [
    (2, dt.datetime(1800, 1, 1, tzinfo=UTC), "changed"),
    (3, dt.datetime(2262, 4, 11, 23, 47, 16, 854775, UTC), "highest"),
    (4, dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "before 1970"),
    (5, dt.datetime(1970, 1, 1, 0, 0, 0, 1, UTC), "after 1970"),
    (6, None, "no time"),
    (7, dt.datetime(2024, 3, 10, 12, 34, 56, 123456, UTC), "a"),
]


def write_csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def loaded_table(tmp_path: Path, *engine: str) -> Path:
    """The table after both batches, loaded (and compacted) by ``engine``."""
    table = tmp_path / "events"
    created = run_lakectl("create", table, "--schema", SCHEMA, "--primary-key", "id")
    assert created.code == 0, created.err
    for n, lines in enumerate((FIRST, SECOND)):
        path = write_csv(tmp_path / f"b{n}.csv", lines)
        done = run_lakectl("load", table, path, *CDC, *engine, "--json")
        assert done.code == 0, done.err
    return table


def rows(table: Path, engine: str = "arrow") -> list[tuple[object, ...]]:
    read = lakectl.open_table(str(table)).scan(engine=engine).to_arrow().to_pylist()
    return sorted((r["id"], r["at"], r["note"]) for r in read)


def test_timestamps_load_and_compact_with_the_arrow_engine_as_orc_timestamps(tmp_path):
    table = loaded_table(tmp_path, *ARROW)
    assert rows(table) == EXPECTED
    for path in table.glob("delta_*/bucket_*"):
        row = orc.ORCFile(str(path)).schema.field("row").type
        # ORC ``timestamp``: pyarrow reads it without a zone (``... with local time zone``
        # reads as UTC); Spark's files read the same.
        assert row.field("at").type == pa.timestamp("ns"), path
    compacted = run_lakectl("compact", table, "--major", *ARROW, "--json")
    assert compacted.code == 0, compacted.err
    assert compacted.json["engine"] == "arrow"
    (base,) = table.glob("base_*")
    assert orc.ORCFile(str(next(base.glob("bucket_*")))).schema.field("row").type.field(
        "at"
    ).type == pa.timestamp("ns")
    assert rows(table) == EXPECTED


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("1677-09-21 00:12:43", dt.datetime(1677, 9, 21, 0, 12, 43, tzinfo=UTC)),
        ("2262-04-11 23:47:16.854776", dt.datetime(2262, 4, 11, 23, 47, 16, 854776, UTC)),
        ("1500-01-01 00:00:00", dt.datetime(1500, 1, 1, tzinfo=UTC)),
        ("1969-12-31 23:59:59.5", dt.datetime(1970, 1, 1, 0, 0, 0, 500000, UTC)),
        ("1969-12-31 23:59:58.5", dt.datetime(1969, 12, 31, 23, 59, 58, 500000, UTC)),
    ],
)
def test_a_time_pyarrow_cannot_store_is_loaded_and_compacted(tmp_path, value, stored):
    """Written through pyorc; 1969-12-31 23:59:59.5 has no ORC encoding of its own and reads
    as 1970-01-01 00:00:00.5, as it does from Spark's files."""
    table = loaded_table(tmp_path, *ARROW)
    path = write_csv(tmp_path / "wide.csv", ["id,at,day,note,op", f"9,{value},2024-01-01,x,I"])
    done = run_lakectl("load", table, path, *CDC, *ARROW)
    assert done.code == 0, done.err
    assert rows(table) == sorted([*EXPECTED, (9, stored, "x")])
    compacted = run_lakectl("compact", table, "--major", *ARROW, "--json")
    assert compacted.code == 0, compacted.err
    assert rows(table) == sorted([*EXPECTED, (9, stored, "x")])


def test_the_conversion_keeps_instants_and_names_the_first_bad_value():
    micros = [0, -1_000_000, 1, None, 9_223_372_036_854_775, -9_223_372_036_000_000]
    at = pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    batch = pa.record_batch([pa.StructArray.from_arrays([at], ["at"])], ["row"])
    converted = batch_to_orc(batch)
    inner = converted.column("row").field("at")
    assert inner.type == pa.timestamp("ns")
    assert inner.cast(pa.int64()).to_pylist() == [None if m is None else m * 1000 for m in micros]
    bad = pa.array([5, -1], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    with pytest.raises(UsageError, match=r"column at holds 1969-12-31 23:59:59.999999 UTC, a "):
        batch_to_orc(pa.record_batch([bad], ["at"]))
