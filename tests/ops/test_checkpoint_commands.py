"""``lakectl checkpoint`` and the log at scale: thousands of commits stay cheap to read and write."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.store import CHECKPOINT_DIR, TableStore
from tests.support.cli import CliRun
from tests.support.paths import REPO


def _new_table(root: Path) -> TableStore:
    storage, path = storage_for(str(root))
    store = TableStore(storage, path, "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    return store


def _commit(store: TableStore, i: int) -> float:
    """One property change through a fresh store (as a new process would); its seconds."""
    start = time.perf_counter()
    set_properties(TableStore(store.storage, store.root, "t"), (f"clean.retain={i % 2 + 1}d",))
    return time.perf_counter() - start


def test_checkpoint_on_demand(tmp_path: Path, lakectl_cli: Callable[..., CliRun]) -> None:
    store = _new_table(tmp_path / "t")
    for i in range(3):
        _commit(store, i)
    first = lakectl_cli("checkpoint", store.root, "--json")
    assert first.code == 0, first.out
    assert first.json == {
        "table": store.root,
        "seq": 3,
        "records": 4,
        "url": f"file://{store.root}/_lakectl/checkpoints/{3:020d}.json",
        "created": True,
        "usable": True,
    }
    again = lakectl_cli("checkpoint", store.root, "--json")
    assert again.json["created"] is False and again.json["seq"] == 3
    text = lakectl_cli("checkpoint", store.root)
    assert text.code == 0 and "already there: checkpoint at log entry 3 (4 records)" in text.out
    reader = TableStore(store.storage, store.root, "t")
    reader.read_state()
    assert reader.last_read is not None and reader.last_read.checkpoint_seq == 3
    Path(store.path(CHECKPOINT_DIR, f"{3:020d}.json")).write_text('{"format": 1')
    damaged = lakectl_cli("checkpoint", store.root, "--json").json
    assert (damaged["created"], damaged["usable"]) == (False, False)


def test_checkpoint_of_a_missing_table(tmp_path: Path, lakectl_cli: Callable[..., CliRun]) -> None:
    result = lakectl_cli("checkpoint", tmp_path / "nope", "--json")
    assert result.code == 66
    assert result.json["error"]["message"] == (
        f"table {tmp_path / 'nope'} does not exist (file://{tmp_path / 'nope'})"
    )
    assert not (tmp_path / "nope").exists()


def test_interval_must_be_a_whole_number(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    store = _new_table(tmp_path / "t")
    bad = lakectl_cli("set", store.root, "log.checkpoint.interval=often", "--json")
    assert bad.code == 2
    assert bad.json["error"]["message"] == (
        "log.checkpoint.interval=often: 'often' is not a whole number"
    )


def _timed_cli(*args: object) -> float:
    """Seconds for ``lakectl ARGS`` in a new process (a cold reader), which must succeed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lakectl", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    return elapsed


@pytest.mark.slow
def test_five_thousand_commits(tmp_path: Path) -> None:
    store = _new_table(tmp_path / "t")
    times = [_commit(store, i) for i in range(5000)]
    first, last = sum(times[:100]), sum(times[-100:])
    print(f"first 100 commits {first:.2f} s, last 100 {last:.2f} s")
    # Without checkpoints the last commits read 5,000 records each (about 30x the first ones).
    assert last < 4 * first + 0.5
    assert len(list(Path(store.path(CHECKPOINT_DIR)).iterdir())) == 50
    # A new reader starts from the newest checkpoint: it reads no more records than the interval.
    reader = TableStore(store.storage, store.root, "t")
    reader.read_state()
    assert reader.last_read is not None and reader.last_read.checkpoint_seq == 5000
    # Wall time depends on the machine (figures in docs/benchmarks.md); printed for the log.
    show = _timed_cli("show", store.root)
    history = _timed_cli("history", store.root, "--limit", "20")
    print(f"show {show:.2f} s, history --limit 20 {history:.2f} s (new processes)")
