"""``list-bucket`` by the Arrow engine against ``list-bucket`` by Spark, on copies of one table.

The table's history is written by the Arrow engine (appends, an upsert, a CDC load with
deletes: a base-less partition of deltas and delete deltas). Two copies are list-bucketed step by
step, one with ``engine="spark"`` and one with ``engine="arrow"``: split by one column, a load on
top, one partition re-split by two columns (its input base is itself split) and the other
rewritten plain (``off``). After each step both copies must hold the same directories and files
with the same events in the same order, their logs the same records (times aside), and the rows
must read the same through both engines' readers, with and without a predicate the split prunes
(Spark: through lakectl's data source and through the live-row kernel in its tasks).
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.spark.native_read import ENABLED_CONF as DATA_SOURCE
from tests.support.table_files import data_files, without_run_fields
from tests.support.table_logs import log_on_disk, store_at

SCHEMA = "id bigint, name string, qty int, day string"
DEFAULT = "HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"


def _csv(path: Path, rows: list[dict[str, Any]]) -> str:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def _row(i: int, name: str, qty: int | None, **extra: Any) -> dict[str, Any]:
    return {"id": i, "name": name, "qty": "" if qty is None else qty, "day": f"d{i % 2}", **extra}


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    """The table after its history, written without a JVM (read-only: tests copy it)."""
    tmp = tmp_path_factory.mktemp("lb_engines")
    root = tmp / "t"
    table = lakectl.create_table(str(root), schema=SCHEMA, primary_key="id", partition_by="day")
    first = [_row(i, f"n{i}", (None if i % 11 == 0 else i % 4 * 7)) for i in range(40)]
    table.load(_csv(tmp / "a.csv", first), mode="append", engine="arrow")
    table.compact("major", engine="arrow")  # bases to split
    upsert = [_row(i, f"m{i}", 7) for i in range(30, 48)]
    table.load(_csv(tmp / "b.csv", upsert), mode="upsert", engine="arrow")
    cdc = [_row(i, f"c{i}", 14, op="D" if i % 3 else "U") for i in range(10, 22)]
    table.load(_csv(tmp / "c.csv", cdc), mode="cdc", op_column="op", engine="arrow")
    return root


def _rows(table: lakectl.Table, engine: str, where: str | None = None) -> list[tuple[Any, ...]]:
    got = table.scan(engine=engine, where=where)  # type: ignore[arg-type]
    if engine == "spark":
        return sorted((tuple(r) for r in got.to_spark().collect()), key=repr)
    return sorted((tuple(r.values()) for r in got.to_arrow().to_pylist()), key=repr)


def test_arrow_list_bucketing_writes_what_spark_writes(spark, history, tmp_path) -> None:
    roots = {e: tmp_path / e for e in ("spark", "arrow")}
    for root in roots.values():
        shutil.copytree(history, root)
    tables = {e: lakectl.open_table(str(r), spark=spark) for e, r in roots.items()}
    want = _rows(tables["arrow"], "arrow")
    extra = [_row(i, f"x{i}", 21) for i in range(60, 66)]
    steps: list[dict[str, Any]] = [
        {"columns": "qty", "keys": [7, 14]},
        {"columns": ["qty", "name"], "keys": [(7, "m31"), (21, "x61")], "partitions": ["day=d1"]},
        {"off": True, "partitions": ["day=d0"]},
    ]
    for n, step in enumerate(steps):
        done = {e: t.list_bucket(**step, engine=e) for e, t in tables.items()}
        assert (done["arrow"].engine, done["spark"].engine) == ("arrow", "spark")
        assert done["arrow"].rows_written == done["spark"].rows_written > 0
        assert data_files(roots["arrow"]) == data_files(roots["spark"]), step
        logs = {e: without_run_fields(log_on_disk(store_at(r))) for e, r in roots.items()}
        assert logs["arrow"] == logs["spark"], step
        assert _rows(tables["arrow"], "arrow") == want, step
        if n == 0:  # a load on top: the next re-split reads a split base and a delta
            for table in tables.values():
                table.load(_csv(tmp_path / "d.csv", extra), mode="append", engine="arrow")
            want = sorted(
                want + [(r["id"], r["name"], r["qty"], r["day"]) for r in extra], key=repr
            )
    layout = sorted(str(p.relative_to(roots["arrow"])) for p in roots["arrow"].rglob("bucket_*"))
    assert any("/qty=7/name=m31/bucket_" in p for p in layout), layout
    assert any(f"/{DEFAULT}/{DEFAULT}/bucket_" in p for p in layout), layout
    # The files are equal: the Arrow engine's are read back by both readers, pruned and not.
    for where in (None, "qty = 7", "qty IS NULL"):
        expected = [r for r in want if where is None or _matches(r, where)]
        assert _rows(tables["arrow"], "arrow", where) == expected, where
    assert _rows(tables["arrow"], "spark") == want  # lakectl's data source
    spark.conf.set(DATA_SOURCE, "false")
    try:  # the live-row kernel in Spark tasks
        assert _rows(tables["arrow"], "spark", "qty = 7") == [r for r in want if r[2] == 7]
    finally:
        spark.conf.unset(DATA_SOURCE)


def _matches(row: tuple[Any, ...], where: str) -> bool:
    return row[2] == 7 if where == "qty = 7" else row[2] is None
