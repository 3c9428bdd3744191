"""The Arrow reader on tables Hive wrote (../shared/interop) equals the Spark path, row for row,
and reads them as their README says."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import lakectl
from tests.support.arrow_oracle import assert_same_rows

NO_OPEN = 9223372036854775807
# (table, valid-write-id list or None)
CASES = [
    ("nation_acid", None),
    ("nation_acid", f"default.nation_acid:3:{NO_OPEN}::"),
    ("nation_acid", f"default.nation_acid:2:{NO_OPEN}::"),
    ("nation_acid", f"default.nation_acid:4:{NO_OPEN}::3"),
    ("compacted_base", None),
    ("nation_original", None),
    ("dummy_original", None),
    ("alltypes_original", None),
    ("streaming", None),
    ("streaming", f"default.streaming:1:{NO_OPEN}::"),
    ("streaming", "default.streaming:2:1:1:"),
]


@pytest.mark.parametrize(("name", "valid"), CASES)
def test_hive_table_equals_the_spark_path(interop, spark, name, valid):
    table = lakectl.open_table(str(interop / "tables" / name), spark=spark)
    assert_same_rows(table, valid_write_ids=valid)


def test_nation_acid_figures(interop):
    table = lakectl.open_table(str(interop / "tables" / "nation_acid"))
    keys = Counter(table.scan().to_arrow().column("n_nationkey").to_pylist())
    assert sum(keys.values()) == 23_000 and keys[5] == 0 and keys[19] == 0
    older = table.scan(valid_write_ids=f"default.nation_acid:3:{NO_OPEN}::").to_arrow()
    assert older.num_rows == 24_000
    raw = f"default.nation_acid:2:{NO_OPEN}::"
    five = table.scan(
        valid_write_ids=raw, where="n_nationkey = 5", columns="n_nationkey,n_name"
    ).to_arrow()
    assert five.schema.names == ["n_nationkey", "n_name"]
    assert five.num_rows == 1000 and set(five.column("n_name").to_pylist()) == {"ETHIOPIA"}
    assert table.scan(valid_write_ids=raw, where="n_nationkey = 100").to_arrow().num_rows == 0


def test_original_files_lose_the_deleted_synthetic_row(interop):
    got = lakectl.open_table(str(interop / "tables" / "nation_original")).scan().to_arrow()
    assert got.num_rows == 24 and 24 not in got.column("n_nationkey").to_pylist()


def test_batches_stream_partition_by_partition(interop):
    table = lakectl.open_table(str(interop / "tables" / "alltypes_original"))
    reader = table.scan(columns=["id", "year", "month"]).to_batches()
    assert reader.schema.names == ["id", "year", "month"]
    months = set()
    for batch in reader:
        months.add(
            tuple(
                sorted(
                    set(zip(batch.column(1).to_pylist(), batch.column(2).to_pylist(), strict=True))
                )
            )
        )
    assert all(len(m) == 1 for m in months)  # each batch holds one partition
    assert len(months) == 24


def test_cli_engines_print_the_same_rows(interop, lakectl_cli, spark):
    """Every type of alltypes_original (timestamps included) prints the same JSON values."""
    table = interop / "tables" / "alltypes_original"
    args = ("snapshot", table, "--where", "id < 3000 AND month IN (10, 11)", "--json")
    arrow, sparked = lakectl_cli(*args, "--engine", "arrow"), lakectl_cli(*args)
    assert arrow.code == sparked.code == 0, arrow.err + sparked.err
    assert arrow.json["columns"] == sparked.json["columns"]
    rows = [
        Counter(json.dumps(r, sort_keys=True) for r in run.json["rows"]) for run in (arrow, sparked)
    ]
    assert rows[0] == rows[1] and sum(rows[0].values()) > 100
