"""Compaction by the Arrow engine against compaction by Spark, on copies of one table.

One partitioned table gets a history through Spark (appends, an upsert, a CDC load with
deletes, a one-off delete and update); two copies of it are compacted, minor then major, one
with ``engine="spark"`` and one with ``engine="arrow"``. After each step both copies must hold
the same directories and files with the same events in the same order, their logs the same
records (times and run ids aside), and every version must read the same through both read paths.
Hive 2.3's own ACID reader must read the Arrow engine's merged deltas as lakectl does.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import lakectl
from tests.support.hive23_reader import hive_txn_list, read_partition
from tests.support.table_files import data_files, without_run_fields
from tests.support.table_logs import log_on_disk, store_at

SCHEMA = "id bigint, name string, qty int, day string"


def _frame(spark: Any, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    return spark.createDataFrame(rows, schema)


@pytest.fixture(scope="module")
def history(spark, tmp_path_factory) -> Path:
    """The table after its history (read-only: tests copy it)."""
    root = tmp_path_factory.mktemp("engines") / "t"
    table = lakectl.create_table(
        str(root), schema=SCHEMA, primary_key="id", partition_by="day", spark=spark
    )
    table.load(_frame(spark, [(i, f"n{i}", i % 5, f"d{i % 3}") for i in range(40)]), mode="append")
    table.load(_frame(spark, [(i, f"m{i}", 7, f"d{i % 3}") for i in range(30, 50)]), mode="upsert")
    cdc = [(i, f"c{i}", 3, f"d{i % 3}", "D" if i % 2 else "U") for i in range(20, 30)]
    cdc += [(60, "c60", 1, "d0", "I")]
    table.load(_frame(spark, cdc, SCHEMA + ", op string"), mode="cdc", op_column="op")
    table.delete("qty = 0")
    table.update_rows("qty = qty + 100", "day = 'd1'")
    return root


def _rows(table: lakectl.Table, version: int, engine: str) -> list[tuple[Any, ...]]:
    got = table.scan(version=version, engine=engine)  # type: ignore[arg-type]
    if engine == "spark":
        return sorted(tuple(r) for r in got.to_spark().collect())
    return sorted(tuple(r.values()) for r in got.to_arrow().to_pylist())


def test_arrow_compaction_writes_what_spark_writes(spark, history, tmp_path) -> None:
    roots = {e: tmp_path / e for e in ("spark", "arrow")}
    for root in roots.values():
        shutil.copytree(history, root)
    tables = {e: lakectl.open_table(str(r), spark=spark) for e, r in roots.items()}
    versions = range(1, tables["spark"].version + 1)
    before = {v: _rows(tables["spark"], v, "arrow") for v in versions}
    for kind in ("minor", "major"):
        done = {e: t.compact(kind, engine=e) for e, t in tables.items()}  # type: ignore[arg-type]
        assert done["arrow"].engine == "arrow" and done["spark"].engine == "spark"
        assert done["arrow"].peak_memory_bytes and done["arrow"].peak_memory_bytes > 0
        assert done["arrow"].added == done["spark"].added != ()
        assert done["arrow"].counts.keys() == done["spark"].counts.keys()
        assert data_files(roots["arrow"]) == data_files(roots["spark"])
        logs = {e: without_run_fields(log_on_disk(store_at(r))) for e, r in roots.items()}
        assert logs["arrow"] == logs["spark"]
        for table in tables.values():
            for v in versions:
                assert _rows(table, v, "arrow") == _rows(table, v, "spark") == before[v], v
        if kind == "minor":
            _assert_hive_reads(spark, tables["arrow"], roots["arrow"])


def _assert_hive_reads(spark: Any, table: lakectl.Table, root: Path) -> None:
    """Hive 2.3's reader reads each partition of the latest version as lakectl does."""
    merged = [d.name for d in root.glob("day=*/*delta_*") if d.name.count("_") == 2]
    assert merged, "the minor compaction wrote no delta_A_B"
    valid = table.context.table(str(root)).read_state().valid_write_ids()
    txn_list = hive_txn_list(spark, valid)
    columns = [("id", "bigint"), ("name", "string"), ("qty", "int")]
    rows = table.scan(engine="arrow").to_arrow().to_pylist()
    for part in sorted(p.name for p in root.glob("day=*")):
        want = sorted(
            ((r["id"], r["name"], r["qty"]) for r in rows if f"day={r['day']}" == part), key=repr
        )
        assert read_partition(spark, f"file://{root / part}", columns, txn_list) == want, part
