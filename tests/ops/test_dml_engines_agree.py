"""``delete``, ``update`` and ``restore`` give the same table in both engines: the same random
steps on two copies of a table, one through Spark and one through the Arrow engine, leave the
same results, the same rows at every version, the same log records (times aside) and the same
files (the same directories and file names; the same rows in each insert file and the same
number of delete events in each delete file). An integer overflow in a --set value fails alike.

Without Spark, against DuckDB, with crashes: tests/arrow/test_arrow_row_writes.py.
"""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.orc as orc
import pytest

import lakectl
from tests.arrow.test_arrow_row_writes import COLUMNS, FIRST, SCHEMA, SECOND, run_step
from tests.support.arrow_tables import append_rows, table_store
from tests.support.cli import run_lakectl

ENGINES = ("spark", "arrow")


def random_steps(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    """``count`` deletes, updates and restores (the first one a delete or an update)."""
    steps: list[tuple[Any, ...]] = []
    for n in range(count):
        kind = rng.choice(("delete", "update", "update", "restore") if n else ("delete",))
        k = rng.randrange(5)
        if kind == "delete":
            where = rng.choice(
                (f"qty = {k}", f"amt > {k * 10}", "day IS NULL", f"id % 5 = {k}", "tag = 't2'")
            )
            steps.append(("delete", where, None))
        elif kind == "update":
            text, where = rng.choice(
                (
                    ("amt = amt + 1", f"qty = {k}"),
                    ("tag = 'z', qty = qty * 2", f"id % 3 = {k % 3}"),
                    (f"day = 'd{k}'", f"id < {k * 6 + 3}"),
                    ("amt = NULL, qty = 0", "day IS NULL OR id > 30"),
                )
            )
            steps.append(("update", text, where))
        else:
            steps.append(("restore", rng.randrange(1, 3)))  # each table's two loads
    return steps


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dml_engines")
    for name, partition_by, buckets in (("parted", "day", 0), ("bucketed", None, 3)):
        lakectl.create_table(
            str(root / name),
            schema=SCHEMA,
            primary_key="id",
            partition_by=partition_by,
            buckets=buckets,
        )
        append_rows(root / name, FIRST)
        append_rows(root / name, SECOND)
    return root


def _result(result: Any) -> dict[str, Any]:
    """A result as both engines must give it: the table's path, the time, the engine, its
    memory and the bytes a restore read (the files the engines wrote before differ in size,
    not in content) aside."""
    data = result.to_dict()
    for key in ("table", "seconds", "engine", "engine_reason"):
        data.pop(key)
    data.pop("peak_memory_bytes", None)
    if "read" in data:
        data["read"].pop("bytes")
    return data


def _rows(path: Path, version: int) -> list[tuple[Any, ...]]:
    data = lakectl.open_table(str(path)).scan(version=version).to_arrow()
    return sorted((tuple(r[c] for c in COLUMNS) for r in data.to_pylist()), key=repr)


def _records(path: Path) -> list[dict[str, Any]]:
    records = []
    for record in table_store(path).read_state().records:
        data = record.to_json()
        data.pop("committed_at")
        records.append(data)
    return records


def _files(path: Path) -> dict[str, Any]:
    """Each data file: the rows of an insert file (a multiset; the order within a file is the
    writer's), the number of events of a delete file; other files by name."""
    out: dict[str, Any] = {}
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path).as_posix()
        if not f.is_file() or rel.startswith("_lakectl") or f.name.startswith("."):
            continue
        if not f.name.startswith("bucket_"):
            out[rel] = None
            continue
        events = orc.read_table(str(f))
        if "/delete_delta_" in f"/{rel}":
            out[rel] = events.num_rows
        else:
            rows = events.column("row").to_pylist()
            out[rel] = Counter(tuple(sorted(r.items())) for r in rows)
    return out


# After a schema change a restore compares the whole tables (its other method).
ACROSS_A_SCHEMA_CHANGE = [("alter", "note string default 'n'", "qty bigint"), ("restore", 2)]


@pytest.mark.parametrize(
    ("layout", "seed", "count", "then"),
    [("parted", 22, 4, []), ("bucketed", 16, 3, ACROSS_A_SCHEMA_CHANGE)],
)
def test_random_steps_leave_the_same_table_in_both_engines(
    spark, built, tmp_path, layout, seed, count, then
) -> None:
    paths = {e: tmp_path / e for e in ENGINES}
    for path in paths.values():
        shutil.copytree(built / layout, path)
    tables = {e: lakectl.open_table(str(p), spark=spark) for e, p in paths.items()}
    steps = random_steps(random.Random(seed), count) + then
    for step in steps:
        if step[0] == "alter":
            for table in tables.values():
                table.alter(step[1], widen=step[2])
            continue
        results = {e: run_step(tables[e], step, e) for e in ENGINES}
        assert results["arrow"].engine == "arrow" and results["spark"].engine == "spark"
        assert _result(results["arrow"]) == _result(results["spark"]), step
    if then:
        assert results["arrow"].method == "full"
    last = table_store(paths["spark"]).read_state().max_write_id
    for version in range(1, last + 1):
        assert _rows(paths["arrow"], version) == _rows(paths["spark"], version), version
    assert _records(paths["arrow"]) == _records(paths["spark"])
    assert _files(paths["arrow"]) == _files(paths["spark"])


def test_an_overflowing_set_value_fails_alike(spark, built) -> None:
    path = built / "parted"
    args = ("update", path, "--set", "qty = qty * 2000000000", "--where", "qty > 1")
    runs = [run_lakectl(*args, "--engine", e) for e in ENGINES]
    assert runs[0].code == 65, runs[0].err
    assert "integer overflow" in runs[0].err
    assert (runs[1].code, runs[1].err) == (runs[0].code, runs[0].err)
