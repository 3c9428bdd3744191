"""Property: whatever a writer puts into a table's log records, checkpoints, allocation and
compaction status files (nested, huge, wrong types, odd values), reading the table, its status
files and its allocations and planning a clean either work or raise a lakectl error; nothing
else escapes (no RecursionError, TypeError, ...), and nothing on storage changes."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakectl.errors import LakectlError
from lakectl.ops.clean import CleanOptions
from lakectl.ops.clean import plan as plan_clean
from lakectl.table.checkpoint import checkpoint_name
from lakectl.table.compaction_runs import RUNS_DIR, read_statuses
from lakectl.table.json_input import TableWarning
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.store import CHECKPOINT_DIR, LOG_DIR, TXN_DIR, TableStore
from tests.support.table_logs import append_table, as_json, compaction_status, log_on_disk

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["../../x", "/etc/passwd", "", "working", "append", "1e21"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
HOSTILE_TEXT = st.one_of(
    st.integers(min_value=1, max_value=120_000).map(lambda n: "[" * n),
    st.integers(min_value=1, max_value=120_000).map(lambda n: '{"a":' * n),
    st.integers(min_value=1, max_value=60).map(lambda n: "[" * n + "1" + "]" * n),
    st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    st.sampled_from(["", "null", "NaN", "1e400", '"\\ud800"', "{}", "[]", '{"seq": 1e21}']),
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table with checkpoints at seqs 2 and 4, an open allocation and a status file."""
    root = tmp_path_factory.mktemp("base")
    store = append_table(root, appends=3, interval=2)  # seqs 0-4
    compacted = ("delta_0000001_0000002_0000", "delta_0000001_0000001_0000")
    compact = CommitRecord.draft(
        Operation.COMPACT,
        read_seq=4,
        added=(compacted[0],),
        obsolete=(compacted[1], "delta_0000002_0000002_0000"),
        info={
            "max_write_id": 2,
            "run_id": "1700000000000-abcdef",
            "compactions": [{"partition": "", "type": "minor", "outputs": [compacted[0]]}],
        },
    )
    clean = CommitRecord.draft(
        Operation.CLEAN, read_seq=5, info={"deleted": [compacted[1]], "log_start": 0}
    )
    for record in (compact, clean):  # seqs 5 and 6; checkpoints at 2, 4 and 6
        writer = TableStore(store.storage, store.root, "t")
        writer.read_state()
        writer.commit(record)
    assert store.allocate_write_id("append") == 1  # the appends committed without allocating
    runs = Path(store.path(RUNS_DIR))
    runs.mkdir(parents=True)
    (runs / "1700000000000-abcdef.json").write_text(json.dumps(compaction_status()))
    return root / "t"


TARGETS = {
    "log": f"{LOG_DIR}/{3:020d}.json",
    "compact_log": f"{LOG_DIR}/{5:020d}.json",
    "clean_log": f"{LOG_DIR}/{6:020d}.json",
    "checkpoint": f"{CHECKPOINT_DIR}/{checkpoint_name(6)}",
    "old_checkpoint": f"{CHECKPOINT_DIR}/{checkpoint_name(4)}",
    "txn": f"{TXN_DIR}/{1:020d}.json",
    "status": f"{RUNS_DIR}/1700000000000-abcdef.json",
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a node of a JSON value (without recursion limits at these sizes)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    node = value
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return value


@st.composite
def damage(draw: st.DrawFn, original: str) -> str:
    """New contents for a file whose contents were ``original``."""
    kind = draw(st.sampled_from(["field", "field", "whole", "text"]))
    if kind == "text":
        return draw(HOSTILE_TEXT)
    if kind == "whole":
        return json.dumps(draw(VALUES))
    body = json.loads(original)
    path = draw(st.sampled_from(list(_paths(body))))
    new = draw(VALUES | HOSTILE_TEXT.map(lambda text: {"nested": text}))
    return json.dumps(_replace(body, path, new))


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _attempt(call: Any) -> Any:
    """``call()``'s result, or None when it raised a lakectl error (anything else fails)."""
    try:
        return call()
    except LakectlError:
        return None


@SETTINGS
@given(target=st.sampled_from(sorted(TARGETS)), data=st.data())
def test_damaged_table_files_give_results_or_lakectl_errors(
    base: Path, target: str, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "t"
        shutil.copytree(base, root)
        file = root / TARGETS[target]
        file.write_text(data.draw(damage(file.read_text()), label="contents"))
        before = _hashes(root)
        store = TableStore(*_storage(root), "t")
        expected = log_on_disk(TableStore(*_storage(base), "t"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TableWarning)
            state: TableState | None = _attempt(store.read_state)
            statuses = read_statuses(store)  # never raises: damaged files are skipped
            allocated = store.allocated_write_ids()  # never raises either
            _attempt(lambda: plan_clean(store, CleanOptions(retain="0s", dry_run=True)))
        assert _hashes(root) == before
        assert 1 in allocated
        if target in ("checkpoint", "old_checkpoint"):
            # The log is intact: a damaged checkpoint is skipped, never believed.
            assert state is not None and as_json(state) == expected
        if target == "status":
            assert len(statuses) <= 1
        if target in ("txn", "status"):
            assert state is not None


def _storage(root: Path) -> tuple[Any, str]:
    from lakectl.storage.fs import storage_for

    return storage_for(str(root))
