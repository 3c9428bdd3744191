"""Random CDC batches for the differential tests: late, tied and repeated changes, values that
need CSV quoting, partition values that need Hive's path escaping; and rows in comparable form."""

from __future__ import annotations

import csv
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.support.cdc_oracle import CdcOracle

SCHEMA = "id bigint, change_ts timestamp, amount decimal(10,2), note string, qty int, region string"
COLUMNS = {
    "id": "BIGINT",
    "change_ts": "TIMESTAMP",
    "amount": "DECIMAL(10,2)",
    "note": "VARCHAR",
    "qty": "INTEGER",
    "region": "VARCHAR",
}
# The file's column order differs from the table's: columns are matched by name.
FILE_COLUMNS = ["op_code", "region", "id", "qty", "change_ts", "note", "amount"]
REGIONS = ["east", "west", "n/a", "50% off", None]  # None: the default partition
NOTES = ["plain", "with, comma", 'say "hi"', "ünïcode", None, "x=y:z"]
START = datetime(2024, 1, 1, 12, 0, 0)
CDC_ARGS = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")


def normalize(row: dict[str, Any]) -> tuple:
    """One row, from DuckDB or from lakectl's JSON, in comparable form."""
    ts = row["change_ts"]
    if isinstance(ts, datetime):
        # DuckDB holds the CSV's wall time; Spark parses it in UTC (the session zone) and hands
        # it to Python as naive local time, which JSON renders ISO.
        ts = ts.replace(tzinfo=UTC).astimezone().replace(tzinfo=None).isoformat()
    amount = row["amount"]
    return (
        int(row["id"]),
        ts,
        None if amount is None else Decimal(str(amount)),
        row["note"],
        row["qty"],
        row["region"],
    )


def rows_of(result) -> list[tuple]:
    return sorted(normalize(r) for r in result.json["rows"])


def oracle_rows(oracle: CdcOracle) -> list[tuple]:
    return sorted(normalize(r) for r in oracle.rows())


def make_batch(rng: random.Random, batch_no: int, key_space: int) -> list[dict[str, Any]]:
    rows = []
    size = rng.randint(50, 300)
    for _ in range(size):
        key = rng.randint(1, key_space)
        # Minute granularity and a window wider than the gap between batches: late changes,
        # older than what is stored, and exact ties.
        minutes = batch_no * 30 + rng.randint(-45, 45)
        rows.append(
            {
                "op_code": rng.choices(["I", "U", "D"], weights=[4, 4, 2])[0],
                "region": REGIONS[key % len(REGIONS)],
                "id": key,
                "qty": rng.choice([None, rng.randint(-5, 500)]),
                "change_ts": (START + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S"),
                "note": rng.choice(NOTES),
                "amount": rng.choice([None, f"{rng.uniform(-1000, 1000):.2f}"]),
            }
        )
    # Some keys several times in one batch, same change time: file position decides.
    for _ in range(size // 10):
        twin = dict(rng.choice(rows))
        twin["op_code"] = rng.choice(["I", "U", "D"])
        twin["amount"] = f"{rng.uniform(0, 10):.2f}"
        rows.insert(rng.randint(0, len(rows)), twin)
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, FILE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path
