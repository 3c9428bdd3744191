"""``apply-updates --materialize --until T`` end to end, through the real CLI on real files.

Reads at T or later must not change; reads before T (``--as-of``, ``--known-at``, ``--raw``)
must still give the original answers; loads, statements and compactions after a materialize
must keep working on the folded rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_lakectl_until_crash
from tests.support.doctors_seed import SCHEMA, seed_listings

REPO = Path(__file__).resolve().parents[2]
AVRO = REPO / "sample_data/doctors/doctors.avro"
UPDATES = REPO / "sample_data/doctors/updates.sql"
DOCTOR_READS = {
    "now": (),
    "raw": ("--as-of", "-1"),
    "2014-01-01": ("--as-of", "2014-01-01"),
    "2014-09-01": ("--as-of", "2014-09-01"),
}


class Lake:
    """The in-process CLI bound to one warehouse."""

    def __init__(self, cli, warehouse: Path) -> None:
        self.cli, self.warehouse = cli, warehouse

    def __call__(self, *args: object):
        return self.cli("--warehouse", self.warehouse, *args)

    def ok(self, *args: object):
        result = self(*args, "--json")
        assert result.code == 0, result.err
        return result.json

    def rows(self, table: str, *read: str) -> list[tuple]:
        """The snapshot's rows, in the order read."""
        return [tuple(r.values()) for r in self.ok("snapshot", table, *read)["rows"]]

    def reads(self, table: str, reads: dict[str, tuple[str, ...]]) -> dict[str, list[tuple]]:
        return {name: sorted(self.rows(table, *args)) for name, args in reads.items()}


def _doctors(lake: Lake) -> None:
    assert lake("create", "doctors", "--schema", SCHEMA).code == 0
    lake.ok(
        "load", "doctors", AVRO, "--mode", "append", "--effective-from", "0", "--engine", "arrow"
    )
    lake.ok("apply-updates", "doctors", UPDATES)


def test_doctors_materialized_in_two_steps(tmp_path, lakectl_cli, spark):
    lake = Lake(lakectl_cli, tmp_path)
    _doctors(lake)
    raw, now, early, _ = seed_listings()
    before = lake.reads("doctors", DOCTOR_READS)
    assert before["now"] == sorted(now) and before["raw"] == sorted(raw)
    committed = lake.ok("history", "doctors")["commits"][-1]["committed_at"]

    first = lake.ok("apply-updates", "doctors", "--materialize", "--until", "2014-01-01")
    assert first["counts"] == {"rewritten": 1, "deleted": 0, "retired": 1}
    assert first["retired_statements"] == 1 and first["active_statements"] == 1
    assert lake.reads("doctors", DOCTOR_READS) == before
    listed = lake.ok("updates", "doctors")["statements"]
    assert [e["sql"] for e in listed] == ["DELETE FROM doctors WHERE first_name = 'Colin'"]
    assert "number = 12" not in (tmp_path / "doctors" / ".updates").read_text()

    second = lake.ok("apply-updates", "doctors", "--materialize", "--until", "2014-09-01")
    assert second["counts"] == {"rewritten": 0, "deleted": 1, "retired": 1}
    assert lake.reads("doctors", DOCTOR_READS) == before
    assert lake.ok("updates", "doctors")["statements"] == []
    # what the seed shows, still: raw in file order (no folded row is read), early as a set
    assert lake.rows("doctors", "--as-of", "-1") == raw
    assert lake.rows("doctors", "--raw") == raw
    assert sorted(lake.rows("doctors", "--as-of", "2014-01-01")) == sorted(early)
    # transaction time: before the first materialize committed, the original statements apply
    assert sorted(lake.rows("doctors", "--known-at", str(committed))) == before["now"]

    history = lake.ok("history", "doctors")["commits"]
    assert [h["operation"] for h in history[-2:]] == ["materialize", "materialize"]
    assert history[-1]["counts"] == second["counts"]


def test_materialize_refusals_and_no_op(tmp_path, lakectl_cli, spark):
    lake = Lake(lakectl_cli, tmp_path)
    _doctors(lake)
    commits = len(lake.ok("history", "doctors")["commits"])

    nothing = lake.ok("apply-updates", "doctors", "--materialize", "--until", "-5")
    assert nothing["version"] is None and nothing["active_statements"] == 2
    text = lake("apply-updates", "doctors", "--materialize", "--until", "-5")
    assert "nothing to materialize" in text.out and "nothing was committed" in text.out

    future = lake("apply-updates", "doctors", "--materialize", "--until", "2999-01-01", "--json")
    assert future.code == 2
    assert "is in the future" in future.json["error"]["message"]
    with_file = lake("apply-updates", "doctors", UPDATES, "--materialize", "--until", "0")
    assert with_file.code == 2 and "takes no FILE" in with_file.err
    no_until = lake("apply-updates", "doctors", "--materialize")
    assert no_until.code == 2 and "needs --until" in no_until.err
    assert len(lake.ok("history", "doctors")["commits"]) == commits


def test_loads_statements_and_compaction_after_materialize(tmp_path, lakectl_cli, spark):
    lake = Lake(lakectl_cli, tmp_path)
    _doctors(lake)
    raw, now, early, _ = seed_listings()
    lake.ok("apply-updates", "doctors", "--materialize", "--until", "2014-09-01")

    more = tmp_path / "more.csv"
    more.write_text(
        "number,first_name,last_name,extra_field\n6,Colin,Baker,back\n2,Patrick,T,again\n"
    )
    lake.ok("load", "doctors", more, "--mode", "append")
    fix = tmp_path / "fix.sql"
    fix.write_text("UPDATE doctors SET extra_field = 'fixed' WHERE number = 12;\n")
    lake.ok("apply-updates", "doctors", fix)
    # retired statements are data now: rows loaded later are not rewritten by them
    loaded = [(6, "Colin", "Baker", "back"), (2, "Patrick", "T", "again")]
    patched = [(n, f, last, "fixed" if n == 12 else x) for n, f, last, x in now]
    expected = sorted(patched + loaded)
    assert sorted(lake.rows("doctors")) == expected

    reads = {"now": (), "raw": ("--raw",), "early": ("--as-of", "2014-01-01")}
    before = lake.reads("doctors", reads)
    assert before["raw"] == sorted(raw + loaded)
    early_patched = [(n, f, last, "fixed" if n == 12 else x) for n, f, last, x in early]
    # The later load names no valid time, so its rows count at every time: as of 2014-01-01 the
    # statements effective by then (renumber 2 -> 12, the fix) apply to them too.
    loaded_early = [(6, "Colin", "Baker", "back"), (12, "Patrick", "T", "fixed")]
    assert before["early"] == sorted(early_patched + loaded_early)
    compacted = lake.ok("compact", "doctors", "--major")
    assert compacted["partitions"], compacted
    assert lake.reads("doctors", reads) == before


PART_SCHEMA = "id int, val string, part string"
PART_UPDATES = """\
-- time=100
UPDATE t SET part = 'b' WHERE id = 1;
DELETE FROM t WHERE id = 6;
UPDATE t SET val = concat(val, '!') WHERE part = 'b';
-- time=300
UPDATE t SET val = 'late' WHERE id = 2;
"""
PART_READS = {
    "raw": ("--raw",),
    "50": ("--as-of", "50"),
    "100": ("--as-of", "100"),
    "now": (),
}


def test_partitioned_keyed_table(tmp_path, lakectl_cli, spark):
    lake = Lake(lakectl_cli, tmp_path)
    created = lake("create", "t", "--schema", PART_SCHEMA, "--primary-key", "id",
                   "--partition-by", "part")  # fmt: skip
    assert created.code == 0, created.err
    base = tmp_path / "base.csv"
    rows = [f"{i},v{i},{'a' if i <= 4 else 'b'}" for i in range(1, 9)]
    base.write_text("id,val,part\n" + "\n".join(rows) + "\n")
    lake.ok("load", "t", base, "--mode", "upsert", "--effective-from", "0", "--engine", "arrow")
    updates = tmp_path / "t.updates"
    updates.write_text(PART_UPDATES)
    lake.ok("apply-updates", "t", updates)
    before = lake.reads("t", PART_READS)
    assert (1, "v1!", "b") in before["now"] and (1, "v1", "a") in before["50"]

    result = lake.ok("apply-updates", "t", "--materialize", "--until", "250")
    assert result["counts"] == {"rewritten": 4, "deleted": 1, "retired": 3}
    assert lake.reads("t", PART_READS) == before
    record = lake.ok("history", "t")["commits"][-1]
    assert record["operation"] == "materialize"
    assert sorted({a.split("/")[0] for a in result["added"]}) == ["part=a", "part=b"]

    # a later upsert finds the moved row by its key in its new partition
    change = tmp_path / "change.csv"
    change.write_text("id,val,part\n1,new1,b\n9,v9,a\n")
    lake.ok("load", "t", change, "--mode", "upsert", "--effective-from", "1000")
    now = sorted(lake.rows("t"))
    assert [r for r in now if r[0] == 1] == [(1, "new1", "b")]
    assert (9, "v9", "a") in now and (2, "late", "a") in now and len(now) == 8
    assert sorted(lake.rows("t", "--as-of", "50")) == before["50"]


@pytest.mark.slow
def test_killed_materialize_changes_nothing(tmp_path, lakectl_cli, spark):
    """Stopped in this process as a kill would stop it (no abort runs); real kills of this
    write protocol: test_crash_and_concurrency."""
    lake = Lake(lakectl_cli, tmp_path)
    _doctors(lake)
    before = lake.reads("doctors", {"now": (), "raw": ("--raw",)})
    history = lake.ok("history", "doctors")["commits"]
    written = {p for p in (tmp_path / "doctors").rglob("*") if p.is_file()}
    killed = run_lakectl_until_crash(
        "--warehouse", tmp_path, "apply-updates", "doctors", "--materialize",
        "--until", "2014-09-01", failpoint="materialize.before_commit",
    )  # fmt: skip
    assert killed.code == 137, killed.err[-2000:]
    assert {p for p in (tmp_path / "doctors").rglob("*") if p.is_file()} > written  # left behind
    assert lake.ok("history", "doctors")["commits"] == history
    assert len(lake.ok("updates", "doctors")["statements"]) == 2
    assert lake.reads("doctors", {"now": (), "raw": ("--raw",)}) == before
    # the crashed attempt's files are invisible, and a rerun completes
    rerun = lake.ok("apply-updates", "doctors", "--materialize", "--until", "2014-09-01")
    assert rerun["retired_statements"] == 2
    assert lake.reads("doctors", {"now": (), "raw": ("--raw",)}) == before
