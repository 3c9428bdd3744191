"""Timestamp columns written by the Arrow engine, read by Spark and by Hive 2.3's reader.

One table loaded and compacted with ``--engine arrow`` (tests/arrow/test_arrow_timestamps.py)
must read the same instants through Spark's data source and through Hive 2.3's own ORC reader
as through the Arrow reader.
"""

from __future__ import annotations

import datetime as dt

import lakectl
from lakectl.table.validity import ValidWriteIds
from tests.arrow.test_arrow_timestamps import ARROW, EXPECTED, loaded_table, rows
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
