"""``lakectl checkpoint`` and the log at scale: thousands of commits stay cheap to read and write."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.store import CHECKPOINT_DIR, TableStore
from tests.support.cli import CliRun


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


def test_a_long_log_is_read_from_its_newest_checkpoint(tmp_path: Path) -> None:
    """Every commit of a long log reads at most the interval's records after a checkpoint (the
    cost stays flat as the log grows). Timings of 5,000 commits: ``python -m bench.log_bench``."""
    store = _new_table(tmp_path / "t")
    set_properties(store, ("log.checkpoint.interval=10",))
    for i in range(300):
        _commit(store, i)
        reader = TableStore(store.storage, store.root, "t")
        state = reader.read_state()
        assert reader.last_read is not None
        # A new reader starts from the newest checkpoint and reads at most the interval's records.
        assert 0 <= state.last_seq - reader.last_read.checkpoint_seq <= 10, (i, state.last_seq)
    assert len(list(Path(store.path(CHECKPOINT_DIR)).iterdir())) == 30
    assert reader.last_read.checkpoint_seq == 300
