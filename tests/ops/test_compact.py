"""Compaction end to end through the CLI, on real Spark: the snapshot is the same before and after
minor, major and auto compaction; loads after a compaction read correctly; a second run, a dry run
and write ids still open change nothing they must not.

Each test reads its first snapshot with Spark and checks that pyarrow reads the same rows; the
other checks read with pyarrow (``--engine arrow``: no Spark job for a check). The tests that
start from two loads work on a copy of one table loaded once per module.
"""

from __future__ import annotations

import copy
import random
import re
import shutil
from pathlib import Path

import pyorc
import pytest

from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore
from tests.support.cli import run_lakectl_until_crash

SCHEMA = "id bigint, change_ts timestamp, val string, part string"
HEADER = "op_code,id,change_ts,val,part"
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
PARTS = ["a", "b", "x/y"]  # "x/y" needs Hive's path escaping


class Batches:
    """Random CDC batches (unique keys per batch, newer change times) and the expected rows."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.tmp, self.rng, self.rows, self.next_id, self.no = tmp, random.Random(seed), {}, 1, 0

    def write(self, inserts: int, updates: int, deletes: int) -> Path:
        self.no += 1
        ts = f"2024-01-{self.no:02d} 00:00:00"
        lines = [HEADER]
        existing = sorted(self.rows)
        self.rng.shuffle(existing)
        for key in existing[:updates]:
            val = f"v{self.no}_{key}"
            self.rows[key] = (val, self.rows[key][1])
            lines.append(f"U,{key},{ts},{val},{self.rows[key][1]}")
        for key in existing[updates : updates + deletes]:
            lines.append(f"D,{key},{ts},,{self.rows.pop(key)[1]}")
        for _ in range(inserts):
            key, self.next_id = self.next_id, self.next_id + 1
            self.rows[key] = (f"v{self.no}_{key}", self.rng.choice(PARTS))
            lines.append(f"I,{key},{ts},{self.rows[key][0]},{self.rows[key][1]}")
        path = self.tmp / f"batch_{self.no}.csv"
        path.write_text("\n".join(lines) + "\n")
        return path

    def expected(self) -> list[tuple]:
        return sorted((k, v, p) for k, (v, p) in self.rows.items())


def _rows(result) -> list[tuple]:
    assert result.code == 0, result.err
    return sorted((r["id"], r["change_ts"], r["val"], r["part"]) for r in result.json["rows"])


def _read(cli, table: Path, *extra: object) -> list[tuple]:
    """The snapshot's rows read with pyarrow (no Spark job)."""
    return _rows(cli("snapshot", table, *extra, "--engine", "arrow", "--json"))


def _read_with_spark(cli, table: Path) -> list[tuple]:
    """The snapshot's rows read with Spark, checked against pyarrow's read of the same state."""
    rows = _rows(cli("snapshot", table, "--json"))
    assert _read(cli, table) == rows
    return rows


def _short(rows: list[tuple]) -> list[tuple]:
    return [(i, v, p) for i, _, v, p in rows]


def _store(table: Path) -> TableStore:
    storage, path = storage_for(str(table))
    return TableStore(storage, path)


def _files(table: Path) -> dict[str, int]:
    return {
        str(p.relative_to(table)): p.stat().st_mtime_ns for p in table.rglob("*") if p.is_file()
    }


def _setup(tmp_path: Path, cli, seed: int, loads: int) -> tuple[Path, Batches]:
    table = tmp_path / "t"
    created = cli(
        "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "part"
    )
    assert created.code == 0, created.err
    batches = Batches(tmp_path, seed)
    for n in range(loads):
        path = batches.write(inserts=60 if n == 0 else 8, updates=10, deletes=5)
        # The starting point, loaded by the Arrow engine (the same files and log records); the
        # loads after a compaction are Spark's.
        loaded = cli("load", table, path, *CDC, "--engine", "arrow", "--json")
        assert loaded.code == 0, loaded.err
    return table, batches


@pytest.fixture(scope="module")
def two_loads(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Batches]:
    """A table after two random CDC loads over three partitions, made once per module."""
    from tests.support.cli import run_lakectl

    return _setup(tmp_path_factory.mktemp("two_loads"), run_lakectl, seed=3, loads=2)


@pytest.fixture
def loaded(two_loads: tuple[Path, Batches], tmp_path: Path) -> tuple[Path, Batches]:
    """A byte-for-byte copy of :func:`two_loads`'s table and its expected rows, for this test."""
    source, source_batches = two_loads
    table = tmp_path / "t"
    shutil.copytree(source, table)
    batches = copy.deepcopy(source_batches)
    batches.tmp = tmp_path
    return table, batches


def _check_compacted_dir(directory: Path, *, base: bool) -> None:
    """Compactor markers, bucket files, events ordered by identity, identities unique."""
    assert (directory / "_orc_acid_version").read_text() == "2"
    assert '"compacted"' in (directory / "_metadata_acid").read_text()
    for f in directory.glob("bucket_*"):
        with f.open("rb") as handle:
            events = list(pyorc.Reader(handle))
        keys = [(e[1], e[2], e[3]) for e in events]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert all((e[2] >> 16) & 0xFFF == int(f.name[7:]) for e in events)
        if base:
            assert all(e[0] == 0 and e[5] is not None for e in events)


def test_minor_major_and_auto_keep_the_snapshot(tmp_path, lakectl_cli, spark):
    table, batches = _setup(tmp_path, lakectl_cli, seed=7, loads=3)
    before = _read_with_spark(lakectl_cli, table)
    assert _short(before) == batches.expected()
    at_v2 = _rows(lakectl_cli("snapshot", table, "--version", 2, "--json"))
    assert _read(lakectl_cli, table, "--version", 2) == at_v2

    minor = lakectl_cli("compact", table, "--minor", "--json")
    assert minor.code == 0, minor.err
    assert minor.json["committed"] and minor.json["obsolete"]
    assert {p["type"] for p in minor.json["partitions"]} == {"minor"}
    assert sorted(minor.json["added"]) == sorted(
        f"part={p}/{kind}_0000001_0000003"
        for p in ("a", "b", "x%2Fy")
        for kind in ("delta", "delete_delta")
    )
    assert _read(lakectl_cli, table) == before
    shown = lakectl_cli("show", table, "--json").json
    assert [(p["deltas"], p["delete_deltas"], p["base"]) for p in shown["partitions"]] == [
        (1, 1, None)
    ] * 3
    for p in shown["partitions"]:  # every per-load directory is now obsolete
        assert p["obsolete_dirs"] == len(list((table / p["partition"]).glob("*_0000"))) >= 4
    for d in table.glob("part=*/*delta_0000001_0000003"):
        _check_compacted_dir(d, base=False)
    # Time travel to before the compaction reads the old directories.
    assert _read(lakectl_cli, table, "--version", 2) == at_v2

    # Nothing changed: a second run does nothing, and says why.
    log_before = sorted((table / "_lakectl" / "log").iterdir())
    again = lakectl_cli("compact", table, "--minor", "--json")
    assert again.code == 0 and not again.json["committed"]
    assert {p["reason"] for p in again.json["partitions"]} == {
        "nothing to merge: the deltas cover one write-id range (1..3)"
    }
    assert sorted((table / "_lakectl" / "log").iterdir()) == log_before

    # A load after the compaction: its deletes point at identities the compaction kept.
    loaded = lakectl_cli("load", table, batches.write(inserts=5, updates=15, deletes=10), *CDC)
    assert loaded.code == 0, loaded.err
    after_load = _read(lakectl_cli, table)
    assert _short(after_load) == batches.expected()

    major = lakectl_cli("compact", table, "--major", "--json")
    assert major.code == 0, major.err
    assert {p["type"] for p in major.json["partitions"]} == {"major"}
    assert _read_with_spark(lakectl_cli, table) == after_load
    shown = lakectl_cli("show", table, "--json").json
    assert [(p["base"], p["deltas"], p["delete_deltas"]) for p in shown["partitions"]] == [
        ("base_0000004_v0000004", 0, 0)
    ] * 3
    assert sum(p["rows"] for p in shown["partitions"]) == len(batches.rows)
    for d in table.glob("part=*/base_0000004_v0000004"):
        _check_compacted_dir(d, base=True)
    again = lakectl_cli("compact", table, "--major", "--json")
    assert not again.json["committed"]
    assert _read(lakectl_cli, table, "--version", 2) == at_v2

    # Deltas above the base, then auto: they are large next to the base, so major.
    path = batches.write(inserts=10, updates=30, deletes=15)
    assert lakectl_cli("load", table, path, *CDC).code == 0
    expected = _read(lakectl_cli, table)
    assert _short(expected) == batches.expected()
    auto = lakectl_cli("compact", table, "--auto", "--json")
    assert auto.code == 0, auto.err
    assert {p["type"] for p in auto.json["partitions"]} == {"major"}
    assert all("of the base's" in p["reason"] for p in auto.json["partitions"])
    assert _read(lakectl_cli, table) == expected
    assert not lakectl_cli("compact", table, "--auto", "--json").json["committed"]

    listed = lakectl_cli("compactions", table, "--json")
    assert listed.code == 0, listed.err
    assert [(e["type"], e["state"]) for e in listed.json["compactions"]] == [
        ("minor", "ready for cleaning")
    ] * 3 + [("major", "ready for cleaning")] * 6
    only_b = lakectl_cli("compactions", table, "--partition", "part=b", "--json").json[
        "compactions"
    ]
    assert [e["partition"] for e in only_b] == ["part=b"] * 3
    assert only_b[0]["outputs"] == [
        "part=b/delta_0000001_0000003",
        "part=b/delete_delta_0000001_0000003",
    ]
    assert only_b[1]["outputs"] == ["part=b/base_0000004_v0000004"]
    text = lakectl_cli("compactions", table)
    assert text.code == 0 and "major" in text.out and "ready" in text.out


def test_dry_run_changes_nothing_and_open_write_ids_block(loaded, lakectl_cli, spark):
    table, batches = loaded
    files = _files(table)
    dry = lakectl_cli(
        "compact", table, "--auto", "--dry-run", "--delta-num-threshold", "1", "--json"
    )
    assert dry.code == 0, dry.err
    assert [(p["partition"], p["type"]) for p in dry.json["partitions"]] == [
        ("part=a", "major"),
        ("part=b", "major"),
        ("part=x%2Fy", "major"),
    ]
    for p in dry.json["partitions"]:
        assert re.fullmatch(
            r"\d deltas \(> compactor.delta.num.threshold=1\) and no base", p["reason"]
        )
    assert not dry.json["committed"] and _files(table) == files
    text = lakectl_cli("compact", table, "--auto", "--dry-run")
    assert text.code == 0 and "below thresholds" in text.out
    assert _files(table) == files

    # A writer that allocated write id 3 and has not finished; write id 4 commits after it.
    store = _store(table)
    assert store.allocate_write_id("upsert") == 3
    assert (
        lakectl_cli("load", table, batches.write(inserts=5, updates=10, deletes=5), *CDC).code == 0
    )
    expected = _read_with_spark(lakectl_cli, table)
    assert _short(expected) == batches.expected()
    major = lakectl_cli("compact", table, "--major", "--json")
    assert major.code == 0, major.err
    assert major.json["lowest_open_write_id"] == 3
    for p in major.json["partitions"]:
        assert p["outputs"] == [f"{p['partition']}/base_0000002_v0000004"]
        assert all("0000004_0000004" in w for w in p["waiting"]) and p["waiting"]
    assert _read(lakectl_cli, table) == expected

    # The writer gives up: now everything can be compacted.
    store.mark_aborted(3, "test")
    major = lakectl_cli("compact", table, "--major", "--json")
    assert major.code == 0 and major.json["lowest_open_write_id"] is None
    assert {o for p in major.json["partitions"] for o in p["outputs"]} == {
        f"part={p}/base_0000004_v0000004" for p in ("a", "b", "x%2Fy")
    }
    assert _read(lakectl_cli, table) == expected

    bad = lakectl_cli("compact", table, "--major", "--partition", "part=zzz", "--json")
    assert bad.code == 2 and "no such partition" in bad.out + bad.err
    none = lakectl_cli("compact", table)
    assert none.code == 2 and "--minor, --major or --auto" in none.out + none.err
    files = _files(table)
    both = lakectl_cli("compact", table, "--minor", "--major")
    assert both.code == 2 and "(not --minor and --major)" in both.out + both.err
    outside = lakectl_cli("compact", table, "--major", "--delta-num-threshold", "3")
    assert outside.code == 2
    assert "--delta-num-threshold applies to --auto, not --major" in outside.out + outside.err
    assert _files(table) == files


@pytest.mark.slow
def test_auto_compacts_where_aborted_writers_left_directories(loaded, tmp_path, lakectl_cli, spark):
    table, batches = loaded
    expected = _read_with_spark(lakectl_cli, table)
    assert _short(expected) == batches.expected()
    # A load killed before its commit leaves its directories (parts a and b) behind.
    crashed = tmp_path / "crashed.csv"
    crashed.write_text(
        f"{HEADER}\nI,1001,2024-02-01 00:00:00,lost,a\nI,1002,2024-02-01 00:00:00,lost,b\n"
    )
    # (stopped in this process as a kill would stop it: no abort runs)
    run = run_lakectl_until_crash("load", table, crashed, *CDC, failpoint="load.before_commit")
    assert run.code == 137, run.err[-2000:]
    left = sorted(str(p.relative_to(table)) for p in table.glob("*/delta_0000003_*"))
    assert left == ["part=a/delta_0000003_0000003_0000", "part=b/delta_0000003_0000003_0000"]

    def auto(*extra: str) -> dict:
        result = lakectl_cli("compact", table, "--auto", *extra, "--json")
        assert result.code == 0, result.err
        return {p["partition"]: p for p in result.json["partitions"]}

    # Still open (its writer not known to be gone): compaction waits at it, counts nothing.
    waiting = auto("--aborted-threshold", "0", "--dry-run")
    assert all(p["type"] is None and "aborted" not in p["stats"] for p in waiting.values())

    _store(table).mark_aborted(3, "its process is gone")  # what clean does first
    files = _files(table)
    assert {k: p["type"] for k, p in auto("--dry-run").items()} == {
        "part=a": None,
        "part=b": None,
        "part=x%2Fy": None,
    }  # 1 is not more than the default 1000
    plan = auto("--aborted-threshold", "0", "--dry-run")
    assert {k: p["type"] for k, p in plan.items()} == {
        "part=a": "major",
        "part=b": "major",
        "part=x%2Fy": None,
    }
    assert plan["part=a"]["reason"].startswith(
        "1 aborted write id left directories here (> compactor.aborted.threshold=0): rewrite "
    )
    assert plan["part=a"]["stats"]["aborted_write_ids"] == 1
    assert _files(table) == files  # dry runs write nothing

    lakectl_cli("set", table, "compactor.aborted.threshold=0")
    done = lakectl_cli("compact", table, "--auto", "--json")
    assert done.code == 0 and done.json["committed"], done.err
    assert done.json["thresholds"]["compactor.aborted.threshold"] == 0
    assert sorted(o for p in done.json["partitions"] for o in p["outputs"]) == [
        "part=a/base_0000002_v0000003",
        "part=b/base_0000002_v0000003",
    ]
    assert _read(lakectl_cli, table) == expected
    cleaned = lakectl_cli("clean", table, "--json")
    assert cleaned.code == 0, cleaned.err
    assert not list(table.glob("*/delta_0000003_*"))
    assert _read(lakectl_cli, table) == expected


def test_valid_time_travel_skips_a_compaction_that_folded_in_a_later_change():
    from lakectl.table.log import CommitRecord, TableState

    def load(seq: int, write_id: int, effective: int) -> CommitRecord:
        return CommitRecord(seq, "cdc", 1000 + seq, write_id, effective_at=effective)

    compaction = CommitRecord(4, "compact", 2000, info={"max_write_id": 2}, added=("base_2",))
    state = TableState((load(1, 1, 100), load(2, 2, 300), load(3, 3, 200), compaction))
    assert compaction in state.effective_at(300).records
    # At 250 write id 2 is not effective yet: base_2 would show its rows, so it is not used.
    assert [r.seq for r in state.effective_at(250).records] == [1, 3]
    assert [r.seq for r in state.effective_at(150).records] == [1]


@pytest.mark.slow
def test_killed_compaction_leaves_the_table_as_it_was_and_a_rerun_completes(
    loaded, lakectl_cli, spark
):
    """Stopped in this process as a kill would stop it (no cleanup runs); real kills of a
    compaction: test_compact_processes."""
    table, _ = loaded
    before = _read_with_spark(lakectl_cli, table)
    log = sorted((table / "_lakectl" / "log").iterdir())
    killed = run_lakectl_until_crash(
        "compact", table, "--major", "--json", failpoint="compact.before_commit"
    )
    assert killed.code == 137, killed.err[-2000:]
    assert list(table.glob("part=*/base_*"))  # written, but never committed: invisible
    assert sorted((table / "_lakectl" / "log").iterdir()) == log
    assert _read(lakectl_cli, table) == before
    rerun = lakectl_cli("compact", table, "--major", "--json")
    assert rerun.code == 0 and rerun.json["committed"], rerun.err
    assert _read(lakectl_cli, table) == before
