"""Small tables built through the Python API, their logs as the oracle sees them on disk, and
compaction status bodies: shared by the table-input tests and their property tests."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.store import LOG_DIR, TableStore


def store_at(root: Path) -> TableStore:
    """A handle on the table at ``root`` (named ``t``)."""
    storage, path = storage_for(str(root))
    return TableStore(storage, path, "t")


def fresh(store: TableStore) -> TableStore:
    """A new handle on the same table, as a new process would open it."""
    return TableStore(store.storage, store.root, "t")


def append_table(tmp_path: Path, appends: int = 5, interval: int = 2) -> TableStore:
    """A table of ``appends`` committed appends (each adding a directory), checkpointed every
    ``interval`` commits: seq 0 create, 1 the interval, 2.. the appends."""
    store = store_at(tmp_path / "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    set_properties(store, (f"log.checkpoint.interval={interval}",))
    for write_id in range(1, appends + 1):
        writer = fresh(store)  # as a new process: reads, then commits from what it read
        state = writer.read_state()
        writer.commit(
            CommitRecord.draft(
                Operation.APPEND,
                write_id=write_id,
                read_seq=state.last_seq,
                added=(f"delta_{write_id:07d}_{write_id:07d}_0000",),
            )
        )
    return fresh(store)


def log_on_disk(store: TableStore) -> list[dict[str, Any]]:
    """The oracle: every log record parsed straight from its file."""
    out = []
    for path in sorted(Path(store.path(LOG_DIR)).glob("*.json")):
        raw = json.loads(path.read_text())
        raw.pop("attempt")
        out.append(raw)
    return out


def as_json(state: TableState) -> list[dict[str, Any]]:
    """A state's records as the log stores them."""
    return [r.to_json() for r in state.records]


def compaction_status(**change: Any) -> dict[str, Any]:
    """A valid compaction run status body, with ``change`` applied."""
    body = {
        "id": "1700000000000-abcdef",
        "state": "working",
        "started_at": 1,
        "heartbeat_at": 1,
        "host": "h",
        "pid": os.getpid(),
        "requested": "auto",
        "compactions": [{"partition": "", "type": "minor", "outputs": ["delta_1_2"]}],
    }
    body.update(change)
    return body
