"""Real processes around compaction: a compaction racing a stream of loads, a reader that planned
before both, and compactions (and a load) killed at several points, then rerun and cleaned.

Every `lakectl` process starts its own JVM, so one fixture starts them all at once; setup, the
stream of loads, the compaction killed after its commit and checks go through the in-process CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakectl.ops.context import Context
from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
from lakectl.scan.target import open_for_read
from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore
from tests.support.cli import run_lakectl_until_crash
from tests.support.process_loads import (
    BASE,
    CDC,
    CHANGES,
    OracleTable,
    finish,
    start_lakectl,
    wait_for_file,
    write_changes,
)

pytestmark = [pytest.mark.slow]

STREAM = [
    [("U", k, f"2024-02-0{n} 00:00:00", f"s{n}_{k}") for k in range(n, 25, 3)]
    + [("D", 10 + n, f"2024-02-0{n} 00:00:00", "")]
    + [("I", 30 + n, f"2024-02-0{n} 00:00:00", f"new{n}")]
    for n in (1, 2, 3)
]
CRASH_POINTS = ("compact.after_status", "compact.before_markers", "compact.after_commit")
# Killed by a real kill -9 of their own process: before the commit, where the compaction's status
# says "working" and only its dead process shows it failed. After the commit the log alone tells,
# so that run stops in this process where a kill would stop it (no cleanup runs).
REAL_KILLS = ("compact.after_status", "compact.before_markers")


def _store(path: Path) -> TableStore:
    storage, root = storage_for(str(path))
    return TableStore(storage, root)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, lakectl_cli, spark):
    root = tmp_path_factory.mktemp("compact_processes")
    base, changes = (
        write_changes(root / "base.csv", BASE),
        write_changes(root / "changes.csv", CHANGES),
    )
    stream = [write_changes(root / f"stream{n}.csv", rows) for n, rows in enumerate(STREAM, 1)]
    tables = {"race": OracleTable(root / "race", lakectl_cli)}
    tables["race"].load(base)
    tables["race"].load(changes)
    for name in ("load_crash", *CRASH_POINTS):
        tables[name] = tables["race"].copy(root / name.replace(".", "_"))
    # Copies read as the original does (each test below reads its table again).
    before = dict.fromkeys(tables, tables["race"].rows())
    # A reader of the race table plans its read now, before the compaction and the loads.
    reader = open_for_read(_store(tables["race"].path))
    started = {
        "compact": start_lakectl(
            "compact", tables["race"].path, "--major",
            failpoints=f"compact.after_status=touch:{root / 'planned'},"
            f"compact.before_commit=wait:{root / 'loaded'}", cwd=root,
        ),
        "load_crash": start_lakectl(
            "load", tables["load_crash"].path, stream[0], *CDC,
            failpoints="load.before_commit=crash", cwd=root,
        ),
        **{
            point: start_lakectl("compact", tables[point].path, "--major", failpoints=f"{point}=crash", cwd=root)
            for point in REAL_KILLS
        },
    }  # fmt: skip
    # This process is the stream of loads, one after another as a feed would run them: they
    # start once the compaction has planned, and all commit before it does.
    try:
        wait_for_file(root / "planned", started["compact"])
        for source in stream:
            tables["race"].load(source)
    finally:  # never leave the compaction waiting
        (root / "loaded").touch()
    results = {}
    for point in CRASH_POINTS:
        if point not in REAL_KILLS:
            killed = run_lakectl_until_crash(
                "compact", tables[point].path, "--major", "--json", failpoint=point
            )
            results[point] = (killed.code, killed.out, killed.err)
    results.update({name: finish(p) for name, p in started.items()})
    return {
        "tables": tables,
        "before": before,
        "results": results,
        "reader": reader,
    }


def test_compaction_racing_a_stream_of_loads(runs, lakectl_cli):
    code, _, err = runs["results"]["compact"]
    assert code == 0, err[-3000:]
    table = runs["tables"]["race"]  # its oracle has the loads of the stream too
    assert table.rows() == table.expected()
    records = table.log_records()
    [compaction] = [r for r in records if r["operation"] == "compact"]
    # They overlapped: loads committed after the compaction read the log and before it committed.
    between = [r for r in records if compaction["read_seq"] < r["seq"] < compaction["seq"]]
    assert [r["operation"] for r in between] == ["cdc"] * 3
    assert [
        e["state"] for e in lakectl_cli("compactions", table.path, "--json").json["compactions"]
    ] == ["ready for cleaning"] * len(compaction["info"]["compactions"])

    # The reader planned before everything: clean with the default window keeps its files, and
    # it reads exactly what it started with. (`--retain 0s` would take them: the documented limit.)
    keep = lakectl_cli("clean", table.path, "--json")
    assert keep.code == 0, keep.err
    assert [p for p in keep.json["deleted"] if not p.startswith("_lakectl/compactions/")] == []
    reader = runs["reader"]
    used = {d.relative for p in reader.plans for d in p.data_dirs + p.delete_deltas}
    would = lakectl_cli(
        "clean", table.path, "--retain", "0s", "--force", "--dry-run", "--json"
    ).json
    assert used <= {i["path"] for i in would["plan"]["delete"]}
    frame = snapshot_frame(Context(), reader, SnapshotRequest())
    assert sorted((r["id"], r["val"], r["part"]) for r in frame.collect()) == runs["before"]["race"]


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_compaction_reads_the_same_and_a_rerun_and_clean_finish(runs, lakectl_cli, point):
    code, _, err = runs["results"][point]
    assert code == 137, f"expected the failpoint's crash, got {code}: {err[-2000:]}"
    table = runs["tables"][point]
    expected = runs["before"][point]
    assert table.rows() == expected == table.expected()
    listed = lakectl_cli("compactions", table.path, "--json").json["compactions"]
    committed = point == "compact.after_commit"
    assert {e["state"] for e in listed} == {"ready for cleaning" if committed else "failed"}
    if point == "compact.before_markers":
        # Outputs were moved into place but never committed: clean takes them (the process died).
        leftovers = lakectl_cli("clean", table.path, "--dry-run", "--json").json["plan"]["delete"]
        assert {i["kind"] for i in leftovers} >= {"compaction leftover"}
        assert lakectl_cli("clean", table.path, "--json").code == 0
        assert not list(table.path.glob("part=*/base_*"))

    rerun = lakectl_cli("compact", table.path, "--major", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json["committed"] is not committed  # after a commit there is nothing left to do
    assert table.rows() == expected
    cleaned = lakectl_cli("clean", table.path, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    assert table.rows() == expected
    assert list((table.path / "_lakectl" / "staging").glob("*")) == []
    for part in table.path.glob("part=*"):
        assert [d.name for d in part.iterdir()] == [next(part.glob("base_*")).name]
    states = [
        e["state"] for e in lakectl_cli("compactions", table.path, "--json").json["compactions"]
    ]
    assert states.count("cleaned") == 2 and set(states) <= {"cleaned", "failed"}


def test_clean_aborts_a_dead_load_and_removes_its_files(runs, lakectl_cli):
    code, _, err = runs["results"]["load_crash"]
    assert code == 137, err[-2000:]
    table = runs["tables"]["load_crash"]
    assert list(table.path.glob("part=*/delta_0000003_0000003_0000"))
    # The dead writer's open write id holds compaction back ...
    held = lakectl_cli("compact", table.path, "--major", "--dry-run", "--json").json
    assert held["lowest_open_write_id"] == 3
    cleaned = lakectl_cli("clean", table.path, "--json")
    assert cleaned.code == 0, cleaned.err
    assert cleaned.json["plan"]["abort_write_ids"] == [3]
    assert "is no longer running" in cleaned.json["plan"]["notes"][0]
    assert (table.path / "_lakectl" / "txns" / f"{3:020d}.aborted").exists()
    assert not list(table.path.rglob("*_0000003_0000003_0000"))
    assert table.rows() == runs["before"]["load_crash"]
    # ... until clean marked it aborted.
    freed = lakectl_cli("compact", table.path, "--major", "--dry-run", "--json").json
    assert freed["lowest_open_write_id"] is None
    log = [json.loads(p.read_text()) for p in sorted((table.path / "_lakectl/log").glob("*"))]
    assert log[-1]["operation"] == "clean" and log[-1]["info"]["aborted_write_ids"] == [3]
