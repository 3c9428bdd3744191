"""Compaction status files: written working, failed on an exception, dead workers shown failed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace

import pytest

from lakectl.storage.fs import storage_for
from lakectl.table.compaction_runs import (
    HEARTBEAT_TIMEOUT_MS,
    new_run,
    process_alive,
    read_statuses,
    tracked,
)
from lakectl.table.store import TableStore, now_millis

ITEM = {"partition": "p=a", "type": "major", "outputs": ["p=a/base_0000003_v0000004"]}


def _store(tmp_path) -> TableStore:
    storage, root = storage_for(str(tmp_path / "t"))
    return TableStore(storage, root)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_process_alive_only_judges_this_host():
    host = socket.gethostname()
    assert process_alive(host, os.getpid()) is True
    assert process_alive(host, _dead_pid()) is False
    assert process_alive("another-host", os.getpid()) is None


def test_a_run_is_working_then_failed_with_its_error(tmp_path):
    store = _store(tmp_path)
    run = new_run("major", [ITEM])
    with pytest.raises(RuntimeError), tracked(store, run):
        [seen] = read_statuses(store)
        assert (seen.state, seen.outputs) == ("working", ("p=a/base_0000003_v0000004",))
        assert seen.shown_state(now_millis()) == "working"
        raise RuntimeError("disk full")
    [failed] = read_statuses(store)
    assert (failed.state, failed.error) == ("failed", "RuntimeError: disk full")
    assert failed.ended_at is not None


def test_a_committed_run_is_recorded(tmp_path):
    store = _store(tmp_path)
    with tracked(store, new_run("minor", [ITEM])) as status:
        status[0] = replace(status[0], state="committed", log_seq=7)
    [done] = read_statuses(store)
    assert (done.state, done.log_seq) == ("committed", 7)


def test_a_working_run_whose_worker_is_gone_shows_failed():
    now = now_millis()
    run = replace(new_run("major", [ITEM]), pid=_dead_pid())
    assert run.shown_state(now) == "failed"
    elsewhere = replace(run, host="another-host", heartbeat_at=now - 1000)
    assert elsewhere.shown_state(now) == "working"
    assert elsewhere.shown_state(now + HEARTBEAT_TIMEOUT_MS) == "failed"
