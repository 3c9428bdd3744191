"""Random CDC batches for the change-feed tests: inserts, updates (some moving a key to another
partition) and deletes of a small table."""

from __future__ import annotations

import csv
import random
from pathlib import Path

SCHEMA = "id bigint, change_ts bigint, note string, qty int, region string"
COLUMNS = ("id", "change_ts", "note", "qty", "region")
CDC_ARGS = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")


def write_change_batch(path: Path, rng: random.Random, batch_no: int, keys: int) -> None:
    """A CDC batch: inserts, updates (some moving a key to another partition), deletes."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["op_code", *COLUMNS])
        for n in range(rng.randint(5, 25)):
            op = rng.choice("IIUUD")
            note = rng.choice(["x", "y, z", 'q"t', ""])
            writer.writerow(
                [
                    op,
                    rng.randint(1, keys),
                    batch_no * 1000 + n,
                    note,
                    rng.randint(0, 9),
                    rng.choice(["a", "b", "c"]),
                ]
            )
