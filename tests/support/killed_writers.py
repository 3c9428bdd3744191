"""Turning a writer stopped in this process (:func:`lakectl.failpoints.crash_at`) into one whose
process is gone, and checking that a table holds nothing of writers that never committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lakectl.storage.fs import storage_for
from lakectl.table.layout import parse_acid_dir
from lakectl.table.listing import list_table
from lakectl.table.store import TableStore


def dead_pid() -> int:
    """The process id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def as_if_killed(table: Path) -> int:
    """Every write-id allocation and compaction status this process wrote for ``table`` now
    names a process that has ended: what a ``kill -9`` of the writer would leave (a writer stopped
    in this process would otherwise count as running). Returns how many files were changed."""
    gone, changed = dead_pid(), 0
    for folder in ("txns", "compactions"):
        for file in sorted((table / "_lakectl" / folder).glob("*.json")):
            body = json.loads(file.read_text())
            if body.get("pid") == os.getpid():
                file.write_text(json.dumps({**body, "pid": gone}))
                changed += 1
    return changed


def store_of(table: Path) -> TableStore:
    storage, root = storage_for(str(table))
    return TableStore(storage, root)


def leftovers(table: Path) -> list[str]:
    """What writers that never committed left: data directories no commit added, staging
    entries, allocated write ids neither committed nor marked aborted, working compactions."""
    store = store_of(table)
    state = store.read_state()
    committed = {d for r in state.records for d in r.added}
    meta = state.metadata
    found = [
        d.relative
        for listing in list_table(store.storage, store.root, list(meta.partition_by))
        for d in listing.dirs
        if d.relative not in committed and parse_acid_dir(d.relative.rsplit("/", 1)[-1])
    ]
    staging = table / "_lakectl" / "staging"
    found += [f"staging/{p.name}" for p in staging.iterdir()] if staging.is_dir() else []
    found += [
        f"write id {w}"
        for w, entry in store.allocated_write_ids().items()
        if w not in state.committed_write_ids and not entry.get("aborted")
    ]
    for file in sorted((table / "_lakectl" / "compactions").glob("*.json")):
        if json.loads(file.read_text())["state"] == "working":
            found.append(f"compaction {file.stem}")
    return found
