"""``list-bucket --engine arrow|auto``: the rewrite in the lakectl process, without a JVM (``java``
is hidden for each test). Both engines' files and records are compared in
tests/ops/test_list_bucket_engines.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.paths import REPO

NO_JAVA = REPO / "tests" / "support" / "no_java"
DEFAULT = "HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"


@pytest.fixture(autouse=True)
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever would start a JVM finds a `java` that fails."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{NO_JAVA}:{os.environ['PATH']}")


@pytest.fixture
def table(tmp_path: Path, lakectl_cli) -> Path:
    path = tmp_path / "t"
    made = lakectl_cli("create", path, "--schema", "id bigint, x int, ds string",
                       "--primary-key", "id", "--partition-by", "ds")  # fmt: skip
    assert made.code == 0, made.err
    rows = "".join(f"{i},{'' if i % 7 == 0 else i % 3},d{i % 2}\n" for i in range(1, 31))
    (tmp_path / "a.csv").write_text("id,x,ds\n" + rows)
    loaded = lakectl_cli("load", path, tmp_path / "a.csv", "--engine", "arrow")
    assert loaded.code == 0, loaded.err
    return path


def _rows(lakectl_cli, table: Path, *args: str) -> list[tuple]:
    done = lakectl_cli("snapshot", table, "--engine", "arrow", "--json", *args)
    assert done.code == 0, done.err
    return sorted((r["id"], r["x"], r["ds"]) for r in done.json["rows"])


def test_list_bucket_with_the_arrow_engine(table, lakectl_cli) -> None:
    before = _rows(lakectl_cli, table)
    done = lakectl_cli("list-bucket", table, "--column", "x", "--keys", "1,2", "--engine", "arrow",
                       "--json")  # fmt: skip
    assert done.code == 0, done.err
    assert (done.json["engine"], done.json["engine_reason"]) == ("arrow", "asked for")
    assert done.json["rows_written"] == 30 and done.json["committed"]
    for day in ("d0", "d1"):
        base = next((table / f"ds={day}").glob("base_*"))
        assert sorted(p.name for p in base.iterdir()) == sorted(
            ["x=1", "x=2", DEFAULT, "_orc_acid_version", "_metadata_acid"]
        )
    assert _rows(lakectl_cli, table) == before
    assert _rows(lakectl_cli, table, "--where", "x = 2") == [r for r in before if r[1] == 2]
    # Under auto, a small rewrite runs in Arrow too; back to plain.
    off = lakectl_cli("list-bucket", table, "--off", "--engine", "auto", "--verbose")
    assert off.code == 0, off.err
    assert "engine: arrow (auto: " in off.err and "rewrote 2 partition(s), 30 rows" in off.out
    assert _rows(lakectl_cli, table) == before


def test_auto_values_are_counted_without_a_jvm(table, lakectl_cli) -> None:
    skew = lakectl_cli("skew", table, "--column", "x", "--engine", "arrow", "--json")
    assert skew.code == 0, skew.err
    assert (skew.json["engine"], skew.json["engine_reason"]) == ("arrow", "asked for")
    top = {
        p["partition"]: [(v["values"], v["rows"]) for v in p["top"]]
        for p in skew.json["partitions"]
    }
    assert top == {
        "ds=d0": [(["0"], 5), (["1"], 4), (["2"], 4), ([None], 2)],
        "ds=d1": [(["2"], 5), (["0"], 4), (["1"], 4), ([None], 2)],
    }
    done = lakectl_cli("list-bucket", table, "--column", "x", "--auto", "--engine", "arrow",
                       "--json")  # fmt: skip
    assert done.code == 0, done.err
    assert (done.json["engine"], done.json["rows_written"]) == ("arrow", 30)
    after = {p["partition"]: p["after"]["values"] for p in done.json["partitions"]}
    assert after == {"ds=d0": [["0"], ["1"], ["2"]], "ds=d1": [["2"], ["0"], ["1"]]}


def test_a_column_without_one_text_per_value_is_counted_by_spark_only(tmp_path, lakectl_cli):
    (tmp_path / "d.csv").write_text("id,v\n1,1.5\n2,2.5\n")
    made = lakectl_cli("load", tmp_path / "d", tmp_path / "d.csv", "--create", "--engine", "arrow")
    assert made.code == 0, made.err
    done = lakectl_cli("skew", tmp_path / "d", "--column", "v", "--engine", "arrow")
    assert done.code == 2
    assert "cannot run this: counting values of v (double)" in done.err
    assert "hint: use --engine spark" in done.err and "Traceback" not in done.err
