"""One-off DELETE and UPDATE (``lakectl delete`` / ``lakectl update`` / ``Table.delete`` /
``Table.update``) against DuckDB applying the same SQL to the same rows."""

from __future__ import annotations

import json
import random
import shutil
from typing import Any

import duckdb
import pytest

import lakectl
from tests.support.cli import run_lakectl_until_crash

SCHEMA = "id bigint, amount double, status string, qty int, day string"
COLUMNS = ("id", "amount", "status", "qty", "day")
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
STATUSES = ("NEW", "PAID", "VOID", None)


def _rows(n: int, seed: int) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    return [
        (
            i,
            round(rng.uniform(-50, 500), 2),
            rng.choice(STATUSES),
            rng.randint(0, 9),
            rng.choice(DAYS),
        )
        for i in range(n)
    ]


def _table_rows(table: lakectl.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.scan().to_spark().collect())


def _oracle(rows: list[tuple[Any, ...]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t (id BIGINT, amount DOUBLE, status VARCHAR, qty INTEGER, day VARCHAR)"
    )
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    return con


def _oracle_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return sorted(con.execute(f"SELECT {', '.join(COLUMNS)} FROM t").fetchall())


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    rows = _rows(300, seed=7)
    path = tmp_path_factory.mktemp("dml") / "orders"
    table = lakectl.create_table(str(path), schema=SCHEMA, primary_key="id", partition_by="day")
    table.load(spark.createDataFrame(rows, SCHEMA))
    return path, rows


@pytest.fixture
def loaded(built, tmp_path):
    """A copy of the loaded table for one test to change."""
    source, rows = built
    shutil.copytree(source, tmp_path / "orders")
    return lakectl.open_table(str(tmp_path / "orders")), rows


# (kind, where, set): SQL both engines read alike.
STEPS = [
    ("delete", "status = 'VOID'", None),
    ("update", "amount < 0", "amount = 0, status = 'FIXED'"),
    ("delete", "day = '2024-01-02' AND qty > 6", None),
    ("update", "status IS NULL", "status = 'UNKNOWN'"),
    ("update", None, "qty = qty + 1"),
    (
        "delete",
        "id IN (1, 2, 3, 250) OR (amount BETWEEN 100 AND 120 AND day <> '2024-01-03')",
        None,
    ),
    (
        "update",
        "day = '2024-01-01' AND status LIKE 'P%'",
        "amount = amount * 2, qty = CASE WHEN qty > 5 THEN 0 ELSE qty END",
    ),
]


def test_a_sequence_of_deletes_and_updates_equals_duckdb(loaded) -> None:
    table, rows = loaded
    con = _oracle(rows)
    versions = {table.version: _oracle_rows(con)}
    for kind, where, assignments in STEPS:
        if kind == "delete":
            expected = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
            result = table.delete(where)
            con.execute(f"DELETE FROM t WHERE {where}")
            assert result.deleted == expected
        else:
            sql = f"UPDATE t SET {assignments}" + (f" WHERE {where}" if where else "")
            result = table.update_rows(assignments, where)
            con.execute(sql)
        assert _table_rows(table) == _oracle_rows(con), (kind, where, assignments)
        if result.version is not None:
            versions[result.version] = _oracle_rows(con)
    for version, expected_rows in versions.items():  # every version by time travel
        got = sorted(
            tuple(r[c] for c in COLUMNS) for r in table.scan(version=version).to_spark().collect()
        )
        assert got == expected_rows, version


def test_update_counts_only_rows_it_changes(loaded) -> None:
    table, rows = loaded
    paid = sum(1 for r in rows if r[2] == "PAID")
    result = table.update_rows("status = 'PAID'", "status = 'PAID' OR id = 0")
    changed = 0 if rows[0][2] == "PAID" else 1
    assert (result.updated, result.deleted) == (changed, 0)
    assert sum(1 for r in _table_rows(table) if r[2] == "PAID") == paid + changed


def test_dry_run_counts_per_partition_and_writes_nothing(loaded, tmp_path) -> None:
    table, rows = loaded
    before = (table.version, len(table.history()), _table_rows(table))
    result = table.delete("qty >= 5", dry_run=True)
    expected: dict[str, int] = {}
    for r in rows:
        if r[3] >= 5:
            expected[f"day={r[4]}"] = expected.get(f"day={r[4]}", 0) + 1
    assert {p.partition: p.deleted for p in result.partitions} == expected
    assert result.deleted == sum(expected.values()) and result.version is None
    assert (table.version, len(table.history()), _table_rows(table)) == before


def test_where_on_the_partition_column_prunes(loaded) -> None:
    table, rows = loaded
    result = table.delete("day = '2024-01-03' AND status = 'NEW'")
    assert (result.partitions_read, result.partitions_total) == (1, 3)
    assert result.deleted == sum(1 for r in rows if r[4] == "2024-01-03" and r[2] == "NEW")
    assert table.history()[-1].operation == "delete"


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("delete", "reflect('java.lang.Runtime', 'getRuntime') IS NOT NULL"),
        ("delete", "id IN (SELECT id FROM other)"),
        ("delete", "id = 1; DROP TABLE t"),
        ("delete", "nope = 1"),
        ("delete", "rand() < 0.5"),
        ("update", "java_method('java.lang.System', 'exit', 1) = 1"),
        ("update", "${spark.home} = 1"),
    ],
)
def test_forbidden_constructs_are_refused_and_nothing_is_written(loaded, kind, text) -> None:
    table, _ = loaded
    before = (table.version, len(table.history()))
    with pytest.raises(lakectl.LakectlError):
        if kind == "delete":
            table.delete(text)
        else:
            table.update_rows("status = 'X'", text)
    assert (table.version, len(table.history())) == before


def test_cli_json_and_usage_errors(loaded, lakectl_cli) -> None:
    table, _ = loaded
    run = lakectl_cli("delete", table.location, "--where", "id < 10", "--json")
    assert run.code == 0, run.err
    assert run.json["counts"] == {"deleted": 10, "updated": 0}
    assert run.json["version"] == table.version
    none = lakectl_cli("update", table.location, "--set", "qty = 1", "--where", "id < 0", "--json")
    assert none.code == 0 and none.json["version"] is None and none.json["counts"]["updated"] == 0
    bad = lakectl_cli("delete", table.location, "--where", "   ", "--json")
    assert bad.code == 2 and "delete needs --where" in bad.json["error"]["message"]
    refused = lakectl_cli("update", table.location, "--set", "nope = 1", "--json")
    assert refused.code == 65, refused.out
    assert "error" in refused.json


def test_a_killed_delete_leaves_the_table_as_it_was_and_a_rerun_completes(loaded) -> None:
    """Stopped in this process as a kill would stop it (no abort runs); a real kill of this
    write protocol: test_crash_and_concurrency."""
    table, _ = loaded
    before = (table.version, _table_rows(table))
    killed = run_lakectl_until_crash(
        "delete", table.location, "--where", "qty = 3", "--json", failpoint="dml.before_commit"
    )
    assert killed.code == 137, killed.err[-2000:]
    table.refresh()  # what the killed writer left
    assert (table.version, _table_rows(table)) == before
    done = table.delete("qty = 3")
    assert done.deleted == sum(1 for r in before[1] if r[3] == 3)
    assert done.version == before[0] + 2  # the killed writer's write id stays unused
    assert all(r[3] != 3 for r in _table_rows(table))
    assert json.loads(json.dumps(done.to_dict()))["counts"]["deleted"] == done.deleted
