"""The Arrow engine's loads against Spark's: one random CDC history (late, tied, repeated and
out-of-order changes, deletes of absent keys, escaped partition values) loaded into two tables,
one by each engine. Every version reads the same rows (and DuckDB's oracle's), the log records
are the same but for their times, the directories are the same with the same number of events,
and Hive 2.3's own reader reads the Arrow engine's table as lakectl does. The history is ordered
by a text change time, and again (shorter) by a ``timestamp`` and by a ``date`` one."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.arrow.acid_writer import partition_dir
from lakectl.ops import load as load_ops
from tests.support.cdc_oracle import CdcOracle
from tests.support.cli import run_lakectl
from tests.support.hive23_reader import hive_txn_list, read_partition
from tests.support.random_cdc import (
    CDC_ARGS,
    COLUMNS,
    SCHEMA,
    START,
    make_batch,
    oracle_rows,
    write_csv,
)

TEXT_SCHEMA = SCHEMA.replace("change_ts timestamp", "change_ts string")
# Each table's engine; "spark-tasks" is Spark deciding the changes in tasks by key, as it does
# for batches too large to decide on the driver.
ENGINES = {"arrow": "arrow", "spark": "spark", "spark-tasks": "spark"}
TEXT_COLUMNS = {**COLUMNS, "change_ts": "VARCHAR"}


def _state(path: Path) -> Any:
    return lakectl.open_table(str(path)).context.table(str(path)).read_state()


def _rows(path: Path, version: int) -> list[tuple]:
    data = lakectl.open_table(str(path)).scan(version=version, engine="arrow").to_arrow()
    return sorted((tuple(r.values()) for r in data.to_pylist()), key=repr)


def _events_per_directory(path: Path) -> dict[str, int]:
    return {
        d.relative_to(path).as_posix(): sum(orc.ORCFile(str(f)).nrows for f in d.glob("bucket_*"))
        for d in path.rglob("*delta_*")
        if d.is_dir()
    }


def _records(path: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.to_json().items() if k != "committed_at"} for r in _state(path).records
    ]


def _load(monkeypatch, table: str, path: Path, batch: Path) -> Any:
    """``lakectl load`` of the cdc ``batch`` into ``path`` by ``table``'s engine (ENGINES)."""
    with monkeypatch.context() as patched:
        if table == "spark-tasks":
            patched.setattr(load_ops, "DECIDE_ON_DRIVER_ROWS", 0)
        engine = ENGINES[table]
        result = run_lakectl("load", path, batch, *CDC_ARGS, "--engine", engine, "--json")
    assert result.code == 0, result.err
    assert result.json["engine"] == engine
    return result


def _hive_value(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def test_arrow_and_spark_loads_of_one_random_history_agree(spark, tmp_path, monkeypatch):
    rng = random.Random(3)
    tables = {name: tmp_path / name for name in ENGINES}
    for path in tables.values():
        made = run_lakectl(
            "create", path, "--schema", TEXT_SCHEMA, "--primary-key", "id",
            "--partition-by", "region",
        )  # fmt: skip
        assert made.code == 0, made.err
    oracle = CdcOracle(TEXT_COLUMNS, key=("id",), order_by="change_ts", op_column="op_code")
    expected = []
    for batch_no in (1, 2, 3):
        rows = make_batch(rng, batch_no, key_space=60)[:90]
        batch = write_csv(tmp_path / f"b{batch_no}.csv", rows)
        counts = oracle.apply_csv(str(batch), "cdc")
        expected.append(oracle_rows(oracle))
        for name, path in tables.items():
            result = _load(monkeypatch, name, path, batch)
            assert result.json["counts"] == counts, (name, batch_no)
    for version in (1, 2, 3):
        for name in ("spark", "spark-tasks"):
            assert _rows(tables["arrow"], version) == _rows(tables[name], version), version
        assert len(_rows(tables["arrow"], version)) == len(expected[version - 1])
    for name in ("spark", "spark-tasks"):
        assert _records(tables["arrow"]) == _records(tables[name])
        assert _events_per_directory(tables["arrow"]) == _events_per_directory(tables[name])

    # Hive 2.3's reader, partition by partition, reads the Arrow engine's files as lakectl.
    path = tables["arrow"]
    table = lakectl.open_table(str(path))
    meta = _state(path).metadata
    columns = [(c.name, c.type) for c in meta.data_schema.columns]
    lakectl_rows: dict[str, list[tuple]] = defaultdict(list)
    for row in table.scan(engine="arrow").to_arrow().to_pylist():
        key = partition_dir(meta, (row["region"],))
        lakectl_rows[key].append(tuple(_hive_value(row[n]) for n, _ in columns))
    txn_list = hive_txn_list(spark, _state(path).valid_write_ids())
    partitions = sorted(p.name for p in path.glob("region=*"))
    assert set(lakectl_rows) <= set(partitions)
    for part in partitions:
        got = read_partition(spark, f"file://{path / part}", columns, txn_list)
        assert got == sorted(lakectl_rows.get(part, []), key=repr), part


def test_auto_runs_spark_for_a_load_over_the_tables_limit_and_arrow_under_it(spark, tmp_path):
    table = tmp_path / "t"
    made = run_lakectl("create", table, "--schema", "id bigint, qty int", "--primary-key", "id")
    assert made.code == 0, made.err
    assert run_lakectl("set", table, "engine.auto.max-bytes=1KB").code == 0
    small = tmp_path / "small.csv"
    small.write_text("id,qty\n1,1\n")
    big = tmp_path / "big.csv"
    big.write_text("id,qty\n" + "".join(f"{i},{i}\n" for i in range(2, 400)))
    under = run_lakectl("load", table, small, "--engine", "auto", "--json")
    assert under.code == 0, under.err
    assert under.json["engine"] == "arrow", under.json
    over = run_lakectl("load", table, big, "--engine", "auto", "--json")
    assert over.code == 0, over.err
    assert over.json["engine"] == "spark" and "more than" in over.json["engine_reason"]
    assert over.json["counts"]["inserted"] == 398


def test_an_arrow_load_raced_by_a_spark_load_in_its_partition_commits_nothing(spark, tmp_path):
    from tests.support.load_race import racing_arrow_load

    table = tmp_path / "t"
    made = run_lakectl(
        "create", table, "--schema", "id bigint, qty int, day string", "--primary-key", "id",
        "--partition-by", "day",
    )  # fmt: skip
    assert made.code == 0, made.err
    mine, theirs = tmp_path / "mine.csv", tmp_path / "theirs.csv"
    mine.write_text("id,qty,day\n1,10,d1\n")
    theirs.write_text("id,qty,day\n1,20,d1\n")

    def spark_writer() -> None:
        loaded = run_lakectl("load", table, theirs, "--engine", "spark", "--json")
        assert loaded.code == 0 and loaded.json["engine"] == "spark", loaded.err

    code, out = racing_arrow_load(tmp_path, [str(table), str(mine)], spark_writer)
    assert code == 75 and out["error"]["type"] == "conflict", out
    rows = lakectl.open_table(str(table)).scan(engine="arrow").to_arrow().to_pylist()
    assert [(r["id"], r["qty"]) for r in rows] == [(1, 20)]


def _typed_change_times(rows: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``rows`` with change times of ``kind``: the timestamps as they are, or each one's day
    (days of 15 minutes of the history: many changes of a key tie, late ones are a day older)."""
    if kind == "timestamp":
        return rows
    out = []
    for row in rows:
        minutes = (datetime.fromisoformat(row["change_ts"]) - START) // timedelta(minutes=1)
        out.append({**row, "change_ts": (START.date() + timedelta(days=minutes // 15)).isoformat()})
    return out


def _canonical(row: dict[str, Any]) -> tuple:
    """A row of lakectl's Arrow read or of DuckDB's oracle, the change time as wall time in
    UTC (the session zone the CSV's times are read in)."""
    ts = row["change_ts"]
    if isinstance(ts, datetime) and ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    amount = None if row["amount"] is None else Decimal(str(row["amount"]))
    return (row["id"], ts, amount, row["note"], row["qty"], row["region"])


@pytest.mark.parametrize("kind", ["timestamp", "date"])
def test_cdc_histories_ordered_by_typed_change_times_agree(spark, tmp_path, monkeypatch, kind):
    """The random CDC history ordered by a ``timestamp`` or ``date`` change time (late, tied,
    repeated and out-of-order changes): both engines load the same rows, DuckDB's."""
    rng = random.Random(11)
    schema = SCHEMA.replace("change_ts timestamp", f"change_ts {kind}")
    tables = {name: tmp_path / name for name in ENGINES}
    for path in tables.values():
        made = run_lakectl(
            "create", path, "--schema", schema, "--primary-key", "id", "--partition-by", "region"
        )
        assert made.code == 0, made.err
    columns = {**COLUMNS, "change_ts": kind.upper()}
    oracle = CdcOracle(columns, key=("id",), order_by="change_ts", op_column="op_code")
    for batch_no in (1, 2):
        rows = _typed_change_times(make_batch(rng, batch_no, key_space=40)[:80], kind)
        batch = write_csv(tmp_path / f"b{batch_no}.csv", rows)
        counts = oracle.apply_csv(str(batch), "cdc")
        assert counts["ignored"] and counts["superseded_in_batch"], counts  # late and tied
        for name, path in tables.items():
            assert _load(monkeypatch, name, path, batch).json["counts"] == counts, name
        want = sorted((_canonical(r) for r in oracle.rows()), key=repr)
        for path in tables.values():
            data = lakectl.open_table(str(path)).scan(engine="arrow").to_arrow().to_pylist()
            assert sorted((_canonical(r) for r in data), key=repr) == want, (path.name, batch_no)
    for name in ("spark", "spark-tasks"):
        assert _records(tables["arrow"]) == _records(tables[name])
        assert _events_per_directory(tables["arrow"]) == _events_per_directory(tables[name])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_key_in_two_files_of_a_folder_takes_the_later_file_by_name(
    spark, tmp_path, monkeypatch, fmt
):
    """Without ``--order-by`` a key's last change in the source wins: the files of a folder in
    name order (Spark reads the largest first), the rows of a file in order."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    source = tmp_path / "landing"
    source.mkdir()
    first = pa.table({"id": [1, 2], "v": ["first", "first"]})  # small, first by name
    second = pa.table(  # large, second by name: 1 again, and 2 twice within the file
        {"id": [1, 2, 2, *range(3, 400)], "v": ["second", "second", "last", *["x"] * 397]}
    )
    for name, rows in (("01%first", first), ("02 second", second)):
        if fmt == "csv":
            pcsv.write_csv(rows, source / f"{name}.csv")
        else:
            pq.write_table(rows, source / f"{name}.parquet")
    loaded = {}
    for name in ENGINES:
        path = tmp_path / name
        made = run_lakectl("create", path, "--schema", "id bigint, v string", "--primary-key", "id")
        assert made.code == 0, made.err
        with monkeypatch.context() as patched:
            if name == "spark-tasks":
                patched.setattr(load_ops, "DECIDE_ON_DRIVER_ROWS", 0)
            result = run_lakectl(
                "load", path, source, "--format", fmt, "--engine", ENGINES[name], "--json"
            )
        assert result.code == 0, result.err
        rows = lakectl.open_table(str(path)).scan(engine="arrow").to_arrow().to_pylist()
        loaded[name] = ({r["id"]: r["v"] for r in rows}, result.json["counts"])
    assert loaded["arrow"][0][1] == "second" and loaded["arrow"][0][2] == "last"
    assert loaded["spark"] == loaded["arrow"] and loaded["spark-tasks"] == loaded["arrow"]
