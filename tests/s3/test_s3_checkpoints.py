"""Log checkpoints on a real S3 server: listings start after the checkpoint, and a command's
object reads stay bounded however long the log grows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import Storage, storage_for
from lakectl.table.store import LOG_DIR, TableStore


def test_listing_after_a_name(s3: Any) -> None:
    storage, root = storage_for(s3.url("after"))
    for name in ("001.json", "002.json", "003.json", "sub/x"):
        storage.write_bytes(storage.join(root, name), b"1")
    assert storage.list_names_after(root) == ["001.json", "002.json", "003.json", "sub"]
    assert storage.list_names_after(root, "001.json") == ["002.json", "003.json", "sub"]
    assert storage.list_names_after(storage.join(root, "missing")) == []


def test_reads_per_command_stay_bounded(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, root = storage_for(s3.url("t"))
    store = TableStore(storage, root, "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    set_properties(store, ("log.checkpoint.interval=20",))
    for i in range(64):
        set_properties(TableStore(storage, root, "t"), (f"clean.retain={i % 2 + 1}d",))
    assert len(storage.list_names(storage.join(root, LOG_DIR))) == 66

    calls: Counter[str] = Counter()
    for name in ("read_bytes", "read_head", "list_entries", "list_names_after", "exists"):
        original = getattr(Storage, name)

        def counted(self: Storage, *args: Any, _original: Any = original, _name: str = name) -> Any:
            calls[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(Storage, name, counted)
    state = TableStore(storage, root, "t").read_state()
    assert [r.seq for r in state.records] == list(range(66))
    assert state.metadata.property("clean.retain") == "2d"
    # The checkpoint at 60, log entry 60 (the checkpoint's last record must equal it), then
    # records 61..65: seven bounded GETs, two LISTs, one HEAD for the log.
    assert calls == Counter({"read_head": 7, "list_names_after": 2, "exists": 1})
