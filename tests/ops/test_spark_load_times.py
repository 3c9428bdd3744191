"""Loads of tables with time columns by either engine: the events are decided and written by
the shared per-partition code (in Spark's tasks and on its driver, or in process), an append's
and a cdc load's alike. Times at the ends of
what Spark stores (0001-01-01, before the Gregorian calendar's start, 9999-12-31) and
``timestamp_ntz`` columns (ORC bigints, as Spark stores them) read back the same through the
Spark engine and the Arrow engine, with the counts each load reports."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakectl
from tests.support.cli import run_lakectl

EPOCH = datetime(1970, 1, 1)
FIRST = "0001-01-01 00:00:00"
JULIAN = "1500-06-01 12:34:56.123456"
LAST = "9999-12-31 23:59:59.999999"


def _micros(text: str) -> int:
    """Microseconds since 1970 of a wall time in UTC, in the proleptic Gregorian calendar."""
    return (datetime.fromisoformat(text) - EPOCH) // timedelta(microseconds=1)


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _spark_rows(table: Path) -> list[tuple]:
    from pyspark.sql import functions as F

    frame = lakectl.open_table(str(table)).scan(engine="spark").to_spark()
    # As microseconds: a Python datetime of year 1 or 9999 may not survive the local zone.
    rows = frame.select("id", F.unix_micros(F.col("at").cast("timestamp")), "v", "p").collect()
    return sorted(tuple(r) for r in rows)


def _arrow_rows(table: Path) -> list[tuple]:
    data = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow()
    at = data.column("at")
    micros = pc.cast(at.cast(pa.timestamp("us", tz=at.type.tz)), pa.int64()).to_pylist()
    return sorted(zip(data.column("id").to_pylist(), micros, data.column("v").to_pylist(),
                      data.column("p").to_pylist(), strict=True))  # fmt: skip


def _load(table: Path, batch: Path, engine: str, *args: str) -> dict[str, int]:
    loaded = run_lakectl("load", table, batch, "--engine", engine, "--json", *args)
    assert loaded.code == 0, loaded.err
    assert loaded.json["engine"] == engine, loaded.out
    return loaded.json["counts"]


@pytest.mark.parametrize("engine", ["spark", "arrow"])
@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_extreme_times_round_trip_through_loads(spark, tmp_path, kind, engine):
    table = tmp_path / "t"
    made = run_lakectl(
        "create", table, "--schema", f"id bigint, at {kind}, v string, p string",
        "--primary-key", "id", "--partition-by", "p",
    )  # fmt: skip
    assert made.code == 0, made.err
    appended = _write(
        tmp_path / "a.csv",
        "id,at,v,p",
        [f"1,{FIRST},one,a", f"2,{JULIAN},two,a", f"3,{LAST},three,b", "4,1969-12-31 23:59:58.5,four,b"],
    )  # fmt: skip
    assert _load(table, appended, engine, "--mode", "append") == {"inserted": 4}
    # cdc by the time: 1 moves to a later time and partition, 2 is deleted by a later change,
    # 3's change is older than its stored 9999 (ignored), 5 is new.
    changes = _write(
        tmp_path / "c.csv",
        "id,at,v,p,op_code",
        [f"1,{JULIAN},one2,b,U", f"2,{LAST},,a,D", "3,2000-01-01 00:00:00,late,b,U",
         f"5,{FIRST},five,a,I"],
    )  # fmt: skip
    counts = _load(table, changes, engine, "--mode", "cdc", "--order-by", "at")
    assert counts == {
        "inserted": 1,
        "updated": 1,
        "deleted": 1,
        "ignored": 1,
        "superseded_in_batch": 0,
    }
    want = sorted(
        [
            (1, _micros(JULIAN), "one2", "b"),
            (3, _micros(LAST), "three", "b"),
            (4, _micros("1969-12-31 23:59:58.500000"), "four", "b"),
            (5, _micros(FIRST), "five", "a"),
        ]
    )
    assert _arrow_rows(table) == want
    assert _spark_rows(table) == want
