"""Timestamp columns written by the Arrow engine, read by Spark and by Hive 2.3's reader.

One table loaded and compacted with ``--engine arrow`` (tests/arrow/test_arrow_timestamps.py)
must read the same instants through Spark's data source and through Hive 2.3's own ORC reader
as through the Arrow reader.
"""

from __future__ import annotations

import datetime as dt

import lakectl
from lakectl.table.validity import ValidWriteIds
from tests.arrow.test_arrow_timestamps import ARROW, CDC, EXPECTED, loaded_table, rows, write_csv
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


def test_auto_loads_a_time_the_arrow_engine_cannot_write_with_spark(tmp_path, spark):
    """Under ``--engine auto`` a small batch goes to the Arrow engine; a time it cannot store
    (here before 1677) is found while loading, its transaction aborts, and Spark loads it."""
    table = loaded_table(tmp_path / "auto", *ARROW)
    path = write_csv(
        tmp_path / "old.csv", ["id,at,day,note,op", "9,1500-01-01 00:00:00,2024-01-01,o,I"]
    )
    done = run_lakectl("load", table, path, *CDC, "--engine", "auto", "--json")
    assert done.code == 0, done.err
    assert done.json["engine"] == "spark"
    assert "the Arrow engine cannot: column at holds 1500-01-01" in done.json["engine_reason"]
    got = lakectl.open_table(str(table)).scan(where="id = 9", engine="spark").to_spark().collect()
    assert [(r["id"], r["note"]) for r in got] == [(9, "o")]
    assert got[0]["at"].year == 1500
