"""The Arrow reader on lakectl tables equals the Spark path (``to_spark``) row for row: the
sample sales table after its CDC loads, at every version, with filters and projections, after
minor and major compaction, list-bucketed, and with installed Type 7 statements."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lakectl
from lakectl.errors import LakectlError, UsageError
from tests.support.arrow_oracle import assert_same_rows

SALES = Path(__file__).resolve().parents[2] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = {"mode": "cdc", "op_column": "op_code", "order_by": "change_ts"}
BATCHES = ("base.csv", "cdc_batch_1.csv", "cdc_batch_2.csv")
PREDICATES = [
    "store_id = 'S01'",
    "create_date = '2024-01-02' AND total_amt > 100",
    "sell_id IN (3, 5, 999)",
    "NOT sell_id IN (3, 5) AND create_date <> '2024-01-01'",
    "status_id IS NULL OR batch BETWEEN 1 AND 2",
    "NOT (create_date = '2024-01-01') AND total_amt >= 99.5",
    "create_date > '2024-01-01' OR acct_id < 1010",
]


@pytest.fixture(scope="module")
def sales_path(tmp_path_factory, spark) -> Path:
    """The sample sales table after its three CDC loads (read-only: tests copy it to change
    it)."""
    path = tmp_path_factory.mktemp("arrow") / "sales"
    table = lakectl.create_table(
        str(path), schema=SCHEMA, primary_key="sell_id", partition_by="create_date", spark=spark
    )
    for batch in BATCHES:
        table.load(str(SALES / batch), **CDC)
    return path


def _copy(sales_path: Path, tmp_path: Path, spark: object) -> lakectl.Table:
    shutil.copytree(sales_path, tmp_path / "sales")
    return lakectl.open_table(str(tmp_path / "sales"), spark=spark)


@pytest.mark.parametrize("version", [None, 1, 2, 3])
def test_every_version(sales_path, spark, version):
    table = lakectl.open_table(str(sales_path), spark=spark)
    got = assert_same_rows(table, version=version)
    assert got.num_rows == {None: 215, 1: 200, 2: 219, 3: 215}[version]


@pytest.mark.parametrize("where", PREDICATES)
def test_where_and_columns(sales_path, spark, where):
    table = lakectl.open_table(str(sales_path), spark=spark)
    assert_same_rows(table, where=where)
    got = assert_same_rows(table, where=where, columns=["total_amt", "sell_id"], version=2)
    assert got.schema.names == ["total_amt", "sell_id"]


def test_where_prunes_partitions(sales_path):
    from lakectl.ops.snapshot import SnapshotRequest, read_arrow

    table = lakectl.open_table(str(sales_path))
    read = read_arrow(
        table.context, str(sales_path), SnapshotRequest(where="create_date = '2024-01-02'")
    )
    assert (read.scan.pruning.partitions, read.scan.pruning.partitions_read) == (3, 1)


def test_minor_then_major_compaction(sales_path, tmp_path, spark):
    table = _copy(sales_path, tmp_path, spark)
    before = table.scan().to_arrow()
    table.compact("minor")
    assert assert_same_rows(table).sort_by("sell_id").equals(before.sort_by("sell_id"))
    assert_same_rows(table, version=2)
    table.compact("major")
    assert assert_same_rows(table).sort_by("sell_id").equals(before.sort_by("sell_id"))
    assert_same_rows(table, version=1, where=PREDICATES[1])


def test_list_bucketed_table(sales_path, tmp_path, spark):
    table = _copy(sales_path, tmp_path, spark)
    table.compact("major")
    done = table.list_bucket("store_id", keys="S01,S02")
    assert done.rewritten
    assert list((tmp_path / "sales").glob("create_date=*/base_*/store_id=S01"))
    for where in (None, "store_id = 'S01'", "store_id = 'S04'", "store_id IN ('S02', 'S05')"):
        assert_same_rows(table, where=where)


STATEMENTS = """-- time=2024-01-01
UPDATE sales SET status_id = 'FIXED', total_amt = 0 WHERE sell_id = 3;
UPDATE sales SET store_id = 'S09' WHERE store_id = 'S02' AND total_amt > 200;
-- time=2024-02-01
DELETE FROM sales WHERE sell_id IN (5, 7, 11) OR status_id IS NULL;
UPDATE sales SET create_date = '2024-01-09', batch = NULL WHERE NOT (store_id <> 'S03');
UPDATE sales SET payment_type_id = status_id, status_id = payment_type_id WHERE sell_id < 20;
"""
LATER = """-- time=2024-03-01
UPDATE sales SET create_ts = CAST(CAST(sell_id AS timestamp) AS string) WHERE sell_id = 4;
UPDATE sales SET change_ts = CAST(CAST(change_ts AS timestamp) AS string) WHERE sell_id > 4;
"""


def test_installed_statements_apply_as_in_spark(sales_path, tmp_path, spark):
    table = _copy(sales_path, tmp_path, spark)
    (tmp_path / "fix.updates").write_text(STATEMENTS)
    table.apply_updates(str(tmp_path / "fix.updates"))
    for as_of in (None, "2023-12-31", "2024-01-15", -1):
        assert_same_rows(table, as_of=as_of)
    now = assert_same_rows(table, where="create_date = '2024-01-09' OR store_id = 'S09'")
    assert now.num_rows > 0 and set(now.column("batch").to_pylist()) >= {None}
    fixed = assert_same_rows(table, where="sell_id = 3", as_of="2024-01-15")
    assert fixed.column("status_id").to_pylist() == ["FIXED"]
    # Casts of numbers and text to timestamps apply in both engines alike.
    (tmp_path / "later.updates").write_text(LATER)
    table.apply_updates(str(tmp_path / "later.updates"))
    cast = assert_same_rows(table, where="sell_id = 4")
    assert cast.column("create_ts").to_pylist() == ["1970-01-01 00:00:04"]
    assert_same_rows(table, as_of="2024-02-15")
    raw = assert_same_rows(table, raw=True, where="sell_id = 3")
    assert raw.column("status_id").to_pylist() != ["FIXED"]


@pytest.mark.parametrize(
    ("read", "message"),
    [
        ({"where": "CAST(sell_id AS date) IS NULL"}, "from bigint to date"),
        ({"where": "no_such = 1"}, "no_such"),
        ({"columns": "sell_id,nope"}, "nope"),
        ({"version": 99}, "99"),
    ],
)
def test_bad_reads_are_refused(sales_path, read, message):
    table = lakectl.open_table(str(sales_path))
    with pytest.raises(LakectlError, match=message):
        table.scan(**read).to_arrow()


def test_hand_offs(sales_path):
    import duckdb

    table = lakectl.open_table(str(sales_path))
    frame = table.scan(where="store_id = 'S02'").to_pandas()
    assert len(frame) == table.scan(where="store_id = 'S02'").to_arrow().num_rows > 0
    con = duckdb.connect()
    relation = table.scan(columns="store_id,total_amt").to_duckdb(con)
    got = relation.aggregate("store_id, count(*) AS n", "store_id").order("store_id").fetchall()
    want = table.scan().to_arrow().group_by("store_id").aggregate([("sell_id", "count")])
    assert dict(got) == dict(zip(*want.to_pydict().values(), strict=True))
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="polars"):
            table.scan().to_polars()


def _without_java(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH holds an empty directory: no ``java``, no JAVA_HOME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = str(bin_dir)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def test_cli_arrow_engine_runs_without_java(sales_path, tmp_path, spark):
    env = _without_java(tmp_path)

    def cli(*args: object) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "lakectl",
            "snapshot",
            str(sales_path),
            "--engine",
            "arrow",
        ]
        return subprocess.run(
            [*command, *map(str, args)], env=env, capture_output=True, text=True, timeout=120
        )

    want = (
        lakectl.open_table(str(sales_path), spark=spark)
        .scan(where="batch > 0")
        .to_spark()
        .toArrow()
    )
    shown = cli("--where", "batch > 0", "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["columns"] == want.schema.names and data["read_path"] == "arrow"
    assert Counter(tuple(r.values()) for r in data["rows"]) == Counter(
        tuple(r.values()) for r in want.to_pylist()
    )
    written = cli("--version", "1", "--out", tmp_path / "v1", "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["rows_written"] == 200
    assert pq.read_table(tmp_path / "v1").num_rows == 200
    refused = cli("--out", tmp_path / "j", "--format", "json", "--json")
    assert refused.returncode == 2
    assert "arrow engine" in json.loads(refused.stdout)["error"]["message"]
    assert not (tmp_path / "j").exists()
    no_date = cli("--where", "CAST(sell_id AS date) IS NULL")
    assert no_date.returncode == 65 and "from bigint to date" in no_date.stderr
    assert "Traceback" not in no_date.stderr


def test_cli_arrow_engine_sorts_and_limits_as_spark(sales_path, lakectl_cli, spark):
    args = ("snapshot", sales_path, "--order-by", "store_id desc,sell_id", "--limit", "7")
    arrow = lakectl_cli(*args, "--engine", "arrow", "--json")
    assert arrow.code == 0, arrow.err
    assert arrow.json["rows"] == lakectl_cli(*args, "--json").json["rows"]
    assert arrow.json["truncated"] is True


# Mistakes with --engine arrow end as they do with Spark: the same exit code, one JSON error.
ARROW_MISTAKES = [
    (["--version", "999"], 67),
    (["--known-at", "1999-01-01"], 67),
    (["--as-of", "yesterday"], 2),
    (["--columns", "sell_id,nope"], 65),
    (["--where", "store_id = 'S01' whatever"], 2),
    (["--where", "reflect('java.lang.Runtime','getRuntime') IS NULL"], 65),
    (["--where", "CAST(sell_id AS date) IS NULL"], 65),
    (["--where", "store_id = 'S01'", "--valid-write-ids", "t:1:1::"], 2),
    (["--out", "{existing}"], 65),
    (["--out", "{new}", "--format", "json"], 2),
    (["--order-by", "nope"], 65),
]


@pytest.mark.parametrize(("args", "code"), ARROW_MISTAKES)
def test_cli_arrow_engine_mistakes(sales_path, tmp_path, lakectl_cli, args, code):
    existing = tmp_path / "existing.csv"
    existing.write_text("x\n")
    args = [a.format(existing=existing, new=tmp_path / "new") for a in args]
    result = lakectl_cli("snapshot", sales_path, "--engine", "arrow", *args, "--json")
    assert result.code == code, result.out
    assert set(result.json) == {"error"} and result.json["error"]["message"]
    assert not (tmp_path / "new").exists()
