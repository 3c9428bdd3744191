"""``show``'s row count is the number of rows a read returns, at every version of a history
with deletes, updates, restores and a compaction, all by the Arrow engine (no JVM: the Spark
writers write the same files, tests/ops/test_dml_engines_agree.py)."""

from __future__ import annotations

from pathlib import Path

import lakectl
from lakectl.arrow.row_count import footer_rows
from lakectl.scan.target import open_for_read

REPO = Path(__file__).resolve().parents[2]
SALES = REPO / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = {"mode": "cdc", "op_column": "op_code", "order_by": "change_ts"}


def _footer_estimate(table: lakectl.Table) -> int:
    """What ``show`` used to report: the rows the data files hold minus the delete events."""
    target = open_for_read(table.context.table(table.location))
    stored = sum(footer_rows(target.store.storage, plan) for plan in target.plans)
    return stored - sum(p.delete_events for p in table.show().partitions)


def test_show_counts_the_rows_a_read_returns_at_every_version(tmp_path: Path) -> None:
    table = lakectl.create_table(
        str(tmp_path / "sales"), schema=SCHEMA, primary_key="sell_id", partition_by="create_date"
    )
    steps = [
        lambda: table.load(
            str(SALES / "base.csv"), mode="cdc", op_column="op_code", engine="arrow"
        ),
        lambda: table.load(str(SALES / "cdc_batch_1.csv"), **CDC, engine="arrow"),
        lambda: table.load(str(SALES / "cdc_batch_2.csv"), **CDC, engine="arrow"),
        lambda: table.delete("store_id = 'S01'", engine="arrow"),
        lambda: table.update_rows("status_id = 'REFUNDED'", "sell_id = 17", engine="arrow"),
        lambda: table.restore(3, engine="arrow"),
        lambda: table.compact("minor", engine="arrow"),
        lambda: table.delete("total_amt < 100", engine="arrow"),
        lambda: table.restore(5, engine="arrow"),
        lambda: table.compact("major", engine="arrow"),
    ]
    counted, estimates = [], []
    for step in steps:
        step()
        shown = table.show()
        rows = table.scan(engine="arrow").to_arrow().num_rows
        assert shown.totals["rows"] == rows, (shown.version, table.history()[-1].operation)
        assert [p.rows for p in shown.partitions] == [
            table.scan(where=f"create_date = '{p.partition.split('=', 1)[1]}'").to_arrow().num_rows
            for p in shown.partitions
        ]
        counted.append((shown.version, rows))
        estimates.append(_footer_estimate(table))
    # Each version, read back by time travel, has the rows show counted when it was the newest.
    for version, rows in counted:
        assert table.scan(version=version).to_arrow().num_rows == rows, version
    assert counted[5][1] == counted[2][1]  # restore 3 reads as version 3
    # The history is one where footers minus delete events is not the row count (after the
    # restores it was far off), so the exact count is what is tested here.
    assert any(estimate != rows for (_, rows), estimate in zip(counted, estimates, strict=True))
