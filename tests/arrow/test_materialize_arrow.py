"""``apply-updates --materialize --engine arrow``: Type 7 statements folded into the rows in the
lakectl process, without a JVM (``java`` is hidden for each test).

The table and statements of tests/ops/test_materialize.py::test_partitioned_keyed_table, with
the counts the Spark engine gives there; tests/ops/test_materialize_engines.py compares the
files and records of both engines.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ops.test_materialize import PART_READS, PART_SCHEMA, PART_UPDATES, Lake

NO_JAVA = Path(__file__).resolve().parents[1] / "support" / "no_java"
ARROW = ("--engine", "arrow")


@pytest.fixture(autouse=True)
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever would start a JVM finds a `java` that fails."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{NO_JAVA}:{os.environ['PATH']}")


def partitioned_table(lake: Lake, tmp_path: Path, name: str = "t") -> None:
    """The partitioned keyed table with its statements installed (loaded by the Arrow engine)."""
    created = lake("create", name, "--schema", PART_SCHEMA, "--primary-key", "id",
                   "--partition-by", "part")  # fmt: skip
    assert created.code == 0, created.err
    base = tmp_path / "base.csv"
    rows = [f"{i},v{i},{'a' if i <= 4 else 'b'}" for i in range(1, 9)]
    base.write_text("id,val,part\n" + "\n".join(rows) + "\n")
    lake.ok("load", name, base, "--mode", "upsert", "--effective-from", "0", *ARROW)
    updates = tmp_path / "t.updates"
    # One more statement that leaves its row as it was: nothing is rewritten for it.
    updates.write_text(
        PART_UPDATES.replace("-- time=300", "UPDATE t SET val = val WHERE id = 3;\n-- time=300")
    )
    lake.ok("apply-updates", name, updates)


def test_arrow_materialize_folds_statements_without_a_jvm(tmp_path, lakectl_cli):
    lake = Lake(lakectl_cli, tmp_path)
    partitioned_table(lake, tmp_path)
    reads = {name: (*args, *ARROW) for name, args in PART_READS.items()}
    before = lake.reads("t", reads)

    result = lake.ok("apply-updates", "t", "--materialize", "--until", "250", *ARROW)

    assert result["engine"] == "arrow"
    assert result["counts"] == {"rewritten": 4, "deleted": 1, "retired": 4}
    assert result["active_statements"] == 1
    assert lake.reads("t", reads) == before
    record = lake.ok("history", "t")["commits"][-1]
    assert record["operation"] == "materialize" and record["counts"] == result["counts"]
    assert sorted({a.split("/")[0] for a in result["added"]}) == ["part=a", "part=b"]

    # a later upsert finds the moved row by its key in its new partition
    change = tmp_path / "change.csv"
    change.write_text("id,val,part\n1,new1,b\n9,v9,a\n")
    lake.ok("load", "t", change, "--mode", "upsert", "--effective-from", "1000", *ARROW)
    now = sorted(lake.rows("t", *ARROW))
    assert [r for r in now if r[0] == 1] == [(1, "new1", "b")]
    assert (9, "v9", "a") in now and (2, "late", "a") in now and len(now) == 8
    assert sorted(lake.rows("t", "--as-of", "50", *ARROW)) == before["50"]


def test_arrow_materialize_of_nothing_commits_nothing(tmp_path, lakectl_cli):
    lake = Lake(lakectl_cli, tmp_path)
    partitioned_table(lake, tmp_path)
    commits = len(lake.ok("history", "t")["commits"])

    nothing = lake.ok("apply-updates", "t", "--materialize", "--until", "50", *ARROW)

    assert nothing["version"] is None and nothing["active_statements"] == 5
    assert len(lake.ok("history", "t")["commits"]) == commits
