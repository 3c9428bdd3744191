"""``lakectl load --engine arrow``: loads without a JVM, held to DuckDB's oracle on random CDC
histories (late, tied, repeated and out-of-order changes, deletes of absent keys; partitioned
and not), with the same layout checks as Spark's loads, crash safety at every failpoint, the
engine choice, ``--evolve`` and ``--create``. Spark's loads of the same histories:
tests/ops/test_load_arrow_vs_spark.py."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.table.log import Operation
from lakectl.table.transaction import failpoints_of
from tests.support.cdc_oracle import CdcOracle
from tests.support.cli import run_lakectl, run_lakectl_until_crash
from tests.support.random_cdc import (
    CDC_ARGS,
    COLUMNS,
    SCHEMA,
    make_batch,
    oracle_rows,
    rows_of,
    write_csv,
)

ROOT = Path(__file__).resolve().parents[2]
ARROW = ("--engine", "arrow")
# The Arrow engine does not write timestamp columns: change times as text order the same.
TEXT_SCHEMA = SCHEMA.replace("change_ts timestamp", "change_ts string")
TEXT_COLUMNS = {**COLUMNS, "change_ts": "VARCHAR"}


def _check_acid_layout(table: Path) -> None:
    from tests.ops.test_load_differential import check_acid_layout

    check_acid_layout(table)


@pytest.mark.parametrize(("seed", "partitioned"), [(7, True), (8, False)])
def test_random_cdc_histories_loaded_by_the_arrow_engine_match_duckdb(tmp_path, seed, partitioned):
    rng = random.Random(seed)
    table = tmp_path / "orders"
    layout = ("--partition-by", "region") if partitioned else ()
    created = run_lakectl("create", table, "--schema", TEXT_SCHEMA, "--primary-key", "id", *layout)
    assert created.code == 0, created.err
    oracle = CdcOracle(TEXT_COLUMNS, key=("id",), order_by="change_ts", op_column="op_code")
    states = []
    for batch_no in range(1, 5):
        path = write_csv(tmp_path / f"b{batch_no}.csv", make_batch(rng, batch_no, key_space=120))
        result = run_lakectl("load", table, path, *CDC_ARGS, *ARROW, "--json")
        assert result.code == 0, result.err
        assert result.json["engine"] == "arrow"
        assert result.json["version"] == batch_no
        assert result.json["counts"] == oracle.apply_csv(str(path), "cdc"), f"batch {batch_no}"
        states.append(oracle_rows(oracle))
    for version, expected in enumerate(states, start=1):
        read = run_lakectl("snapshot", table, "--version", version, *ARROW, "--json")
        assert read.code == 0, read.err
        assert rows_of(read) == expected, f"--version {version}"
    _check_acid_layout(table)
    history = run_lakectl("history", table, "--json").json["commits"]
    assert [e["operation"] for e in history] == ["create", "cdc", "cdc", "cdc", "cdc"]


def test_upsert_and_append_by_the_arrow_engine_and_a_replay_is_all_ignored(tmp_path):
    table = tmp_path / "t"
    first = tmp_path / "first.csv"
    first.write_text("id,name,score\n1,ann,1.5\n2,bob,2.5\n2,bob2,3.5\n")
    created = run_lakectl(
        "load", table, first, "--create", "--primary-key", "id", "--mode", "upsert", *ARROW,
        "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    assert created.json["created_table"] is True
    assert created.json["counts"] == {
        "inserted": 2, "updated": 0, "deleted": 0, "ignored": 0, "superseded_in_batch": 1,
    }  # fmt: skip
    second = tmp_path / "second.csv"
    second.write_text("id,name,score\n2,cy,9.0\n3,dee,4.0\n")
    upsert = run_lakectl("load", table, second, *ARROW, "--json")
    assert upsert.json["counts"]["inserted"] == 1 and upsert.json["counts"]["updated"] == 1
    rows = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow().to_pylist()
    assert sorted((r["id"], r["name"], r["score"]) for r in rows) == [
        (1, "ann", 1.5),
        (2, "cy", 9.0),
        (3, "dee", 4.0),
    ]
    log = tmp_path / "log.csv"
    log.write_text("msg\nhello\nhello\n")
    appended = run_lakectl("load", tmp_path / "events", log, "--create", *ARROW, "--json")
    assert appended.code == 0, appended.err
    assert appended.json["mode"] == "append" and appended.json["counts"] == {"inserted": 2}
    again = run_lakectl("load", tmp_path / "events", log, "--force", *ARROW, "--json")
    assert again.json["counts"] == {"inserted": 2} and again.json["version"] == 2


def test_evolve_adds_the_new_column_in_the_loads_own_commit(tmp_path):
    table = tmp_path / "t"
    assert (
        run_lakectl("create", table, "--schema", "id bigint, qty int", "--primary-key", "id").code
        == 0
    )
    wider = tmp_path / "wider.csv"
    wider.write_text("id,qty,note\n1,5,hello\n2,6,\n")
    result = run_lakectl("load", table, wider, "--evolve", *ARROW, "--json")
    assert result.code == 0, result.err
    assert result.json["evolved"] == ["note"] and result.json["version"] == 1
    records = lakectl.open_table(str(table)).context.table(str(table)).read_state().records
    assert [r.operation for r in records] == [Operation.CREATE, Operation.UPSERT]
    assert records[-1].metadata is not None and "note" in records[-1].metadata.schema
    rows = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow().to_pylist()
    assert sorted((r["id"], r["qty"], r["note"]) for r in rows) == [(1, 5, "hello"), (2, 6, None)]
    refused = run_lakectl("load", table, wider.with_name("w2.csv"), *ARROW, "--json")
    assert refused.code != 0


def test_the_engine_is_chosen_as_asked_and_auto_takes_arrow_for_a_small_load(tmp_path):
    table = tmp_path / "t"
    batch = tmp_path / "b.csv"
    batch.write_text("id,qty\n1,5\n")
    assert (
        run_lakectl("create", table, "--schema", "id bigint, qty int", "--primary-key", "id").code
        == 0
    )
    auto = run_lakectl("load", table, batch, "--engine", "auto", "--json")
    assert auto.code == 0, auto.err
    assert auto.json["engine"] == "arrow" and auto.json["engine_reason"].startswith("auto")
    bucketed = tmp_path / "bucketed"
    made = run_lakectl(
        "create", bucketed, "--schema", "id bigint, qty int", "--primary-key", "id",
        "--buckets", "2",
    )  # fmt: skip
    assert made.code == 0, made.err
    loaded = run_lakectl("load", bucketed, batch, *ARROW, "--json")
    assert loaded.code == 0 and loaded.json["engine"] == "arrow", loaded.out
    stamped = tmp_path / "stamped"
    made = run_lakectl("create", stamped, "--schema", "id bigint, qty int, at timestamp_ntz")
    assert made.code == 0, made.err
    loaded = run_lakectl("load", stamped, batch, "--engine", "auto", "--json")
    assert loaded.code == 0 and loaded.json["engine"] == "arrow", loaded.out


def _reads(path: Path) -> tuple[Any, ...]:
    """The log and checkpoints (bytes), the schema and the rows."""
    meta = sorted(
        (f.relative_to(path).as_posix(), hashlib.sha256(f.read_bytes()).hexdigest())
        for f in (path / "_lakectl").rglob("*")
        if f.is_file() and f.parent.name in ("log", "checkpoints")
    )
    data = lakectl.open_table(str(path)).scan(engine="arrow").to_arrow()
    return meta, data.column_names, sorted(tuple(r.values()) for r in data.to_pylist())


@pytest.mark.parametrize("evolve", [False, True], ids=["cdc", "cdc --evolve"])
def test_an_arrow_load_stopped_at_any_failpoint_changes_nothing_and_a_rerun_commits_once(
    tmp_path, evolve
):
    table = tmp_path / "t"
    made = run_lakectl(
        "create", table, "--schema", "id bigint, qty int, day string", "--primary-key", "id",
        "--partition-by", "day",
    )  # fmt: skip
    assert made.code == 0, made.err
    base = tmp_path / "base.csv"
    base.write_text("op_code,id,qty,day\n" + "".join(f"I,{i},{i},d{i % 2}\n" for i in range(12)))
    assert run_lakectl("load", table, base, "--op-column", "op_code", *ARROW).code == 0
    batch = tmp_path / "batch.csv"
    if evolve:
        batch.write_text("op_code,id,qty,day,note\nU,1,8,d1,x\nD,2,0,d0,\nI,40,8,d0,y\n")
    else:
        batch.write_text("op_code,id,qty,day\nU,1,8,d1\nD,2,0,d0\nI,40,8,d0\n")
    args = ["load", table, batch, "--op-column", "op_code", *ARROW, "--json"]
    if evolve:
        args.append("--evolve")
    before = _reads(table)
    points = ["load.before_write", *failpoints_of(Operation.CDC)[:-1]]
    for point in points:
        killed = run_lakectl_until_crash(*args, failpoint=point)
        assert killed.code == 137, (point, killed.err[-2000:])
        assert _reads(table) == before, point
    rerun = run_lakectl(*args)
    assert rerun.code == 0, rerun.err
    assert rerun.json["counts"] == {
        "inserted": 1, "updated": 1, "deleted": 1, "ignored": 0, "superseded_in_batch": 0,
    }  # fmt: skip
    records = lakectl.open_table(str(table)).context.table(str(table)).read_state().records
    assert len(records) == len(before[0]) + 1
    assert records[-1].operation is Operation.CDC
    after = _reads(table)
    assert ("note" in after[1]) is evolve
    # What the stopped runs left behind is of write ids that never committed.
    committed = {d for r in records for d in (r.added or ())}
    write_ids = {r.write_id for r in records if r.write_id is not None}
    left = {p for p in table.rglob("*delta_*") if p.is_dir()}
    left = {p for p in left if p.relative_to(table).as_posix() not in committed}
    assert left and all(int(p.name.split("_")[-2]) not in write_ids for p in left)


def test_an_arrow_load_starts_no_jvm(tmp_path):
    """A new ``lakectl`` process with a ``java`` on PATH that fails: the load still works, and
    never imported pyspark."""
    table = tmp_path / "t"
    batch = tmp_path / "b.csv"
    batch.write_text("op_code,id,qty\nI,1,5\nI,2,6\nD,1,0\n")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = f"{ROOT / 'tests' / 'support' / 'no_java'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    script = (
        "import sys; from lakectl.cli.main import main; code = main(sys.argv[1:]); "
        "sys.exit(99 if 'pyspark' in sys.modules else code)"
    )
    args = [
        "load", str(table), str(batch), "--create", "--primary-key", "id", "--op-column",
        "op_code", *ARROW, "--json",
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["counts"]["inserted"] == 1


def test_a_dataframe_is_not_loaded_by_the_arrow_engine(tmp_path):
    table = lakectl.create_table(str(tmp_path / "t"), schema="id bigint", primary_key="id")
    with pytest.raises(lakectl.UsageError, match="DataFrame"):
        table.load(object(), engine="arrow")  # type: ignore[arg-type]
    shutil.rmtree(tmp_path / "t")


def test_a_composite_key_with_a_partition_column_is_looked_up_in_the_partitions_live_rows(
    tmp_path,
):
    table = tmp_path / "t"
    made = run_lakectl(
        "create", table, "--schema", "id bigint, day string, qty int, ts string",
        "--primary-key", "id,day", "--partition-by", "day",
    )  # fmt: skip
    assert made.code == 0, made.err
    first = tmp_path / "first.csv"
    first.write_text("id,day,qty,ts\n1,d1,1,a\n1,d2,2,a\n2,d1,3,a\n")
    assert run_lakectl("load", table, first, *ARROW).code == 0
    second = tmp_path / "second.csv"
    # (1, d1) newer: update; (1, d2) older: ignored; (2, d2) new; (2, d1) deleted.
    second.write_text("op,id,day,qty,ts\nU,1,d1,10,b\nU,1,d2,20,0\nI,2,d2,30,b\nD,2,d1,0,b\n")
    loaded = run_lakectl(
        "load", table, second, "--op-column", "op", "--order-by", "ts", *ARROW, "--json"
    )
    assert loaded.code == 0, loaded.err
    assert loaded.json["counts"] == {
        "inserted": 1, "updated": 1, "deleted": 1, "ignored": 1, "superseded_in_batch": 0,
    }  # fmt: skip
    rows = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow().to_pylist()
    assert sorted((r["id"], r["day"], r["qty"]) for r in rows) == [
        (1, "d1", 10),
        (1, "d2", 2),
        (2, "d2", 30),
    ]


def test_an_arrow_load_that_another_writer_raced_in_its_partition_commits_nothing(tmp_path):
    from tests.support.load_race import racing_arrow_load

    table = tmp_path / "t"
    made = run_lakectl(
        "create", table, "--schema", "id bigint, qty int, day string", "--primary-key", "id",
        "--partition-by", "day",
    )  # fmt: skip
    assert made.code == 0, made.err
    base = tmp_path / "base.csv"
    base.write_text("id,qty,day\n1,1,d1\n2,2,d2\n")
    assert run_lakectl("load", table, base, *ARROW).code == 0
    mine, theirs = tmp_path / "mine.csv", tmp_path / "theirs.csv"
    mine.write_text("id,qty,day\n1,10,d1\n")
    theirs.write_text("id,qty,day\n1,20,d1\n3,30,d1\n")

    def other_writer() -> None:
        assert run_lakectl("load", table, theirs, *ARROW).code == 0

    code, out = racing_arrow_load(tmp_path, [str(table), str(mine)], other_writer)
    assert code == 75, out
    assert out["error"]["type"] == "conflict"
    rows = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow().to_pylist()
    assert sorted((r["id"], r["qty"]) for r in rows) == [(1, 20), (2, 2), (3, 30)]
    # Its files are gone (the abort removed them): only committed directories remain.
    records = lakectl.open_table(str(table)).context.table(str(table)).read_state().records
    committed = {d for r in records for d in (r.added or ())}
    on_disk = {p.relative_to(table).as_posix() for p in table.rglob("*delta_*") if p.is_dir()}
    assert on_disk == committed
    # Appends read nothing: one racing another commits.
    log = tmp_path / "log"
    assert run_lakectl("load", log, theirs, "--create", "--mode", "append", *ARROW).code == 0
    (tmp_path / "again").mkdir()
    code, out = racing_arrow_load(
        tmp_path / "again",
        [str(log), str(base), "--mode", "append"],
        lambda: run_lakectl("load", log, mine, "--mode", "append", *ARROW),
    )
    assert code == 0 and out["counts"] == {"inserted": 2}
    assert lakectl.open_table(str(log)).scan(engine="arrow").to_arrow().num_rows == 5
