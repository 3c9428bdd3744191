"""A table's maintenance lock on real files: one holder at a time, a live holder is reported, a
stale lock (dead process, damaged file, old lock from another host) is taken over, and release
never deletes another run's lock."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

from lakectl.storage.fs import storage_for
from lakectl.table.maintenance_lock import (
    LOCK_FILE,
    STALE_AFTER_MS,
    LockHolder,
    MaintenanceLock,
    holder_gone,
)
from lakectl.table.store import TableStore, now_millis


def _store(tmp_path: Path) -> TableStore:
    (tmp_path / "t" / "_lakectl").mkdir(parents=True)
    storage, path = storage_for(str(tmp_path / "t"))
    return TableStore(storage, path, "t")


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _write_lock(store: TableStore, host: str, pid: int, taken_at: int) -> Path:
    path = Path(store.root) / LOCK_FILE
    path.write_text(json.dumps({"host": host, "pid": pid, "token": "old", "taken_at": taken_at}))
    return path


def test_one_holder_at_a_time_and_release_frees_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first, second = MaintenanceLock(store), MaintenanceLock(store)
    assert first.acquire() is None
    holder = second.acquire()
    assert holder is not None and holder.pid == os.getpid()
    assert holder.host == socket.gethostname()
    first.release()
    assert not (Path(store.root) / LOCK_FILE).exists()
    assert second.acquire() is None
    second.release()


def test_a_lock_of_a_dead_process_or_a_damaged_file_is_taken_over(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _write_lock(store, socket.gethostname(), _dead_pid(), now_millis())
    lock = MaintenanceLock(store)
    assert lock.acquire() is None
    assert lock.read_holder() == lock.mine
    lock.release()
    (Path(store.root) / LOCK_FILE).write_text("{not json")
    assert lock.acquire() is None
    lock.release()


def test_a_lock_from_another_host_is_stale_only_after_six_hours(tmp_path: Path) -> None:
    store = _store(tmp_path)
    now = now_millis()
    path = _write_lock(store, "elsewhere.example", 4242, now - STALE_AFTER_MS + 60_000)
    held = MaintenanceLock(store).acquire()
    assert held == LockHolder("elsewhere.example", 4242, "old", now - STALE_AFTER_MS + 60_000)
    assert "pid 4242 on elsewhere.example since" in held.describe()
    _write_lock(store, "elsewhere.example", 4242, now - STALE_AFTER_MS - 1)
    lock = MaintenanceLock(store)
    assert lock.acquire() is None
    assert json.loads(path.read_text())["pid"] == os.getpid()
    lock.release()
    assert holder_gone(None, now, "here")


def test_release_keeps_a_lock_another_run_took_over(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lock = MaintenanceLock(store)
    assert lock.acquire() is None
    path = _write_lock(store, "elsewhere.example", 1, now_millis())
    before = path.read_bytes()
    lock.release()
    assert path.read_bytes() == before


def test_waiting_takes_the_lock_once_the_holder_releases_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    holder = MaintenanceLock(store)
    assert holder.acquire() is None
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            threading.Thread(target=holder.release).start()
        threading.Event().wait(0.05)

    waiter = MaintenanceLock(store)
    waiter.acquire_waiting(sleep=sleep, poll=0.5)
    assert waiter.mine is not None and len(waits) >= 3 and set(waits) == {0.5}
    waiter.release()
