"""One maintenance run per table at a time: the lock file ``_lakectl/maintain.lock``.

``lakectl maintain`` takes it before it plans a table and deletes it when done, so two runs
started by cron (or a run that outlasts its interval) never compact or clean one table at the same
time. The file is created with put-if-absent (exclusive on every store lakectl writes to) and
holds who took it: host, process id, a token and the time. A lock whose holder is gone is stale
and is taken over: on the same host when its process no longer runs, on another host once it is
older than :data:`STALE_AFTER_MS` (a run there cannot be checked from here). Loads, compactions
and cleans run outside ``maintain`` do not take it: they stay safe through the log's commit
protocol; the lock only keeps maintenance runs from doing the same work twice.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakectl.storage.fs import AlreadyExistsError
from lakectl.table.compaction_runs import process_alive
from lakectl.table.json_input import (
    JsonInputError,
    SizeLimit,
    field_int,
    field_str,
    read_json_object,
)
from lakectl.table.paths import META_DIR
from lakectl.table.store import MAX_PID, TableStore, now_millis

LOCK_FILE = f"{META_DIR}/maintain.lock"
STALE_AFTER_MS = 6 * 3_600_000
"""A lock taken on another host counts as abandoned after six hours."""
WAIT_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class LockHolder:
    """Who holds a table's maintenance lock (what the lock file says)."""

    host: str
    pid: int
    token: str
    taken_at: int

    def describe(self) -> str:
        taken = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.taken_at / 1000))
        return f"pid {self.pid} on {self.host or 'an unknown host'} since {taken} UTC"

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "token": self.token, "taken_at": self.taken_at}


def holder_gone(holder: LockHolder | None, now: int, this_host: str) -> bool:
    """Whether a lock held by ``holder`` is stale: unreadable (``None``), its process gone on
    this host, or (when its process cannot be checked from here, as on another host) taken more
    than :data:`STALE_AFTER_MS` ago."""
    if holder is None:
        return True
    alive = process_alive(holder.host, holder.pid) if holder.host == this_host else None
    if alive is not None:
        return not alive
    return now - holder.taken_at > STALE_AFTER_MS


class MaintenanceLock:
    """The lock of one table; :meth:`acquire` returns ``None`` or the live holder."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self.path = store.path(LOCK_FILE)
        self.mine: LockHolder | None = None

    def read_holder(self) -> LockHolder | None:
        """The holder the lock file names; ``None`` when it is missing or damaged."""
        try:
            data = read_json_object(self.store.storage, self.path, limit=SizeLimit.TXN)
            return LockHolder(
                host=field_str(data, "host", ""),
                pid=field_int(data, "pid", 0, low=0, high=MAX_PID),
                token=field_str(data, "token", ""),
                taken_at=field_int(data, "taken_at", 0, low=0),
            )
        except (FileNotFoundError, JsonInputError, ValueError):
            return None

    def acquire(self) -> LockHolder | None:
        """Take the lock: ``None`` when this process holds it now, else who holds it. A stale
        lock is removed and taken over (once)."""
        holder = LockHolder(socket.gethostname(), os.getpid(), uuid.uuid4().hex, now_millis())
        body = json.dumps(holder.to_json(), sort_keys=True).encode("utf-8")
        for _ in range(2):
            try:
                self.store.storage.put_if_absent(self.path, body)
            except AlreadyExistsError:
                current = self.read_holder()
                if not self.store.storage.exists(self.path):
                    continue  # released in between
                if not holder_gone(current, now_millis(), holder.host):
                    assert current is not None
                    return current
                self._remove_if_unchanged(current)
                continue
            self.mine = holder
            return None
        return self.read_holder() or holder

    def acquire_waiting(
        self, sleep: Callable[[float], None] = time.sleep, poll: float = WAIT_POLL_SECONDS
    ) -> None:
        """Take the lock, waiting as long as a live holder keeps it."""
        while self.acquire() is not None:
            sleep(poll)

    def release(self) -> None:
        """Delete the lock file if it is still this process's own."""
        if self.mine is None:
            return
        current = self.read_holder()
        if current is not None and current.token == self.mine.token:
            self.store.storage.delete(self.path)
        self.mine = None

    def _remove_if_unchanged(self, stale: LockHolder | None) -> None:
        """Remove a stale lock file, unless another run replaced it since it was read."""
        current = self.read_holder()
        same = (current is None and stale is None) or (
            current is not None and stale is not None and current.token == stale.token
        )
        if same and self.store.storage.exists(self.path):
            self.store.storage.delete(self.path)

    def __enter__(self) -> MaintenanceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
