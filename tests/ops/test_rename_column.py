"""``lakectl alter --rename-column``: stored files keep their old field names and every reader
matches a file's ``row`` fields by position, so a renamed column reads its old values under the
new name, and a column added later under the old name reads its default, not the old values.
Checked against DuckDB applying the same DDL and DML, in both engines and at every version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lakectl
from tests.support.cli import run_lakectl_until_crash
from tests.support.processes import run_crashing

SCHEMA = "id bigint, qty int, note string, day string"


def _log_size(path: Path) -> int:
    return len(list((path / "_lakectl" / "log").glob("*.json")))


def _normal(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=repr)


def _spark_rows(table: lakectl.Table, columns: list[str], **read: Any) -> list[tuple[Any, ...]]:
    return _normal([tuple(r[c] for c in columns) for r in table.scan(**read).to_spark().collect()])


def _arrow_rows(table: lakectl.Table, columns: list[str], **read: Any) -> list[tuple[Any, ...]]:
    return _normal(
        [tuple(r[c] for c in columns) for r in table.scan(**read).to_arrow().to_pylist()]
    )


# --- checks without Spark -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rename-column", "day=date"], "partition column cannot be renamed"),
        (["--rename-column", "nope=x"], "no such column"),
        (["--rename-column", "qty=note"], "already has a column 'note'"),
        (["--rename-column", "qty=DAY"], "already has a column 'day'"),
        (["--rename-column", "qty"], "expected OLD=NEW"),
        (["--rename-column", "qty="], "expected OLD=NEW"),
        (["--rename-column", "qty=1x"], "invalid column name"),
        (["--rename-column", "qty=qty"], "already has that name"),
        (["--rename-column", "qty=a", "--rename-column", "note=a"], "already has a column 'a'"),
    ],
)
def test_bad_renames_are_clear_errors_that_write_nothing(tmp_path, lakectl_cli, args, message):
    path = tmp_path / "t"
    made = lakectl_cli("create", path, "--schema", SCHEMA, "--partition-by", "day")
    assert made.code == 0, made.err
    run = lakectl_cli("--json", "alter", path, *args)
    assert run.code == 2, run.out
    assert message in json.loads(run.out)["error"]["message"]
    assert _log_size(path) == 1
    assert "Traceback" not in run.out + run.err


def test_a_rename_renames_the_key_and_reports_itself(tmp_path, lakectl_cli):
    path = tmp_path / "t"
    made = lakectl_cli("create", path, "--schema", SCHEMA, "--primary-key", "id")
    assert made.code == 0, made.err
    run = lakectl_cli(
        "--json", "alter", path, "--rename-column", "id=sell_id", "--rename-column", "qty=amount"
    )
    assert run.code == 0, run.out
    assert run.json["renamed"] == ["id -> sell_id", "qty -> amount"]
    assert [c["name"] for c in run.json["schema"]] == ["sell_id", "amount", "note", "day"]
    assert lakectl.open_table(str(path)).primary_key == ("sell_id",)
    human = lakectl_cli("alter", path, "--rename-column", "note=remark")
    assert human.code == 0 and "renamed note -> remark" in human.out


# --- reads against DuckDB -----------------------------------------------------------------


def test_renames_read_like_duckdb_at_every_version(tmp_path, spark):
    """Rename ``qty``, then add a new ``qty``: old files must not give it their values."""
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id BIGINT, qty INTEGER, note VARCHAR, day VARCHAR)")
    seen: dict[int, tuple[list[str], list[tuple[Any, ...]]]] = {}

    def load(rows: list[tuple[Any, ...]], mode: str = "append") -> None:
        names = [c.name for c in table.schema.columns]
        ddl = ", ".join(f"{c.name} {c.type}" for c in table.schema.columns)
        table.load(spark.createDataFrame(rows, ddl), mode=mode)
        order = ", ".join(names)
        ids = ", ".join(str(r[0]) for r in rows)
        duck.execute(f"DELETE FROM t WHERE id IN ({ids})")
        duck.executemany(f"INSERT INTO t ({order}) VALUES ({', '.join('?' * len(names))})", rows)
        remember()

    def remember() -> None:
        names = [c.name for c in table.schema.columns]
        seen[table.version] = (
            names,
            _normal(duck.execute(f"SELECT {', '.join(names)} FROM t").fetchall()),
        )

    load([(1, 10, "a", "d1"), (2, 20, "b", "d2"), (3, 30, None, "d1")])
    table.alter(rename="qty=quantity")
    duck.execute("ALTER TABLE t RENAME COLUMN qty TO quantity")
    load([(4, 40, "c", "d2")])
    table.alter("qty int default 3")  # the old name again, a new column
    duck.execute("ALTER TABLE t ADD COLUMN qty INTEGER DEFAULT 3")
    load([(5, 50, "e", 7, "d1")])
    table.delete("quantity < 15")
    duck.execute("DELETE FROM t WHERE quantity < 15")
    remember()
    table.update_rows("qty = quantity + 1", "day = 'd2'")
    duck.execute("UPDATE t SET qty = quantity + 1 WHERE day = 'd2'")
    remember()
    load([(3, 33, "z", None, "d1")], mode="upsert")
    table.alter(rename=["quantity=qty_old", "note=remark"])  # two at once
    duck.execute("ALTER TABLE t RENAME COLUMN quantity TO qty_old")
    duck.execute("ALTER TABLE t RENAME COLUMN note TO remark")
    latest = ["id", "qty_old", "remark", "qty", "day"]
    expected_now = _normal(duck.execute(f"SELECT {', '.join(latest)} FROM t").fetchall())

    for version, (columns, expected) in seen.items():
        assert table.scan(version=version).to_spark().columns == columns, version
        assert _spark_rows(table, columns, version=version) == expected, version
        assert _arrow_rows(table, columns, version=version) == expected, version
    assert table.scan().to_spark().columns == latest
    assert _spark_rows(table, latest) == expected_now
    assert _arrow_rows(table, latest) == expected_now
    spark.conf.set("spark.lakectl.read.native", "false")  # the kernel path too
    try:
        assert _spark_rows(table, latest) == expected_now
        assert _spark_rows(table, seen[2][0], version=2) == seen[2][1]
    finally:
        spark.conf.unset("spark.lakectl.read.native")
    where = table.scan(columns=["id", "qty"], where="qty_old >= 30").to_arrow().to_pylist()
    assert sorted((r["id"], r["qty"]) for r in where) == [(3, None), (4, 41), (5, 7)]


@pytest.fixture
def renamed(tmp_path, spark):
    """A table loaded before and after renaming ``qty`` to ``quantity`` (bucketed by key)."""
    table = lakectl.create_table(
        str(tmp_path / "r"), schema=SCHEMA, primary_key="id", partition_by="day", buckets=2
    )
    ddl = "id bigint, qty int, note string, day string"
    table.load(spark.createDataFrame([(1, 5, "x", "a"), (2, 6, "y", "b"), (3, 7, "z", "a")], ddl))
    table.alter(rename="qty=quantity")
    ddl = "id bigint, quantity int, note string, day string"
    table.load(spark.createDataFrame([(4, 8, "w", "b"), (1, 9, "x2", "a")], ddl), mode="upsert")
    return table


RENAMED_ROWS = [(1, 9, "x2", "a"), (2, 6, "y", "b"), (3, 7, "z", "a"), (4, 8, "w", "b")]
COLUMNS = ["id", "quantity", "note", "day"]


def test_compaction_restore_and_change_feed_across_a_rename(renamed, lakectl_cli, spark):
    # the change feed from before the rename: pre-images under the new name, both engines
    columns = ("id", "quantity", "_change_type")
    expected = [(1, 5, "update_preimage"), (1, 9, "update_postimage"), (4, 8, "insert")]
    feed = renamed.changes(from_version=1).to_spark().collect()
    assert sorted(tuple(r[c] for c in columns) for r in feed) == expected
    arrow_feed = renamed.changes(from_version=1).to_arrow().to_pylist()
    assert sorted(tuple(r[c] for c in columns) for r in arrow_feed) == expected
    # compaction (the bucketed minor one merges with pyarrow) writes the new names
    for kind in ("minor", "major"):
        run = lakectl_cli("--json", "compact", renamed.location, f"--{kind}")
        assert run.code == 0, run.out
        assert _spark_rows(renamed, COLUMNS) == RENAMED_ROWS, kind
        assert _arrow_rows(renamed, COLUMNS) == RENAMED_ROWS, kind
    import pyarrow.orc as orc

    root = Path(renamed.location.removeprefix("file://"))
    for path in root.glob("day=*/base_*/bucket_*"):
        row = orc.ORCFile(str(path)).schema.field("row").type
        assert [row.field(i).name for i in range(row.num_fields)] == ["id", "quantity", "note"]
    # the version before the rename reads with the old name
    old = ["id", "qty", "note", "day"]
    assert _spark_rows(renamed, old, version=1) == [
        (1, 5, "x", "a"),
        (2, 6, "y", "b"),
        (3, 7, "z", "a"),
    ]
    # restoring it keeps today's names (the restore is a data change, not a schema change)
    result = renamed.restore(version=1)
    assert result.method == "full"
    restored = [(1, 5, "x", "a"), (2, 6, "y", "b"), (3, 7, "z", "a")]
    assert _spark_rows(renamed, COLUMNS) == restored
    assert _arrow_rows(renamed, COLUMNS) == restored
    # the renamed key still finds stored rows: an upsert replaces, it does not duplicate
    ddl = "id bigint, quantity int, note string, day string"
    renamed.load(spark.createDataFrame([(2, 60, "y2", "b")], ddl), mode="upsert")
    assert _spark_rows(renamed, COLUMNS) == [(1, 5, "x", "a"), (2, 60, "y2", "b"), (3, 7, "z", "a")]


# --- what names columns besides the schema -------------------------------------------------


def test_statements_naming_the_column_block_the_rename_until_materialized(
    renamed, tmp_path, lakectl_cli
):
    statements = tmp_path / "fix.updates"
    statements.write_text("-- time=2020-01-01\nUPDATE t SET note = 'fixed' WHERE quantity = 6;\n")
    renamed.apply_updates(str(statements))
    root = Path(renamed.location.removeprefix("file://"))
    before = _log_size(root)
    for args in (["quantity=qty"], ["note=remark"]):
        run = lakectl_cli("--json", "alter", renamed.location, "--rename-column", *args)
        assert run.code == 2, run.out
        assert "names a column by its old name" in run.json["error"]["message"]
        assert "materialize" in run.json["error"]["hint"]
    assert _log_size(root) == before
    # a column the statement does not name renames fine, and the statement still applies
    assert lakectl_cli("alter", renamed.location, "--rename-column", "id=key").code == 0
    fixed = [(1, 9, "x2", "a"), (2, 6, "fixed", "b"), (3, 7, "z", "a"), (4, 8, "w", "b")]
    keyed = ["key", "quantity", "note", "day"]
    assert _spark_rows(renamed, keyed) == fixed
    assert _arrow_rows(renamed, keyed) == fixed
    materialized = renamed.version
    renamed.materialize(until="2021-01-01")
    assert lakectl_cli("alter", renamed.location, "--rename-column", "note=remark").code == 0
    assert _spark_rows(renamed, ["key", "quantity", "remark", "day"]) == fixed
    # a restore that would make the statement active again under the old name is refused
    before = _log_size(root)
    run = lakectl_cli("--json", "restore", renamed.location, "--version", str(materialized))
    assert run.code == 2, run.out
    assert "would make statement 1" in run.json["error"]["message"]
    assert _log_size(root) == before


def test_a_list_bucketed_column_is_not_renamed_until_the_layout_is_off(
    tmp_path, spark, lakectl_cli
):
    table = lakectl.create_table(str(tmp_path / "lb"), schema=SCHEMA, partition_by="day")
    rows = [(i, i % 3, f"n{i}", "d1") for i in range(12)]
    table.load(spark.createDataFrame(rows, "id bigint, qty int, note string, day string"))
    table.list_bucket("qty", keys=[1])
    root = tmp_path / "lb"
    before = _log_size(root)
    run = lakectl_cli("--json", "alter", table.location, "--rename-column", "qty=quantity")
    assert run.code == 2 and "list-bucketed" in run.json["error"]["message"], run.out
    assert _log_size(root) == before
    # another column renames, and pruned reads of the list-bucketed one stay right
    assert lakectl_cli("alter", table.location, "--rename-column", "note=label").code == 0
    pruned = table.scan(where="qty = 1").to_spark().collect()
    assert sorted((r["id"], r["label"]) for r in pruned) == [(i, f"n{i}") for i in (1, 4, 7, 10)]
    table.list_bucket(off=True)
    assert lakectl_cli("alter", table.location, "--rename-column", "qty=quantity").code == 0
    assert sorted(r["id"] for r in table.scan(where="quantity = 1").to_spark().collect()) == [
        1,
        4,
        7,
        10,
    ]


def test_renames_apply_in_order_so_two_names_can_swap():
    from lakectl.table.evolution import SchemaChange, changed_columns, evolve
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.schema import parse_schema

    meta = TableMetadata(parse_schema("a int, b string, k bigint"), primary_key=("k",))
    swapped = evolve(meta, SchemaChange(rename=("a=tmp", "b=a", "tmp=b")))
    assert [(c.name, c.type) for c in swapped.schema.columns] == [
        ("b", "int"),
        ("a", "string"),
        ("k", "bigint"),
    ]
    assert changed_columns(meta, swapped)["renamed"] == ["a -> b", "b -> a"]
    assert swapped.primary_key == ("k",)


def test_a_killed_alter_changes_nothing_and_a_rerun_completes(tmp_path, lakectl_cli):
    path = tmp_path / "k"
    assert lakectl_cli("create", path, "--schema", SCHEMA).code == 0
    args = ("alter", path, "--rename-column", "qty=quantity", "--add-column", "x int default 1")
    killed = run_crashing(*args, failpoint="store.before_commit")  # a real kill, no JVM
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert _log_size(path) == 1
    assert [c.name for c in lakectl.open_table(str(path)).schema.columns] == SCHEMA_NAMES
    assert lakectl_cli(*args).code == 0
    names = [c.name for c in lakectl.open_table(str(path)).schema.columns]
    assert names == ["id", "quantity", "note", "day", "x"]


SCHEMA_NAMES = ["id", "qty", "note", "day"]


def test_a_load_evolve_killed_before_its_commit_leaves_the_old_schema_and_a_rerun_completes(
    tmp_path, lakectl_cli, spark
):
    path = tmp_path / "e"
    table = lakectl.create_table(str(path), schema=SCHEMA)
    batch = tmp_path / "batch.parquet"
    spark.createDataFrame(
        [(1, 2, "a", "d", "web")], "id bigint, qty int, note string, day string, channel string"
    ).write.parquet(str(batch))
    # stopped in this process as a kill would stop it (no abort runs)
    killed = run_lakectl_until_crash(
        "load", path, batch, "--evolve", failpoint="load.before_commit"
    )
    assert killed.code == 137, killed.err[-2000:]
    # the schema change commits with the rows: neither landed
    assert [c.name for c in table.schema.columns] == SCHEMA_NAMES
    assert table.scan().to_spark().count() == 0
    rerun = lakectl_cli("--json", "load", path, batch, "--evolve")
    assert rerun.code == 0, rerun.out
    assert rerun.json["evolved"] == ["channel"]
    table.refresh()  # the rerun committed in another command
    assert [tuple(r) for r in table.scan().to_spark().collect()] == [(1, 2, "a", "d", "web")]
