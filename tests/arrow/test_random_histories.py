"""Random CDC histories, with compactions between the loads: at every step and every earlier
version the Arrow reader returns what the Spark path returns. The table has a timestamp, a
decimal and partition values that need escaping (``/``, ``%``, NULL)."""

from __future__ import annotations

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import lakectl
from tests.support.arrow_oracle import assert_same_rows

SCHEMA = "id bigint, qty int, change_ts timestamp, amount decimal(10,2), note string, region string"
REGIONS = ["east", "n/a", "50% off", ""]  # "" reads as NULL: the default partition
HEADER = ["op_code", "id", "qty", "change_ts", "amount", "note", "region"]
START = datetime(2024, 1, 1)


def _batch(rng: random.Random, number: int, path: Path) -> Path:
    """A CDC batch: inserts, updates and deletes of keys 1..120 (a key keeps its region), with
    late and tied change times."""
    rows = []
    for _ in range(rng.randint(40, 120)):
        key = rng.randint(1, 120)
        ts = START + timedelta(minutes=number * 30 + rng.randint(-40, 40))
        rows.append(
            [
                rng.choices("IUD", weights=[4, 4, 2])[0],
                key,
                rng.choice(["", rng.randint(-5, 500)]),
                ts.strftime("%Y-%m-%d %H:%M:%S"),
                rng.choice(["", f"{rng.uniform(-1000, 1000):.2f}"]),
                rng.choice(["a", "b,c", 'q"uote', ""]),
                REGIONS[key % len(REGIONS)],
            ]
        )
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("seed", [5])
def test_random_history_with_compactions(tmp_path, spark, seed):
    rng = random.Random(seed)
    table = lakectl.create_table(
        str(tmp_path / "orders"), schema=SCHEMA, primary_key="id", partition_by="region",
        spark=spark,
    )  # fmt: skip
    steps = ["load", "load", "minor", "load", "load", "major", "load"]
    versions: list[int] = []
    for number, step in enumerate(steps, start=1):
        if step == "load":
            batch = _batch(rng, number, tmp_path / f"batch_{number}.csv")
            versions.append(
                table.load(
                    str(batch), mode="cdc", op_column="op_code", order_by="change_ts"
                ).version
            )
        else:
            table.compact(step)
        assert_same_rows(table)
        earlier = rng.choice(versions)
        if step != "load":
            # An earlier version read through the compaction just made; after a load, earlier
            # versions read as in the loop below (all loads present), so they are read there.
            assert_same_rows(table, version=earlier)
    for version in versions:
        assert_same_rows(table, version=version)
    escaped = assert_same_rows(table, where="region = 'n/a' OR region IS NULL", columns="region,id")
    assert set(escaped.column("region").to_pylist()) == {"n/a", None}
    assert_same_rows(table, where="amount > 10.5 AND change_ts >= '2024-01-01 02:00:00'")
