"""Regenerate sample_data/sales (the CDC sales `sell` schema): a base and two CDC batches.

Deterministic (fixed seed). Run: .venv/bin/python scripts/make_sample_data.py
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "sample_data" / "sales"
COLUMNS = [
    "sell_id", "acct_id", "change_ts", "create_ts", "payment_type_id", "status_id",
    "total_amt", "batch", "op_code", "store_id", "create_date",
]
STORES = ["S01"] * 6 + ["S02", "S03", "S04", "S05"]  # S01 is heavily skewed
DATES = ["2024-01-01", "2024-01-02", "2024-01-03"]


def row(rng: random.Random, sell_id: int, ts: str, batch: int, op: str) -> dict[str, object]:
    date = DATES[sell_id % len(DATES)]
    return {
        "sell_id": sell_id,
        "acct_id": 1000 + rng.randrange(50),
        "change_ts": ts,
        "create_ts": f"{date} 09:{sell_id % 60:02d}:00",
        "payment_type_id": rng.choice(["CASH", "CARD", "GIFT"]),
        "status_id": rng.choice(["NEW", "PAID", "SHIPPED"]),
        "total_amt": round(rng.uniform(1, 500), 2),
        "batch": batch,
        "op_code": op,
        "store_id": rng.choice(STORES),
        "create_date": date,
    }


def write(name: str, rows: list[dict[str, object]]) -> None:
    with (OUT / name).open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    rng = random.Random(2014)
    OUT.mkdir(parents=True, exist_ok=True)
    base = [row(rng, i, "2024-01-03 00:00:00", 0, "I") for i in range(1, 201)]
    write("base.csv", base)
    batch1 = [row(rng, i, "2024-01-04 10:00:00", 1, "U") for i in range(1, 41)]  # 40 updates
    batch1 += [row(rng, i, "2024-01-04 10:00:00", 1, "I") for i in range(201, 231)]  # 30 inserts
    batch1 += [{**row(rng, i, "2024-01-04 10:00:00", 1, "D")} for i in range(190, 201)]  # 11 deletes
    batch1.append(row(rng, 999, "2024-01-04 10:00:00", 1, "D"))  # delete of a missing key: ignored
    write("cdc_batch_1.csv", batch1)
    batch2 = [row(rng, i, "2024-01-05 10:00:00", 2, "U") for i in range(30, 50)]  # 20 updates
    batch2 += [row(rng, i, "2024-01-04 09:00:00", 2, "U") for i in range(1, 5)]  # late and older: ignored
    batch2 += [row(rng, 231, "2024-01-05 09:00:00", 2, "I"), row(rng, 231, "2024-01-05 11:00:00", 2, "U")]
    batch2 += [row(rng, i, "2024-01-05 10:00:00", 2, "D") for i in range(100, 105)]
    write("cdc_batch_2.csv", batch2)


if __name__ == "__main__":
    main()
