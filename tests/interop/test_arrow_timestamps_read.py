"""Timestamp columns written by the Arrow engine, read by Spark and by Hive 2.3's reader.

One table loaded and compacted with ``--engine arrow`` (tests/arrow/test_arrow_timestamps.py)
must read the same instants through Spark's data source and through Hive 2.3's own ORC reader
as through the Arrow reader.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.orc as orc

import lakectl
from lakectl.table.validity import ValidWriteIds
from tests.arrow.test_arrow_timestamps import ARROW, EXPECTED, loaded_table, rows, write_csv
from tests.support.cli import run_lakectl
from tests.support.hive23_reader import hive_txn_list, read_partition

HIVE_COLUMNS = (("id", "bigint"), ("at", "timestamp"), ("day", "date"), ("note", "string"))


def _hive_text(at: dt.datetime | None) -> str | None:
    """How Hive's JSON text of a row shows a timestamp (the JVM's zone is UTC here)."""
    if at is None:
        return None
    return at.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")


def test_spark_and_hive_read_the_instants_the_arrow_engine_wrote(tmp_path, spark):
    table = loaded_table(tmp_path / "arrow", *ARROW)
    minor = run_lakectl("compact", table, "--minor", *ARROW)
    assert minor.code == 0, minor.err
    assert rows(table, engine="spark") == EXPECTED
    state = lakectl.open_table(str(table)).context.table(str(table)).read_state()
    valid = ValidWriteIds(high_watermark=state.max_write_id, exceptions=frozenset())
    got = read_partition(spark, f"file://{table}", HIVE_COLUMNS, hive_txn_list(spark, valid))
    assert sorted((r[0], r[1], r[3]) for r in got) == [
        (i, _hive_text(at), note) for i, at, note in EXPECTED
    ]


# Times pyarrow cannot hold (written and read through pyorc), and one before 1970 with a
# fraction; 1969-12-31 23:59:59.25 has no ORC encoding of its own: every writer stores, and
# every reader reads, 1970-01-01 00:00:00.25.
WIDE = [
    ("9999-12-31 23:59:59.999999", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, dt.UTC)),
    ("0001-01-01 00:00:00", dt.datetime(1, 1, 1, tzinfo=dt.UTC)),
    ("1500-06-01 12:00:00.5", dt.datetime(1500, 6, 1, 12, 0, 0, 500000, dt.UTC)),
    ("1969-12-31 23:59:59.25", dt.datetime(1970, 1, 1, 0, 0, 0, 250000, dt.UTC)),
    ("1969-12-31 23:59:58.75", dt.datetime(1969, 12, 31, 23, 59, 58, 750000, dt.UTC)),
]


# Times before 1970 with a fraction that pyarrow holds: a file of only these is read by pyarrow.
PRE_1970 = [
    ("1969-12-31 23:59:58.75", dt.datetime(1969, 12, 31, 23, 59, 58, 750000, dt.UTC)),
    ("1960-05-05 10:00:00.123456", dt.datetime(1960, 5, 5, 10, 0, 0, 123456, dt.UTC)),
]


def _wide_table(tmp_path, name: str, *engine: str):
    """WIDE loaded (ids 0..), then PRE_1970 (ids 10..) in a second delta."""
    table = tmp_path / name
    made = run_lakectl(
        "create", table, "--schema", "id bigint, at timestamp", "--primary-key", "id"
    )
    assert made.code == 0, made.err
    for first, times in ((0, WIDE), (10, PRE_1970)):
        lines = ["id,at"] + [f"{first + i},{text}" for i, (text, _) in enumerate(times)]
        path = write_csv(tmp_path / f"{name}{first}.csv", lines)
        done = run_lakectl("load", table, path, *engine)
        assert done.code == 0, done.err
    return table


def _read(table, engine: str) -> list[tuple[int, dt.datetime]]:
    got = lakectl.open_table(str(table)).scan(engine=engine).to_arrow().to_pylist()
    return sorted((r["id"], r["at"]) for r in got)


def test_spark_and_arrow_read_each_others_times_outside_pyarrows_range(tmp_path, spark):
    """Spark's files read by the Arrow engine and by the kernel in Spark's tasks, the Arrow
    engine's read by Spark's data source and by Hive 2.3's reader: the same instants."""
    expected = [(i, at) for i, (_, at) in enumerate(WIDE)]
    expected += [(10 + i, at) for i, (_, at) in enumerate(PRE_1970)]
    by_spark = _wide_table(tmp_path, "spark")
    by_arrow = _wide_table(tmp_path, "arrow", *ARROW)
    # The Spark load's file (written in its tasks), read by pyarrow itself, rows in any order.
    (second,) = by_spark.glob("delta_0000002_*/bucket_*")
    at = orc.ORCFile(str(second)).read().column("row").combine_chunks().field("at")
    assert sorted(at.cast(pa.timestamp("us", tz="UTC")).to_pylist()) == sorted(
        t for _, t in PRE_1970
    )
    for table in (by_spark, by_arrow):
        assert _read(table, "arrow") == expected, table
        assert _read(table, "spark") == expected, table
    spark.conf.set("spark.lakectl.read.native", "false")
    try:
        assert _read(by_spark, "spark") == expected
        done = run_lakectl("--json", "snapshot", by_spark, "--order-by", "id")
        assert done.code == 0, done.err
        assert done.json["read_path"] == "kernel"
        by_arrow_engine = run_lakectl("--json", "snapshot", by_spark, "--order-by", "id", *ARROW)
        assert done.json["rows"] == by_arrow_engine.json["rows"]
        assert {"id": 1, "at": "0001-01-01T00:00:00"} in done.json["rows"]
    finally:
        spark.conf.unset("spark.lakectl.read.native")
    valid = ValidWriteIds(high_watermark=2, exceptions=frozenset())
    columns = (("id", "bigint"), ("at", "timestamp"))
    hive = [
        read_partition(spark, f"file://{t}", columns, hive_txn_list(spark, valid))
        for t in (by_spark, by_arrow)
    ]
    assert hive[1] == hive[0]
    assert [r[1] for r in hive[1]][:2] == ["9999-12-31 23:59:59.999999", "0001-01-01 00:00:00"]
