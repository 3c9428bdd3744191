"""Schema evolution (``lakectl alter``, ``load --evolve``): added columns with defaults,
widened types, time travel to the old schema, and every reader, compaction and Type 7
statement on evolved tables, against DuckDB applying the same DDL and DML to the same rows."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lakectl
from lakectl.ops.context import Context
from lakectl.table.evolution import SchemaChange, evolve, is_widening, written_schemas
from tests.support.arrow_loads import load_rows

SCHEMA = "id bigint, qty int, price float, amount decimal(8,2), day string"
DUCK_SCHEMA = "id BIGINT, qty INTEGER, price FLOAT, amount DECIMAL(8,2), day VARCHAR"
DAYS = ("d1", "d2", "d3")


def _log_size(path: Path) -> int:
    return len(list((path / "_lakectl" / "log").glob("*.json")))


def _create(lakectl_cli: Any, path: Path) -> None:
    run = lakectl_cli(
        "create", path, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "day"
    )
    assert run.code == 0, run.err


# --- checks without Spark -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--add-column", "qty bigint"], "already has a column 'qty'"),
        (["--add-column", "DAY string"], "already has a column 'day'"),
        (["--add-column", "x money"], "unsupported column type"),
        (["--add-column", "x int not null"], "NOT NULL column needs a default"),
        (["--add-column", "x int default abc"], "not a int value"),
        (["--add-column", "x tinyint default 300"], "not a tinyint value"),
        (["--add-column", "x decimal(3,1) default 123.4"], "not a decimal(3,1) value"),
        (["--add-column", "x date default 2024-13-01"], "not a date value"),
        (["--add-column", "x int", "--add-column", "X string"], "already has a column 'x'"),
        (["--add-column", "1x int"], "invalid column name"),
        (["--widen", "qty smallint"], "is not a widening"),
        (["--widen", "qty string"], "is not a widening"),
        (["--widen", "price decimal(10,2)"], "is not a widening"),
        (["--widen", "amount decimal(10,3)"], "is not a widening"),
        (["--widen", "day bigint"], "partition column"),
        (["--widen", "nope bigint"], "no such column"),
        ([], "nothing to change"),
    ],
)
def test_bad_alter_is_a_clear_error_that_writes_nothing(tmp_path, lakectl_cli, args, message):
    path = tmp_path / "t"
    _create(lakectl_cli, path)
    before = _log_size(path)
    run = lakectl_cli("--json", "alter", path, *args)
    assert run.code == 2, run.out
    error = json.loads(run.out)["error"]
    assert message in error["message"]
    assert _log_size(path) == before
    assert "Traceback" not in run.out + run.err


def test_alter_commits_one_schema_record_and_reports_it(tmp_path, lakectl_cli):
    path = tmp_path / "t"
    _create(lakectl_cli, path)
    run = lakectl_cli(
        "--json",
        "alter",
        path,
        "--add-column",
        "discount decimal(5,2) default 1.5",
        "--add-column",
        "note string not null default 'n/a, none'",
        "--widen",
        "qty bigint",
        "--widen",
        "price double",
    )
    assert run.code == 0, run.err
    result = run.json
    assert result["added"] == ["discount", "note"]
    assert result["widened"] == ["qty int -> bigint", "price float -> double"]
    names = [c["name"] for c in result["schema"]]
    assert names == ["id", "qty", "price", "amount", "discount", "note", "day"]
    assert result["schema"][-2] == {
        "name": "note",
        "type": "string",
        "nullable": False,
        "default": "n/a, none",
    }
    records = Context().table(str(path)).read_state().records
    assert [r.operation for r in records] == ["create", "alter"]
    assert records[-1].metadata is not None
    assert records[-1].metadata.schema["qty"].type == "bigint"
    human = lakectl_cli("alter", path, "--add-column", "extra int")
    assert human.code == 0 and "added extra int" in human.out


def test_the_key_of_a_bucketed_table_is_not_widened(tmp_path, lakectl_cli):
    path = tmp_path / "b"
    made = lakectl_cli(
        "create", path, "--schema", "id int, v string", "--primary-key", "id", "--buckets", "4"
    )
    assert made.code == 0, made.err
    run = lakectl_cli("--json", "alter", path, "--widen", "id bigint")
    assert run.code == 2 and "bucketed table" in run.json["error"]["message"]
    assert _log_size(path) == 1


def test_widening_rules():
    assert is_widening("int", "bigint") and is_widening("tinyint", "int")
    assert is_widening("float", "double") and is_widening("decimal(8,2)", "decimal(12,2)")
    assert not is_widening("bigint", "int") and not is_widening("int", "double")
    assert not is_widening("decimal(8,2)", "decimal(9,3)") and not is_widening("int", "int")


def test_directories_keep_the_schema_their_writer_read():
    """A writer that read the table before an alter wrote the old columns, whenever it commits."""
    from lakectl.table.log import CommitRecord, TableState
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.schema import parse_schema

    old = TableMetadata(parse_schema("id bigint, qty int"))
    new = evolve(old, SchemaChange(add_columns=("x double default 0",), widen=("qty bigint",)))

    def record(seq: int, op: str, **kw: Any) -> CommitRecord:
        return CommitRecord(seq=seq, operation=op, committed_at=seq, **kw)

    state = TableState(
        (
            record(0, "create", metadata=old),
            record(1, "append", write_id=1, read_seq=0, added=("delta_1",)),
            record(2, "alter", read_seq=1, metadata=new),
            record(3, "append", write_id=2, read_seq=1, added=("delta_2",)),  # read before
            record(4, "append", write_id=3, read_seq=3, added=("delta_3",)),
        )
    )
    assert written_schemas(state) == {"delta_1": old.schema, "delta_2": old.schema}
    assert written_schemas(state.prefix(1)) == {}


# --- reads, writes and the oracle --------------------------------------------------------


class Oracle:
    """DuckDB holding what the table should read, one snapshot per version."""

    def __init__(self) -> None:
        self.con = duckdb.connect()
        self.con.execute(f"CREATE TABLE t ({DUCK_SCHEMA})")
        self.columns = ["id", "qty", "price", "amount", "day"]

    def rows(self) -> list[tuple[Any, ...]]:
        return _normal(self.con.execute(f"SELECT {', '.join(self.columns)} FROM t").fetchall())


def _normal(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples (floats rounded: FLOAT columns pass through doubles)."""
    out = []
    for row in rows:
        values = tuple(row)
        out.append(tuple(round(v, 3) if isinstance(v, float) else v for v in values))
    return sorted(out, key=repr)


def _spark_rows(table: lakectl.Table, columns: list[str], **read: Any) -> list[tuple[Any, ...]]:
    frame = table.scan(**read).to_spark()
    return _normal([tuple(r[c] for c in columns) for r in frame.collect()])


def _arrow_rows(table: lakectl.Table, columns: list[str], **read: Any) -> list[tuple[Any, ...]]:
    data = table.scan(**read).to_arrow().to_pylist()
    return _normal([tuple(r[c] for c in columns) for r in data])


def test_random_history_matches_duckdb_at_every_version(tmp_path, spark):
    """Loads, added columns with defaults, widenings, deletes, updates and restores; each
    version read by time travel (both engines) equals DuckDB's state at that point. DuckDB
    restores by reloading its copy of the version: columns added since take their default."""
    rng = random.Random(22)
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    oracle = Oracle()
    seen: dict[int, tuple[list[str], list[tuple[Any, ...]]]] = {}
    next_id = 0
    added = 0
    widened: set[str] = set()
    steps = ["load", "add", "widen", "load", "delete", "restore", "add", "update", "load"]
    steps += ["restore", "load"]
    for step_index, step in enumerate(steps):
        meta = table.schema
        if step == "load":
            rows = []
            for _ in range(rng.randint(5, 15)):
                row = {
                    "id": next_id,
                    "qty": rng.randint(-5, 50),
                    "price": rng.choice([None, 1.5, 2.25, 10.0]),
                    "amount": Decimal(f"{rng.uniform(0, 900):.2f}"),
                    "day": DAYS[next_id % len(DAYS)],  # a key never changes partition
                }
                for extra in oracle.columns[5:]:
                    row[extra] = rng.choice([None, rng.randint(0, 99)])
                next_id += 1
                rows.append(row)
            last = step_index == len(steps) - 1  # upserts cost a key lookup: only the last
            updates_of_old = rng.sample(range(next_id), 3) if last else []
            for old_id in updates_of_old:  # upsert some stored keys too
                row = dict(rows[0], id=old_id, qty=rng.randint(100, 200))
                row["day"] = DAYS[old_id % len(DAYS)]
                rows.append(row)
            rows = list({r["id"]: r for r in rows}.values())
            ddl = ", ".join(f"`{c.name}` {c.type}" for c in meta.columns)
            ordered = [tuple(r[c.name] for c in meta.columns) for r in rows]
            table.load(spark.createDataFrame(ordered, ddl), mode="upsert" if last else "append")
            placeholders = ", ".join("?" for _ in oracle.columns)
            ids = [r["id"] for r in rows]
            oracle.con.execute(f"DELETE FROM t WHERE id IN ({', '.join(map(str, ids))})")
            oracle.con.executemany(
                f"INSERT INTO t ({', '.join(oracle.columns)}) VALUES ({placeholders})",
                [tuple(r[c] for c in oracle.columns) for r in rows],
            )
        elif step == "add":
            added += 1
            name, default = f"extra{added}", rng.choice([None, "7"])
            text = f"{name} int" + (f" default {default}" if default else "")
            table.alter(text)
            duck_default = f" DEFAULT {default}" if default else ""
            oracle.con.execute(f"ALTER TABLE t ADD COLUMN {name} INTEGER{duck_default}")
            oracle.columns.append(name)
        elif step == "widen":  # every widening at once: one commit
            wider = {"qty": ("bigint", "BIGINT"), "amount": ("decimal(12,2)", "DECIMAL(12,2)")}
            wider["price"] = ("double", "DOUBLE")
            table.alter(widen=[f"{c} {t}" for c, (t, _) in wider.items()])
            for column, (_, duck) in wider.items():
                oracle.con.execute(f"ALTER TABLE t ALTER {column} TYPE {duck}")
            widened.update(wider)
        elif step == "delete":
            where = "qty < 10 OR extra1 = 7"
            table.delete(where)
            oracle.con.execute(f"DELETE FROM t WHERE {where}")
        elif step == "update":
            table.update_rows("extra1 = qty + 1, qty = qty * 2", "day = 'd2'")
            oracle.con.execute("UPDATE t SET extra1 = qty + 1, qty = qty * 2 WHERE day = 'd2'")
        elif step == "restore":
            back = rng.choice(sorted(v for v in seen if v < table.version))
            table.restore(version=back)
            columns = ", ".join(seen[back][0])
            oracle.con.execute("DELETE FROM t")
            oracle.con.execute(f"INSERT INTO t ({columns}) SELECT {columns} FROM v{back}")
        if step in ("load", "delete", "update", "restore"):
            seen[table.version] = (list(oracle.columns), oracle.rows())
            oracle.con.execute(f"CREATE TABLE v{table.version} AS SELECT * FROM t")
    assert added == 2 and widened == {"qty", "amount", "price"}
    for version, (columns, expected) in seen.items():
        assert table.scan(version=version).to_spark().columns[: len(columns) - 1] == [
            c for c in columns if c != "day"
        ]
        assert _spark_rows(table, columns, version=version) == expected, version
        assert _arrow_rows(table, columns, version=version) == expected, version
    latest_columns = seen[max(seen)][0]
    spark.conf.set("spark.lakectl.read.native", "false")  # the kernel path too
    try:
        assert _spark_rows(table, latest_columns) == oracle.rows()
    finally:
        spark.conf.unset("spark.lakectl.read.native")


@pytest.fixture
def evolved(tmp_path, spark):
    """A table loaded before and after adding ``discount`` (default 0.5) and widening ``qty``."""
    table = lakectl.create_table(
        str(tmp_path / "t"),
        schema="id bigint, qty int, day string",
        primary_key="id",
        partition_by="day",
    )
    load_rows(table, [(1, 5, "a"), (2, 6, "b"), (3, 7, "a")], "id bigint, qty int, day string")
    table.alter("discount double default 0.5", widen="qty bigint")
    load_rows(
        table,
        [(4, 2**40, "b", 1.0), (1, 8, "a", None)],
        "id bigint, qty bigint, day string, discount double",
    )
    return table


EVOLVED_ROWS = [
    (1, 8, None, "a"),
    (2, 6, 0.5, "b"),
    (3, 7, 0.5, "a"),
    (4, 2**40, 1.0, "b"),
]


def _rows(frame_rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in ("id", "qty", "discount", "day")) for r in frame_rows)


def test_minor_and_major_compaction_write_the_new_schema(evolved, lakectl_cli):
    # lakectl's data source serves the evolved read (one scan per schema the files hold)
    before = lakectl_cli("--json", "snapshot", evolved.location)
    assert before.code == 0, before.out
    assert before.json["read_path"] == "data_source"
    assert _rows(before.json["rows"]) == EVOLVED_ROWS
    for kind in ("minor", "major"):
        run = lakectl_cli("--json", "compact", evolved.location, f"--{kind}")
        assert run.code == 0, run.out
        assert _rows(evolved.scan().to_spark().collect()) == EVOLVED_ROWS, kind
        assert _rows(evolved.scan().to_arrow().to_pylist()) == EVOLVED_ROWS, kind
    import pyarrow.orc as orc

    root = Path(evolved.location.removeprefix("file://"))
    bases = sorted(root.glob("day=*/base_*/bucket_*"))
    assert bases, "major compaction wrote no base"
    for path in bases:  # the compacted files hold the current columns
        row = orc.ORCFile(str(path)).schema.field("row").type
        assert [row.field(i).name for i in range(row.num_fields)] == ["id", "qty", "discount"]
    # and the version before the alter still reads with the old schema
    assert sorted(tuple(r) for r in evolved.scan(version=1).to_spark().collect()) == [
        (1, 5, "a"),
        (2, 6, "b"),
        (3, 7, "a"),
    ]


def test_restore_to_before_the_alter_keeps_the_columns_added_since(evolved):
    result = evolved.restore(version=1)
    assert (result.method, result.deleted, result.reinserted) == ("full", 2, 1)
    # the rows of version 1, in today's columns: widened, the added one at its default
    restored = [(1, 5, 0.5, "a"), (2, 6, 0.5, "b"), (3, 7, 0.5, "a")]
    assert _rows(evolved.scan().to_spark().collect()) == restored
    assert _rows(evolved.scan().to_arrow().to_pylist()) == restored
    assert [f.name for f in evolved.scan().to_arrow().schema] == ["id", "qty", "discount", "day"]
    # the versions in between still read as they did
    assert _rows(evolved.scan(version=2).to_spark().collect()) == EVOLVED_ROWS


def test_the_change_feed_across_an_alter_shows_pre_images_in_todays_columns(evolved):
    expected = [
        (1, 5, 0.5, "a", "update_preimage", 2),
        (1, 8, None, "a", "update_postimage", 2),
        (4, 2**40, 1.0, "b", "insert", 2),
    ]
    columns = ("id", "qty", "discount", "day", "_change_type", "_commit_version")
    spark_rows = [
        tuple(r[c] for c in columns) for r in evolved.changes(from_version=1).to_spark().collect()
    ]
    arrow_rows = [
        tuple(r[c] for c in columns) for r in evolved.changes(from_version=1).to_arrow().to_pylist()
    ]
    assert sorted(spark_rows) == expected
    assert sorted(arrow_rows) == expected


def test_type7_statements_use_an_added_column(evolved, tmp_path):
    statements = tmp_path / "fix.updates"
    statements.write_text("-- time=2020-01-01\nUPDATE t SET discount = 5.0 WHERE discount = 0.5;\n")
    evolved.apply_updates(str(statements))
    expected = [(1, 8, None, "a"), (2, 6, 5.0, "b"), (3, 7, 5.0, "a"), (4, 2**40, 1.0, "b")]
    assert _rows(evolved.scan().to_spark().collect()) == expected
    assert _rows(evolved.scan().to_arrow().to_pylist()) == expected
    evolved.materialize(until="2021-01-01")  # folds the statement into stored rows
    assert _rows(evolved.scan().to_spark().collect()) == expected
    assert _rows(evolved.scan().to_arrow().to_pylist()) == expected
    assert _rows(evolved.scan(raw=True).to_spark().collect()) == EVOLVED_ROWS


def test_load_evolve_adds_the_batch_columns_and_without_it_they_stay_an_error(
    evolved, tmp_path, lakectl_cli, spark
):
    batch = tmp_path / "batch.parquet"
    spark.createDataFrame(
        [(5, 1, "a", 2.0, "web")],
        "id bigint, qty bigint, day string, discount double, channel string",
    ).write.parquet(str(batch))
    log = Path(evolved.location.removeprefix("file://"))
    before = _log_size(log)
    refused = lakectl_cli("--json", "load", evolved.location, batch)
    assert refused.code == 65 and "unknown column(s) channel" in refused.json["error"]["message"]
    assert _log_size(log) == before
    run = lakectl_cli("--json", "load", evolved.location, batch, "--evolve")
    assert run.code == 0, run.out
    assert run.json["evolved"] == ["channel"]
    assert _log_size(log) == before + 1  # one commit: the new column with the rows
    rows = {r["id"]: r.asDict() for r in evolved.scan().to_spark().collect()}
    assert rows[5]["channel"] == "web" and rows[2]["channel"] is None
    assert evolved.scan().to_arrow().column_names == evolved.scan().to_spark().columns


def test_list_bucketing_an_evolved_table_keeps_its_rows(evolved):
    evolved.list_bucket("qty", keys=[6, 7])  # a widened column: int in the older files
    assert _rows(evolved.scan().to_spark().collect()) == EVOLVED_ROWS
    assert _rows(evolved.scan().to_arrow().to_pylist()) == EVOLVED_ROWS
    pruned = evolved.scan(where="qty = 6").to_spark().collect()
    assert _rows(pruned) == [r for r in EVOLVED_ROWS if r[1] == 6]
