"""The repository's sample data as the S3 tests use it (shared by several test modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCTORS_SCHEMA = "number int, first_name string, last_name string"
UPDATES = REPO / "sample_data" / "doctors" / "updates.sql"
SALES = REPO / "sample_data" / "sales"
SALES_SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")


def rows(snapshot: Any) -> list[tuple[Any, ...]]:
    """The rows of a ``snapshot --json`` run, sorted (order is not the point)."""
    return sorted(tuple(r.values()) for r in snapshot.json["rows"])
