"""The doctors example (Type 7 statements) for tests: the table's schema and the listings the example prints."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCHEMA = (
    "number int, first_name string, last_name string, "
    "extra_field string default 'fishfingers and custard'"
)
# The shared material sits beside the clone, or where LAKECTL_SHARED says (as in conftest.py).
SHARED = Path(os.environ.get("LAKECTL_SHARED", REPO.parent / "shared"))
SEED = SHARED / "seeds" / "000_526cb4c26e8ceed3.txt"

Doctor = tuple[int, str, str, str]


def seed_listings() -> list[list[Doctor]]:
    """The listings printed in the seed (parsed from its text, not typed in here): raw table,
    with updates, ``scd.time=2014-01-01``, ``scd.time=-1``."""
    listings: list[list[Doctor]] = []
    current: list[Doctor] | None = None
    for line in SEED.read_text().splitlines():
        if line.startswith("hive> select") or line.startswith("hive> SELECT"):
            current = []
            listings.append(current)
            continue
        if current is not None:
            if line.strip().startswith("Time taken"):
                current = None
                continue
            parts = line.split(None, 3)  # number, first name, last name, extra_field (has spaces)
            if len(parts) == 4 and parts[0].isdigit():
                current.append((int(parts[0]), parts[1], parts[2], parts[3]))
    return listings


def doctors_rows(snapshot_json: dict[str, Any]) -> list[Doctor]:
    """The rows of ``lakectl snapshot doctors --json``, in the order read."""
    return [
        (r["number"], r["first_name"], r["last_name"], r["extra_field"])
        for r in snapshot_json["rows"]
    ]
