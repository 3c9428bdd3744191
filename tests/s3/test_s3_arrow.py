"""The Arrow reader on an s3:// table (through the table's fsspec storage) returns what the
Spark path returns."""

from __future__ import annotations

from samples import CDC, SALES, SALES_SCHEMA, rows


def test_arrow_engine_reads_s3_as_spark(s3, lakectl_cli, spark):
    url = s3.url("sales")
    created = lakectl_cli(
        "create", url, "--schema", SALES_SCHEMA, "--primary-key", "sell_id",
        "--partition-by", "create_date",
    )  # fmt: skip
    assert created.code == 0, created.err
    for name in ("base.csv", "cdc_batch_1.csv"):
        loaded = lakectl_cli("load", url, SALES / name, *CDC)
        assert loaded.code == 0, loaded.err
    for args in ((), ("--version", "1"), ("--where", "create_date = '2024-01-02'")):
        arrow = lakectl_cli("snapshot", url, *args, "--engine", "arrow", "--json")
        assert arrow.code == 0, arrow.err
        assert rows(arrow) == rows(lakectl_cli("snapshot", url, *args, "--json"))
    assert len(rows(arrow)) > 0
