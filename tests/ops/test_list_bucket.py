"""List bucketing end to end through the CLI, on real Spark, against DuckDB as the oracle.

One table lives through the whole module (Spark jobs are the cost): plain, list-bucketed by x,
a CDC load on top, a major compaction, re-split by (x, y), time travel, a copy read without the
log (a reader that knows no mapping), and ``--off``. At every state the snapshot, with and
without predicates, equals DuckDB's answer over the rows the test itself tracked; pruning is
measured from the ``scan`` figures of ``snapshot --json``.
"""

from __future__ import annotations

import csv
import random
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.support.duck_rows import insert_rows
from tests.support.processes import run_crashing

SCHEMA = "id bigint, x int, y string, val string, ds string"
DAYS = ["2024-01-01", "2024-01-02"]
HOT = [6, 20, 30, 40]  # ~60% of the rows
DEFAULT = "HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"
PREDICATES = [
    None,
    "x = 30",
    "x = 50",
    "x IN (6, 999) AND ds = '2024-01-02'",
    "y = 'b'",
    "x = 6 OR y = 'a'",
    "x IS NULL",
]


class Model:
    """The rows the table must hold, and DuckDB to evaluate predicates over them."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.tmp, self.rng, self.rows, self.next_id, self.batches = (
            tmp,
            random.Random(seed),
            {},
            1,
            0,
        )
        # Installed Type 7 statement `UPDATE t SET x = 6 WHERE x >= N`: applied on every read,
        # to rows loaded after it too (statements apply after all loads).
        self.x_to_6_from: int | None = None

    def _x(self) -> int | None:
        roll = self.rng.random()
        if roll < 0.6:
            return self.rng.choice(HOT)
        return None if roll < 0.62 else self.rng.randint(100, 900)

    def batch(self, inserts: int, updates: int = 0, deletes: int = 0) -> Path:
        self.batches += 1
        out: list[dict[str, Any]] = []
        keys = sorted(self.rows)
        self.rng.shuffle(keys)
        for key in keys[:updates]:  # moves rows between value directories
            row = dict(self.rows[key], x=self._x(), val=f"u{self.batches}")
            self.rows[key] = row
            out.append({"op_code": "U", **row})
        for key in keys[updates : updates + deletes]:
            out.append({"op_code": "D", **self.rows.pop(key)})
        for _ in range(inserts):
            row = {
                "id": self.next_id,
                "x": self._x(),
                "y": self.rng.choice("abc"),
                "val": f"v{self.next_id}",
                "ds": self.rng.choice(DAYS),
            }
            self.rows[self.next_id] = row
            self.next_id += 1
            out.append({"op_code": "I", **row})
        path = self.tmp / f"batch{self.batches}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, ["op_code", "id", "x", "y", "val", "ds"])
            writer.writeheader()
            writer.writerows(out)
        return path

    def expected(self, where: str | None) -> list[tuple]:
        db = duckdb.connect()
        db.execute("CREATE TABLE t (id BIGINT, x INTEGER, y VARCHAR, val VARCHAR, ds VARCHAR)")
        insert_rows(
            db, "t", [(r["id"], r["x"], r["y"], r["val"], r["ds"]) for r in self.rows.values()]
        )
        if self.x_to_6_from is not None:
            db.execute("UPDATE t SET x = 6 WHERE x >= ?", [self.x_to_6_from])
        sql = "SELECT id, x, y, val, ds FROM t" + (f" WHERE {where}" if where else "")
        return sorted(db.execute(sql).fetchall(), key=_order)


def _order(row: tuple) -> tuple:
    return (row[0], -1 if row[1] is None else row[1])


def _rows(result) -> list[tuple]:
    assert result.code == 0, result.err
    return sorted(
        ((r["id"], r["x"], r["y"], r["val"], r["ds"]) for r in result.json["rows"]), key=_order
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory, spark, lakectl_cli):
    tmp = tmp_path_factory.mktemp("lb")
    path = tmp / "t"
    model = Model(tmp, seed=5)
    created = lakectl_cli(
        "create", path, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "ds"
    )
    assert created.code == 0, created.err
    loaded = lakectl_cli(
        "load", path, model.batch(6000), "--mode", "cdc", "--engine", "arrow", "--json"
    )
    assert loaded.code == 0, loaded.err
    return path, model


def check(cli, path: Path, model: Model, predicates=PREDICATES) -> dict[str | None, dict]:
    scans = {}
    for where in predicates:
        args = ["snapshot", path, "--json"] + (["--where", where] if where else [])
        result = cli(*args)
        assert _rows(result) == model.expected(where), where
        scans[where] = result.json["scan"]
    return scans


def _base_dirs(path: Path, day: str) -> list[Path]:
    return sorted((path / f"ds={day}").glob("base_*"))


def _subdirs(base: Path) -> set[str]:
    return {str(p.parent.relative_to(base)) for p in base.rglob("bucket_*")}


def _files_in(path: Path, subdirs: set[str]) -> int:
    """Bucket files in these list-bucketing directories of every partition's newest base."""
    bases = [_base_dirs(path, day)[-1] for day in DAYS]
    return sum(
        1 for b in bases for f in b.rglob("bucket_*") if str(f.parent.relative_to(b)) in subdirs
    )


def install_x_to_6(cli, path: Path, model: Model, tmp: Path) -> None:
    """Install the Type 7 statement ``UPDATE t SET x = 6 WHERE x >= 555`` (once per table)."""
    if model.x_to_6_from is not None:
        return
    statements = tmp / "t.updates.sql"
    statements.write_text("UPDATE t SET x = 6 WHERE x >= 555;\n")
    assert cli("apply-updates", path, statements).code == 0
    model.x_to_6_from = 555


def test_list_bucketing_lifecycle(table, lakectl_cli):
    path, model = table
    plain = check(lakectl_cli, path, model, [None, "x = 30"])
    assert plain["x = 30"]["bytes_read"] == plain[None]["bytes_read"]

    dry = lakectl_cli("list-bucket", path, "--column", "x", "--keys", "6,20,30,40", "--dry-run")
    assert dry.code == 0 and "rewrite" in dry.out
    assert lakectl_cli("show", path, "--json").json["version"] == 1  # nothing committed
    done = lakectl_cli("list-bucket", path, "--column", "x", "--keys", "6,20,30,40", "--json")
    assert done.code == 0, done.err
    assert [p["rewrite"] for p in done.json["partitions"]] == [True, True]
    base = _base_dirs(path, DAYS[0])[-1]
    assert _subdirs(base) == {"x=6", "x=20", "x=30", "x=40", DEFAULT}
    shown = lakectl_cli("show", path, "--json").json["partitions"]
    assert [p["list_bucketing"] for p in shown] == [
        {"columns": ["x"], "values": [["6"], ["20"], ["30"], ["40"]]}
    ] * 2

    split = check(lakectl_cli, path, model)
    _assert_point_query_pruned(lakectl_cli, path, model)
    assert split["x = 50"]["files_read"] == _files_in(path, {DEFAULT})
    assert split["x IN (6, 999) AND ds = '2024-01-02'"]["partitions_read"] == 1
    assert split["y = 'b'"]["bytes_read"] == split[None]["bytes_read"]

    again = lakectl_cli("list-bucket", path, "--column", "x", "--keys", "6,20,30,40", "--json")
    assert again.code == 0 and again.json["committed"] is False  # idempotent

    # Loads keep working: plain deltas on top of the split base, rows moving between values.
    loaded = lakectl_cli(
        "load", path, model.batch(300, updates=400, deletes=200), "--mode", "cdc",
        "--engine", "arrow", "--json",
    )  # fmt: skip
    assert loaded.code == 0, loaded.err
    after_load = check(lakectl_cli, path, model, [None, "x = 30", "x = 50"])
    assert after_load["x = 30"]["files_read"] > split["x = 30"]["files_read"]  # + the deltas

    # A major compaction folds the deltas into a base split the same way.
    compacted = lakectl_cli("compact", path, "--major", "--json")
    assert compacted.code == 0, compacted.err
    (base,) = [path / d for d in compacted.json["added"] if d.startswith(f"ds={DAYS[0]}/base_")]
    assert base.name.startswith("base_0000003_v")  # the load's write id 3 folded in
    assert _subdirs(base) == {"x=6", "x=20", "x=30", "x=40", DEFAULT}
    check(lakectl_cli, path, model, [None, "x = 50 AND ds = '2024-01-01'"])
    _assert_point_query_pruned(lakectl_cli, path, model)

    # Time travel reads the base and mapping of its version.
    old = lakectl_cli("snapshot", path, "--version", "1", "--where", "x = 30", "--json")
    assert old.code == 0 and old.json["scan"]["files_read"] == plain["x = 30"]["files_read"]


def _assert_point_query_pruned(cli, path: Path, model: Model) -> None:
    """A point query on a skewed value reads at most that value's share of the partition + 5%."""
    day = DAYS[0]
    result = cli("snapshot", path, "--where", f"ds = '{day}' AND x = 30", "--json")
    assert _rows(result) == model.expected(f"ds = '{day}' AND x = 30")
    scan = result.json["scan"]
    partition = next(
        p for p in cli("show", path, "--json").json["partitions"] if p["partition"] == f"ds={day}"
    )
    in_day = [r for r in model.rows.values() if r["ds"] == day]
    share = sum(1 for r in in_day if r["x"] == 30) / len(in_day)
    assert scan["partitions_read"] == 1
    assert scan["bytes_read"] / partition["bytes"] <= share + 0.05, (scan, partition, share)


def test_several_columns_off_and_a_reader_without_the_mapping(table, lakectl_cli, tmp_path):
    path, model = table
    keys = "(6,'a'),(6,'b'),(20,'c')"
    split = lakectl_cli("list-bucket", path, "--column", "x", "--column", "y", "--keys", keys)
    assert split.code == 0, split.err
    base = _base_dirs(path, DAYS[1])[-1]
    assert _subdirs(base) == {"x=6/y=a", "x=6/y=b", "x=20/y=c", f"{DEFAULT}/{DEFAULT}"}
    scans = check(lakectl_cli, path, model, [None, "x = 6", "y = 'c'", "x = 6 AND y = 'b'"])
    default = f"{DEFAULT}/{DEFAULT}"
    assert scans["x = 6"]["files_read"] == _files_in(path, {"x=6/y=a", "x=6/y=b", default})
    assert scans["y = 'c'"]["files_read"] == _files_in(path, {"x=20/y=c", default})
    assert scans["x = 6 AND y = 'b'"]["files_read"] == _files_in(path, {"x=6/y=b"})

    # A reader that knows no mapping (a copy without the lakectl log, read as Hive would).
    copy = tmp_path / "copy"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("_lakectl"))
    for stale in copy.glob("ds=*/*"):  # what `clean` would delete: only the newest base stays
        if stale.name != _base_dirs(path, stale.parent.name[3:])[-1].name:
            shutil.rmtree(stale)
    hive = lakectl_cli("snapshot", copy, "--json")
    assert sorted(tuple(r.values()) for r in hive.json["rows"]) == sorted(
        (r["id"], r["x"], r["y"], r["val"], r["ds"]) for r in model.rows.values()
    )

    # A Type 7 statement that moves stored x=555.. rows to x=6: `x = 6` must not trust directories.
    install_x_to_6(lakectl_cli, path, model, tmp_path)
    typed = check(lakectl_cli, path, model, ["x = 6"])
    assert typed["x = 6"]["files_read"] == typed["x = 6"]["files"]

    off = lakectl_cli("list-bucket", path, "--off", "--json")
    assert off.code == 0, off.err
    assert all(p["after"] is None for p in off.json["partitions"])
    assert _subdirs(_base_dirs(path, DAYS[0])[-1]) == {"."}
    shown = lakectl_cli("show", path, "--json").json["partitions"]
    assert [p["list_bucketing"] for p in shown] == [None, None]
    check(lakectl_cli, path, model, [None, "x = 6"])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--column", "x"), 2, "choose exactly one of --keys, --auto or --off"),
        (("--column", "x", "--keys", "6", "--auto"), 2, "(got --keys and --auto)"),
        (("--off", "--column", "x"), 2, "--off takes no --column"),
        (("--column", "ds", "--keys", "6"), 2, "--column 'ds' is a partition column"),
        (("--column", "z", "--keys", "6"), 65, "--column 'z' is not a column of the table"),
        (("--column", "amount", "--keys", "6"), 2, "--column 'amount' has type double"),
        (("--column", "x", "--keys", "six"), 2, "six is not a int value for column 'x'"),
        (("--column", "x", "--keys", "6,6"), 2, "--keys: value 6 is given twice"),
        (("--column", "x", "--auto", "--min-share", "2"), 2, "--min-share 2: must be in (0, 1]"),
        (("--column", "x", "--keys", "6", "--partition", "ds=9"), 2, "no such partition"),
    ],
)
def test_refusals(tmp_path, lakectl_cli, args, code, message):
    path = tmp_path / "r"
    schema = "id bigint, x int, amount double, ds string"
    assert lakectl_cli("create", path, "--schema", schema, "--partition-by", "ds").code == 0
    result = lakectl_cli("list-bucket", path, *args, "--json")
    assert result.code == code, result.out
    assert message in result.json["error"]["message"]
    assert len(list((path / "_lakectl" / "log").iterdir())) == 1  # nothing committed


def test_bucketed_tables_are_refused(tmp_path, lakectl_cli):
    path = tmp_path / "b"
    schema = "id bigint, x int"
    assert (
        lakectl_cli(
            "create", path, "--schema", schema, "--primary-key", "id", "--buckets", "4"
        ).code
        == 0
    )
    result = lakectl_cli("list-bucket", path, "--column", "x", "--keys", "6", "--json")
    assert result.code == 2
    assert result.json["error"]["message"].startswith(
        "the table is bucketed (--buckets 4): list bucketing cannot be combined with bucketing"
    )


def test_a_load_committing_during_the_rewrite(table, lakectl_cli, tmp_path, monkeypatch):
    """The rewrite keeps row identities: a load that commits while it runs is not lost, its
    deletes still find their rows in the new split base, and neither has to retry."""
    from lakectl.ops.context import Context
    from lakectl.ops.list_bucket import ListBucketOptions, list_bucket

    path, model = table
    install_x_to_6(lakectl_cli, path, model, tmp_path)  # also when this test runs alone
    go = tmp_path / "go"
    monkeypatch.setenv("LAKECTL_FAILPOINTS", f"list_bucket.before_commit=wait:{go}")
    options = ListBucketOptions(columns=("x",), keys="6,20,30")
    txns = path / "_lakectl" / "txns"

    def rewrites() -> int:
        return sum("list-bucket" in f.read_text() for f in txns.glob("*.json"))

    before = rewrites()
    with ThreadPoolExecutor(1) as pool:
        rewrite = pool.submit(list_bucket, Context(), str(path), options)
        # The load starts once the rewrite has read the table and taken its write id.
        try:
            deadline = time.time() + 300
            while rewrites() == before:
                assert time.time() < deadline and not rewrite.done(), "list-bucket did not start"
                time.sleep(0.2)
            loaded = lakectl_cli(
                "load", path, model.batch(50, updates=300, deletes=300), "--mode", "cdc", "--json"
            )
        finally:
            go.touch()
        result = rewrite.result(timeout=600)
    assert loaded.code == 0, loaded.err
    assert result.log_seq is not None
    history = [e["operation"] for e in lakectl_cli("history", path, "--json").json["commits"]]
    assert history[-2:] == ["cdc", "list-bucket"]
    scans = check(lakectl_cli, path, model, [None, "x = 30"])
    # The installed `UPDATE t SET x = 6 ...` writes x: a read that applies it must not prune on x.
    assert scans["x = 30"]["files_read"] == scans["x = 30"]["files"]


def test_a_rewrite_killed_before_commit_changes_nothing(
    tmp_path, lakectl_cli, spark, jvm_processes
):
    """``list-bucket`` killed by a real kill -9 after writing its split bases but before its
    commit: the table reads exactly as before, a rerun completes, and ``clean`` removes the
    leftovers."""
    path = tmp_path / "t"
    model = Model(tmp_path, seed=11)
    assert lakectl_cli("create", path, "--schema", SCHEMA, "--primary-key", "id",
                       "--partition-by", "ds").code == 0  # fmt: skip
    loaded = lakectl_cli("load", path, model.batch(120), "--mode", "cdc", "--engine", "arrow")
    assert loaded.code == 0, loaded.err
    log_before = sorted(p.name for p in (path / "_lakectl" / "log").iterdir())
    killed = run_crashing(
        "list-bucket", path, "--column", "x", "--keys", "6,20,30",
        failpoint="list_bucket.before_commit",
    )  # fmt: skip
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert sorted(p.name for p in (path / "_lakectl" / "log").iterdir()) == log_before
    leftovers = [b for day in DAYS for b in _base_dirs(path, day)]
    assert leftovers, "the killed rewrite should have written its (uncommitted) bases"
    check(lakectl_cli, path, model, [None, "x = 30"])
    rerun = lakectl_cli("list-bucket", path, "--column", "x", "--keys", "6,20,30", "--json")
    assert rerun.code == 0, rerun.err
    scans = check(lakectl_cli, path, model, [None, "x = 30", "x = 50"])
    assert scans["x = 30"]["files_read"] < scans["x = 30"]["files"]
    cleaned = lakectl_cli("clean", path, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    for day in DAYS:  # the killed run's bases are gone; the committed split base stays
        assert len(_base_dirs(path, day)) == 1, _base_dirs(path, day)
        assert not set(_base_dirs(path, day)) & set(leftovers)
    check(lakectl_cli, path, model, [None, "x = 30"])
