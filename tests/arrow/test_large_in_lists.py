"""IN lists of up to 30,000 items (the size the statement limits let through) read by the Arrow
engine as a read's ``where`` and inside Type 7 statements: the same rows as DuckDB, with SQL's
NULL rules (``x IN (1, NULL)`` is unknown where nothing matches, so ``NOT IN`` keeps nothing
there), no crash. The table is a Hive layout written here (no Spark); the crash this guards
against (an OR of 10,000 equalities is a tree as deep as the list: a segmentation fault) is run
in a child process, so a regression fails the test instead of ending the test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.arrow.pushdown import stripe_test
from lakectl.expr import bind_where
from lakectl.table.orc_stats import ColumnStats
from lakectl.table.schema import parse_schema

REPO = Path(__file__).resolve().parents[2]
BUCKET = 536870912  # bucket 0 in Hive's bucket codec
ROWS = 3000
DATA = pa.struct([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
EVENTS = pa.schema(
    [
        ("operation", pa.int32()),
        ("originalTransaction", pa.int64()),
        ("bucket", pa.int32()),
        ("rowId", pa.int64()),
        ("currentTransaction", pa.int64()),
        ("row", DATA),
    ]
)
SCHEMA = parse_schema("id bigint, name string, score double")


def _name(i: int) -> str:
    """A short text key (four base-36 digits), so 30,000 of them fit one statement."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "".join(digits[(i // 36**p) % 36] for p in (3, 2, 1, 0))


def _row(i: int) -> dict[str, Any]:
    """Every 7th id and every 11th name is NULL; ids and names run past the lists' ranges."""
    return {
        "id": None if i % 7 == 3 else i * 3,
        "name": None if i % 11 == 5 else _name(i * 13),
        "score": float(i),
    }


LIVE = [_row(i) for i in range(ROWS)]


def _write_table(root: Path, updates: str | None = None) -> Path:
    events = [
        {
            "operation": 0,
            "originalTransaction": 1,
            "bucket": BUCKET,
            "rowId": i,
            "currentTransaction": 1,
            "row": row,
        }
        for i, row in enumerate(LIVE)
    ]
    path = root / "base_0000001" / "bucket_00000"
    path.parent.mkdir(parents=True)
    orc.write_table(pa.Table.from_pylist(events, schema=EVENTS), str(path), stripe_size=16 * 1024)
    if updates is not None:
        (root / ".updates").write_text(updates)
    return root


def _ints(count: int, null: bool) -> str:
    items = [str(i * 2) for i in range(count)]  # every other multiple of 3 matches, from 0
    if null:
        items.insert(count // 2, "NULL")
    return ", ".join(items)


def _strings(count: int, null: bool) -> str:
    items = [f"'{_name(i * 7)}'" for i in range(count)]
    if null:
        items.insert(count // 3, "NULL")
    return ",".join(items)


def _duckdb(where: str, rows: list[dict[str, Any]]) -> Counter:
    live = pa.Table.from_pylist(rows, schema=pa.schema(list(DATA)))
    with duckdb.connect() as con:  # its own connection, whatever other tests left on the default
        con.register("live", live)
        found = con.sql(f"SELECT * FROM live WHERE {where}").to_arrow_table()
    return Counter(tuple(r.values()) for r in found.to_pylist())


def _conditions(count: int) -> list[str]:
    return [
        f"id IN ({_ints(count, null=False)})",
        f"id NOT IN ({_ints(count, null=False)})",
        f"id IN ({_ints(count, null=True)}) OR score < 10",
        f"id NOT IN ({_ints(count, null=True)})",
        f"name IN ({_strings(count, null=False)})",
        f"NOT (name IN ({_strings(count, null=True)}))",
        f"name NOT IN ({_strings(count, null=False)})",
    ]


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    return _write_table(tmp_path_factory.mktemp("in_lists") / "t")


# Every condition with a short list; the longest lists (the set lookup, not a chain of
# comparisons) with the conditions of each kind of item and of NULL.
@pytest.mark.parametrize(("count", "kinds"), [(1_000, range(7)), (30_000, (0, 3, 6))])
def test_where_in_lists_equal_duckdb(table, count, kinds):
    opened = lakectl.open_table(str(table))
    conditions = _conditions(count)
    for where in [conditions[k] for k in kinds]:
        got = opened.scan(where=where).to_arrow()
        counted = Counter(tuple(r.values()) for r in got.to_pylist())
        assert counted == _duckdb(where, LIVE), where[:60]
        assert counted or "NULL" in where  # the data hold matches, but NOT (.. NULL) none


@pytest.mark.parametrize("count", [30_000])
def test_statements_with_in_lists_equal_duckdb(tmp_path, count):
    deleted = f"id IN ({_ints(count, null=True)})"
    renamed = f"name NOT IN ({_strings(count, null=False)})"
    updates = (
        f"UPDATE t SET score = -1 WHERE {renamed};\n"
        f"DELETE FROM t WHERE {deleted};\n"
        f"DELETE FROM t WHERE name IN ({_strings(count, null=True)}) AND score > 2000;\n"
    )
    root = _write_table(tmp_path / "t", updates)
    got = lakectl.open_table(str(root)).scan().to_arrow()
    live = pa.Table.from_pylist(LIVE, schema=pa.schema(list(DATA)))  # noqa: F841 (DuckDB's)
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t AS SELECT * FROM live")
    for statement in updates.strip().split(";\n"):
        duck.execute(statement.rstrip(";"))
    want = Counter(duck.sql("SELECT id, name, score FROM t").fetchall())
    assert Counter(tuple(r.values()) for r in got.to_pylist()) == want
    assert len(want) < len(LIVE)


def test_a_10000_item_where_through_the_cli_does_not_crash(table):
    where = f"id NOT IN ({_ints(10_000, null=False)}) AND score > 5"  # one argument: < 128 KB
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "lakectl",
            "snapshot",
            str(table),
            "--engine",
            "arrow",
            "--where",
            where,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    rows = json.loads(run.stdout)["rows"]
    assert Counter((r["id"], r["name"], r["score"]) for r in rows) == _duckdb(where, LIVE)


def test_stripe_test_of_a_large_in_list_keeps_exactly_the_stripes_in_range():
    items = ", ".join(str(v) for v in range(50_000, 80_000))
    test = stripe_test(bind_where(f"id IN ({items})", SCHEMA), SCHEMA)
    assert test is not None

    def stats(low: int, high: int) -> dict[str, ColumnStats | None]:
        return {"id": ColumnStats(values=10, minimum=low, maximum=high)}

    assert test(stats(0, 49_999)) is False
    assert test(stats(0, 50_000)) is True
    assert test(stats(79_999, 90_000)) is True
    assert test(stats(80_000, 90_000)) is False
    assert test(stats(60_000, 60_001)) is True
