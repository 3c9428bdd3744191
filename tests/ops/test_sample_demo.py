"""The sample data (sample_data/sales, made by scripts/make_sample_data.py) through the CLI, as
`make demo` runs it: create, load the base and two CDC batches, then history and snapshot."""

from __future__ import annotations

from pathlib import Path

from tests.support.cdc_oracle import CdcOracle

SALES = Path(__file__).resolve().parents[2] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
COLUMNS = {
    "sell_id": "BIGINT",
    "acct_id": "BIGINT",
    "change_ts": "VARCHAR",
    "create_ts": "VARCHAR",
    "payment_type_id": "VARCHAR",
    "status_id": "VARCHAR",
    "total_amt": "DOUBLE",
    "batch": "INTEGER",
    "store_id": "VARCHAR",
    "create_date": "VARCHAR",
}
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
# What each batch holds (see scripts/make_sample_data.py).
EXPECTED_COUNTS = {
    "base.csv": {
        "inserted": 200,
        "updated": 0,
        "deleted": 0,
        "ignored": 0,
        "superseded_in_batch": 0,
    },
    # 40 updates, 30 inserts, 11 deletes, a delete of a key that never existed.
    "cdc_batch_1.csv": {
        "inserted": 30,
        "updated": 40,
        "deleted": 11,
        "ignored": 1,
        "superseded_in_batch": 0,
    },
    # 20 updates, 4 late updates older than the stored rows, an insert then an update of one
    # new key, 5 deletes.
    "cdc_batch_2.csv": {
        "inserted": 1,
        "updated": 20,
        "deleted": 5,
        "ignored": 4,
        "superseded_in_batch": 1,
    },
}


def _rows(rows) -> list[tuple]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def _create_sales(lakectl_cli, tmp_path) -> tuple[str, Path]:
    """The sample's sales table in a warehouse under ``tmp_path``; the warehouse option."""
    warehouse = ("--warehouse", tmp_path / "wh")
    created = lakectl_cli(
        "create", "sales", *warehouse, "--schema", SCHEMA,
        "--primary-key", "sell_id", "--partition-by", "create_date", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    return warehouse


def test_sample_sales_demo(tmp_path, lakectl_cli, spark):
    warehouse = _create_sales(lakectl_cli, tmp_path)
    oracle = CdcOracle(COLUMNS, key=("sell_id",), order_by="change_ts", op_column="op_code")
    for version, (name, counts) in enumerate(EXPECTED_COUNTS.items(), start=1):
        result = lakectl_cli("load", "sales", SALES / name, *warehouse, *CDC, "--json")
        assert result.code == 0, result.err
        assert result.json["version"] == version
        assert result.json["counts"] == counts, name
        assert oracle.apply_csv(str(SALES / name), "cdc") == counts, name

    snapshot = lakectl_cli("snapshot", "sales", *warehouse, "--json")
    assert snapshot.code == 0, snapshot.err
    assert snapshot.json["columns"] == list(COLUMNS)
    assert _rows(snapshot.json["rows"]) == _rows(oracle.rows())
    assert len(snapshot.json["rows"]) == 200 + 30 - 11 + 1 - 5

    history = lakectl_cli("history", "sales", *warehouse, "--json")
    commits = history.json["commits"]
    assert [(e["version"], e["operation"]) for e in commits] == [
        (None, "create"),
        (1, "cdc"),
        (2, "cdc"),
        (3, "cdc"),
    ]
    assert [e["counts"] for e in commits[1:]] == list(EXPECTED_COUNTS.values())
    assert commits[1]["info"]["source"].endswith("base.csv")

    show = lakectl_cli("show", "sales", *warehouse, "--json").json
    assert sorted(p["partition"] for p in show["partitions"]) == [
        "create_date=2024-01-01",
        "create_date=2024-01-02",
        "create_date=2024-01-03",
    ]
    assert show["totals"]["rows"] == len(snapshot.json["rows"])
    assert show["version"] == 3

    # The text renderings a person sees.
    text = lakectl_cli("history", "sales", *warehouse)
    assert text.code == 0 and text.out.count(" cdc ") == 3
    table = lakectl_cli("snapshot", "sales", *warehouse, "--limit", "5")
    assert table.code == 0
    assert "5 row(s) (more rows: raise --limit or use --out)" in table.err


def test_a_replayed_cdc_batch_is_ignored_and_changes_nothing(tmp_path, lakectl_cli, spark):
    """A retried load of the same CDC batch exits 0 as skipped (the log says it was loaded);
    forced, it counts every change as ignored, and the table stays what DuckDB gets by applying
    each change once."""
    warehouse = _create_sales(lakectl_cli, tmp_path)
    oracle = CdcOracle(COLUMNS, key=("sell_id",), order_by="change_ts", op_column="op_code")
    versions = []
    for name in ("base.csv", "cdc_batch_1.csv"):
        loaded = lakectl_cli("load", "sales", SALES / name, *warehouse, *CDC, "--json")
        assert loaded.code == 0, loaded.err
        versions.append(loaded.json["version"])
        oracle.apply_csv(str(SALES / name), "cdc")
    batch = SALES / "cdc_batch_1.csv"
    skipped = lakectl_cli("load", "sales", batch, *warehouse, *CDC, "--json")
    assert skipped.code == 0, skipped.err
    assert (skipped.json["status"], skipped.json["loaded_by"]) == ("skipped", versions[1])
    replay = lakectl_cli("load", "sales", batch, *warehouse, *CDC, "--force", "--json")
    assert replay.code == 0, replay.err
    assert replay.json["status"] == "loaded"
    changes = sum(EXPECTED_COUNTS["cdc_batch_1.csv"].values())
    assert replay.json["counts"] == {
        **dict.fromkeys(EXPECTED_COUNTS["base.csv"], 0),
        "ignored": changes,
    }
    assert replay.json["added"] == []
    assert oracle.apply_csv(str(SALES / "cdc_batch_1.csv"), "cdc") == replay.json["counts"]
    snapshot = lakectl_cli("snapshot", "sales", *warehouse, "--json")
    assert _rows(snapshot.json["rows"]) == _rows(oracle.rows())
