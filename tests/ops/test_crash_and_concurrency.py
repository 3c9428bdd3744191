"""A load killed before it commits (by kill -9 of a real process; and in the middle of moving its
files, stopped in this process where a kill would stop it) leaves nothing visible, and two loads
at once on the same keys cannot both commit.

The killed `lakectl load` is a separate Python process with its own JVM (slow), started first so
that it runs while the others do; the overlapping loads run here and in a helper thread, each
scenario on its own table; setup and checks go through the in-process CLI.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.cli import CliRun, run_lakectl_until_crash
from tests.support.process_loads import (
    BASE,
    CDC,
    CHANGES,
    PROCESS_TIMEOUT,
    OracleTable,
    finish,
    part_of,
    start_lakectl,
    write_changes,
)

pytestmark = [pytest.mark.slow]

BATCHES = {
    "changes": CHANGES,
    # Two writers updating keys 3 and 4 of partition p1 at the same time.
    "slow": [("U", k, "2024-01-03 00:00:00", f"slow{k}") for k in range(1, 5)],
    "fast": [("U", k, "2024-01-03 00:00:00", f"fast{k}") for k in range(3, 7)],
    # Two writers on different partitions.
    "p1": [("U", k, "2024-01-04 00:00:00", f"one{k}") for k in (1, 2, 3)]
    + [("I", 23, "2024-01-04 00:00:00", "one23")],
    "p2": [("U", k, "2024-01-04 00:00:00", f"two{k}") for k in (11, 12)]
    + [("D", 13, "2024-01-04 00:00:00", "")],
}
# (table, batch, failpoint) per load killed at a failpoint: by a real kill -9 of its own process
# (REAL_KILLS), or stopped in this process where a kill would stop it (no abort runs).
CRASHES = {
    "crash_before_commit": ("crash_before_commit", "changes", "load.before_commit"),
    "crash_mid_move": ("crash_mid_move", "changes", "write.after_first_move"),
}
REAL_KILLS = {"crash_before_commit"}
# Two loads at once per table: {table: (slow batch, fast batch)}. The slow one runs in a helper
# thread (on the warm session) and stops after writing, just before it commits; the fast one then
# runs here, start to commit, and only then the slow one goes on. Each read the table before the
# other committed.
PAIRS = {"same_keys": ("slow", "fast"), "disjoint": ("p2", "p1")}


def _wait_until(path: Path, run: Future[CliRun]) -> None:
    """Until the run in a helper thread creates ``path`` (fails the test if it ends first)."""
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not path.exists() and not run.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not path.exists():
        detail = run.result().err[-2000:] if run.done() else "timed out"
        pytest.fail(f"lakectl never reached {path.name}: {detail}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, lakectl_cli, spark, jvm_processes):
    """Tables loaded with BASE, then every load of CRASHES and PAIRS (the real kill's process
    runs meanwhile)."""
    root = tmp_path_factory.mktemp("processes")
    base = write_changes(root / "base.csv", BASE)
    sources = {name: write_changes(root / f"{name}.csv", rows) for name, rows in BATCHES.items()}
    first, *others = sorted([*(t for t, _, _ in CRASHES.values()), *PAIRS])
    tables = {first: OracleTable(root / first, lakectl_cli)}
    tables[first].load(base)
    tables.update({name: tables[first].copy(root / name) for name in others})
    # Copies read as the original does (their own checks below read each of them again).
    state = (tables[first].rows(), tables[first].history())
    before = dict.fromkeys(tables, state)
    started = {
        name: start_lakectl(
            "load", tables[t].path, sources[b], *CDC, failpoints=f"{fp}=crash", cwd=root
        )
        for name, (t, b, fp) in CRASHES.items()
        if name in REAL_KILLS
    }
    results = {}
    for name, (slow, fast) in PAIRS.items():
        reached, resume = root / f"{slow}.reached", root / f"{slow}.resume"
        stop = f"load.before_commit=touch:{reached},load.before_commit=wait:{resume}"
        with pytest.MonkeyPatch.context() as env, ThreadPoolExecutor(1) as pool:
            env.setenv("LAKECTL_FAILPOINTS", stop)
            waiting = pool.submit(
                lakectl_cli, "load", tables[name].path, sources[slow], *CDC, "--json"
            )
            try:
                _wait_until(reached, waiting)
                env.delenv("LAKECTL_FAILPOINTS")  # the slow one waits inside its failpoint
                done = lakectl_cli("load", tables[name].path, sources[fast], *CDC, "--json")
                results[fast] = (done.code, done.out, done.err)
            finally:  # never leave the slow one waiting
                resume.touch()
            late = waiting.result()
        results[slow] = (late.code, late.out, late.err)
    for name, (t, b, fp) in CRASHES.items():
        if name not in REAL_KILLS:
            killed = run_lakectl_until_crash(
                "load", tables[t].path, sources[b], *CDC, "--json", failpoint=fp
            )
            results[name] = (killed.code, killed.out, killed.err)
    results.update({name: finish(p) for name, p in started.items()})
    return {"tables": tables, "before": before, "results": results, "sources": sources}


@pytest.mark.parametrize(
    ("point", "written"),
    [
        ("before_commit", {"delta_0000002_0000002_0000", "delete_delta_0000002_0000002_0000"}),
        # Stopped after its first file moved: some of them are in place.
        ("mid_move", {"delta_0000002_0000002_0000", "delete_delta_0000002_0000002_0000"}),
    ],
)
def test_crash_leaves_the_table_as_it_was(runs, lakectl_cli, point, written):
    name = f"crash_{point}"
    code, out, err = runs["results"][name]
    assert code == 137, f"expected the failpoint's crash, got {code}: {err[-2000:]}"
    assert out == ""  # killed before it could report anything
    table = runs["tables"][name]
    rows, history = runs["before"][name]
    assert table.rows() == rows == table.expected()
    assert table.history() == history
    # The crashed writer did write files (write id 2); no reader may see them.
    found = {p.name for p in table.path.rglob("*delta_0000002_0000002_0000")}
    assert found == written if point == "before_commit" else found and found <= written
    assert (table.path / "_lakectl" / "txns" / f"{2:020d}.json").exists()
    show = lakectl_cli("show", table.path, "--json").json
    assert show["version"] == 1
    assert show["totals"]["rows"] == len(rows)
    assert all(p["deltas"] == 1 and p["delete_deltas"] == 0 for p in show["partitions"])

    # The next load succeeds, with a new write id; the crashed one stays invisible.
    result = table.load(runs["sources"]["changes"])
    assert result["version"] == 3
    assert table.rows() == table.expected()
    assert [e["version"] for e in table.history()] == [None, 1, 3]
    old = lakectl_cli("snapshot", table.path, "--version", "1", "--json")
    assert sorted((r["id"], r["val"], r["part"]) for r in old.json["rows"]) == rows


def test_concurrent_loads_on_the_same_keys_one_commits(runs):
    slow, fast = runs["results"]["slow"], runs["results"]["fast"]
    assert (slow[0], fast[0]) == (75, 0), (slow[2][-2000:], fast[2][-2000:])
    # The fast one committed while the slow one waited: the slow one must not commit too.
    error = json.loads(slow[1])["error"]
    assert error["type"] == "conflict"
    assert "commit conflict" in error["message"]
    assert "part=p1" in error["message"]
    assert "nothing of this one is visible" in error["message"]
    committed = json.loads(fast[1])
    assert committed["version"] == 3  # the slow one had taken write id 2

    # The table holds exactly the winner's change; nothing of the loser's.
    table = runs["tables"]["same_keys"]
    table.oracle.apply_csv(str(runs["sources"]["fast"]), "cdc")
    assert table.rows() == table.expected()
    assert [e["version"] for e in table.history()] == [None, 1, 3]
    assert not list(table.path.rglob("*delta_0000002_0000002_0000"))
    assert (table.path / "_lakectl" / "txns" / f"{2:020d}.aborted").exists()


def test_concurrent_loads_on_disjoint_partitions_both_commit(runs):
    results = [runs["results"][name] for name in ("p1", "p2")]
    assert [code for code, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    table = runs["tables"]["disjoint"]
    for name in ("p1", "p2"):
        table.oracle.apply_csv(str(runs["sources"][name]), "cdc")
    assert table.rows() == table.expected()
    assert sorted(json.loads(out)["version"] for _, out, _ in results) == [2, 3]
    # They really ran at once: the later commit had read the log before the earlier one landed.
    records = table.log_records()
    assert [r["seq"] for r in records] == [0, 1, 2, 3]
    assert records[3]["read_seq"] < records[2]["seq"]


def test_a_parquet_source_that_changes_during_the_load_is_refused(
    tmp_path, lakectl_cli, spark, monkeypatch
):
    """Parquet and ORC sources are read once per pass (not cached): a source rewritten between
    the checks and the write must not be loaded half-checked. The load runs in this thread on the
    warm session; a helper thread rewrites the source while the load waits at its failpoint."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = OracleTable(tmp_path / "t", lakectl_cli)
    table.load(write_changes(tmp_path / "base.csv", BASE))
    before = (table.rows(), table.history())

    def batch(rows: list[tuple[str, int, str, str]]) -> pa.Table:
        return pa.table(
            {
                "op_code": [r[0] for r in rows],
                "id": pa.array([r[1] for r in rows], pa.int64()),
                "change_ts": pa.array([r[2] for r in rows]).cast(pa.timestamp("us")),
                "val": [r[3] for r in rows],
                "part": [part_of(r[1]) for r in rows],
            }
        )

    source = tmp_path / "changes.parquet"
    pq.write_table(batch(list(CHANGES)), source)
    reached, resume = tmp_path / "reached", tmp_path / "resume"

    def rewrite_when_reached() -> None:
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT
            while not reached.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            # Checked, not yet written: the file now holds other changes, which no check has seen.
            pq.write_table(batch([("U", 1, "2024-01-03 00:00:00", "sneaky")] * 2), source)
        finally:  # never leave the load waiting
            resume.touch()

    monkeypatch.setenv(
        "LAKECTL_FAILPOINTS", f"load.before_write=touch:{reached},load.before_write=wait:{resume}"
    )
    with ThreadPoolExecutor(1) as pool:
        rewriter = pool.submit(rewrite_when_reached)
        done = lakectl_cli("load", table.path, source, *CDC, "--json")
        rewriter.result()
    monkeypatch.delenv("LAKECTL_FAILPOINTS")

    assert reached.exists()
    assert done.code == 65, done.err[-2000:]
    error = done.json["error"]
    assert error["type"] == "bad_input"
    assert "changed while it was being loaded" in error["message"]
    assert (table.rows(), table.history()) == before
