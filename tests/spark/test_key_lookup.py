"""The pyarrow key lookup finds the same stored rows as the load's other lookup (the live-row
kernel in Spark tasks, then a semi join with the batch's keys): live rows only (deleted and
updated rows' old versions are gone), with their identities."""

from __future__ import annotations

from lakectl.ops.context import Context
from lakectl.ops.load import _existing_keys
from lakectl.scan.target import plan_lakectl
from lakectl.spark import key_lookup
from tests.support.cli import create_region_table, csv_file

SCHEMA = "id bigint, change_ts string, note string, region string"
HEADER = ["op", "id", "change_ts", "note", "region"]
CDC = ("--mode", "cdc", "--op-column", "op", "--order-by", "change_ts", "--json")


def test_arrow_lookup_matches_spark_lookup(tmp_path, lakectl_cli, spark):
    wh = tmp_path / "wh"
    create_region_table(wh, SCHEMA)
    first = [("I", i, "2024-01-01", f"n{i}", ["a/b", "c", None][i % 3]) for i in range(1, 31)]
    second = [("U", i, "2024-01-02", "upd", ["a/b", "c", None][i % 3]) for i in range(1, 11)]
    second += [("D", i, "2024-01-02", "", ["a/b", "c", None][i % 3]) for i in range(11, 16)]
    for n, rows in enumerate((first, second)):
        loaded = lakectl_cli(
            "load", "t", csv_file(tmp_path / f"{n}.csv", HEADER, rows), "--warehouse", wh, *CDC
        )
        assert loaded.code == 0, loaded.err

    store = Context().table(str(wh / "t"))
    state = store.read_state()
    meta = state.metadata
    valid, plans, _ = plan_lakectl(store, state)
    wanted = spark.createDataFrame([(i,) for i in range(0, 40, 2)], "id bigint")
    lookup = key_lookup.lookup_spec(spark, meta.data_schema, ["id"], "change_ts")
    assert lookup is not None
    partitions = meta.schema.select(["region"])
    found = key_lookup.stored_rows_for_keys(
        spark,
        store.storage,
        plans,
        valid,
        lookup,
        partitions,
        wanted.toArrow().column(0).combine_chunks(),
    )
    touched = {p.relative for p in plans}
    expected = _existing_keys(spark, store, state, meta, touched, "change_ts", wanted)
    assert "MapInArrow" in expected._jdf.queryExecution().executedPlan().toString()
    columns = ["id", "change_ts", "region", "originalTransaction", "bucket", "rowId"]
    got = sorted(tuple(r) for r in found.select(*columns).collect())
    assert got == sorted(tuple(r) for r in expected.select(*columns).collect())
    # Keys 12 and 14 were deleted, 2..10 updated (their new rows only), 32..38 never existed.
    assert sorted(r[0] for r in got) == [2, 4, 6, 8, 10, 16, 18, 20, 22, 24, 26, 28, 30]
    assert {r[1] for r in got if r[0] <= 10} == {"2024-01-02"}


def test_lookup_spec_declines_what_it_cannot_read(spark):
    from lakectl.table.schema import Column, Schema

    schema = Schema(
        (
            Column("id", "bigint"),
            Column("ts", "timestamp"),
            Column("local", "timestamp_ntz"),
            Column("k2", "string"),
        )
    )
    assert key_lookup.lookup_spec(spark, schema, ["id", "k2"], None) is None  # composite key
    assert key_lookup.lookup_spec(spark, schema, ["id"], "local") is None  # timestamp_ntz order
    assert key_lookup.lookup_spec(spark, schema, ["id"], "ts") is not None  # timestamp order
    assert key_lookup.lookup_spec(spark, schema, ["region"], None) is None  # partition column
    assert key_lookup.lookup_spec(spark, schema, ["id"], None) is not None
