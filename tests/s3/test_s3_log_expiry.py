"""Log expiry on a real S3 server: ``clean`` deletes the expired entries and checkpoints,
readers start from the checkpoint history starts at, and a lost one is a clear error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.store import CHECKPOINT_DIR, LOG_DIR, TableStore
from tests.support.cli import CliRun


def test_clean_expires_the_log_on_s3(s3: Any, lakectl_cli: Callable[..., CliRun]) -> None:
    url = s3.url("t")
    storage, root = storage_for(url)
    create_table(TableStore(storage, root, "t"), "id bigint, v string", ("id",), (), 0)
    set_properties(TableStore(storage, root, "t"), ("log.checkpoint.interval=5",))
    for i in range(11):
        set_properties(TableStore(storage, root, "t"), (f"clean.retain={i % 2 + 1}d",))
    before = TableStore(storage, root, "t").read_state()

    done = lakectl_cli("clean", url, "--retain", "0s", "--force", "--json")
    assert done.code == 0, done.out
    assert done.json["expired_log_entries"] == list(range(1, 10))
    assert done.json["expired_checkpoints"] == [5]
    log = storage.list_names(storage.join(root, LOG_DIR))
    assert [int(n[:-5]) for n in log] == [0, 10, 11, 12, 13]
    assert storage.list_names(storage.join(root, CHECKPOINT_DIR)) == [f"{10:020d}.json"]
    after = TableStore(storage, root, "t").read_state()
    assert after.records[:13] == before.records
    history = lakectl_cli("history", url, "--json").json["commits"]
    assert history[0]["seq"] == 10 and history[0]["starts_history"] is True

    storage.delete(storage.join(root, CHECKPOINT_DIR, f"{10:020d}.json"))
    lost = lakectl_cli("show", url, "--json")
    assert lost.code == 76
    assert "starts again at entry 10 after entry 0" in lost.json["error"]["message"]
