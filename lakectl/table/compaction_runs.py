"""Status files of compactions: ``_lakectl/compactions/<id>.json``, one per ``compact`` run.

The log says what committed; a status file says what a compaction is doing before that: written
``working`` when it starts (with its planned outputs, host, process id and a heartbeat), ``failed``
when it raises, ``committed`` after its log record. A ``working`` file whose process is gone (same
host, pid not running) or whose heartbeat stopped is shown as failed. ``clean`` reads these files to
know which uncommitted directories a running compaction may still commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lakectl.errors import LakectlError, engine_error
from lakectl.table.store import META_DIR, TableStore, now_millis

RUNS_DIR = f"{META_DIR}/compactions"
HEARTBEAT_SECONDS = 30.0
# A working run whose process cannot be checked counts as failed after this much silence.
HEARTBEAT_TIMEOUT_MS = 10 * 60_000


def process_alive(host: str | None, pid: int | None) -> bool | None:
    """Is process ``pid`` on ``host`` running? ``None`` when it cannot be checked from here."""
    if not host or not pid or host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunStatus:
    """What one ``compact`` run wrote about itself."""

    id: str
    state: str
    started_at: int
    heartbeat_at: int
    host: str = ""
    pid: int = 0
    requested: str = ""
    ended_at: int | None = None
    log_seq: int | None = None
    error: str | None = None
    compactions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(o for c in self.compactions for o in c.get("outputs", ()))

    def shown_state(self, now: int) -> str:
        """``working`` only while it may still finish; a dead worker's run is ``failed``."""
        if self.state != "working":
            return self.state
        alive = process_alive(self.host, self.pid)
        if alive is False or (alive is None and now - self.heartbeat_at >= HEARTBEAT_TIMEOUT_MS):
            return "failed"
        return "working"

    @staticmethod
    def from_json(data: dict[str, Any]) -> RunStatus:
        known = set(RunStatus.__dataclass_fields__)
        return RunStatus(**{k: v for k, v in data.items() if k in known})


def new_run(requested: str, compactions: list[dict[str, Any]]) -> RunStatus:
    now = now_millis()
    run_id = f"{now}-{uuid.uuid4().hex[:6]}"
    return RunStatus(
        run_id,
        "working",
        now,
        now,
        socket.gethostname(),
        os.getpid(),
        requested,
        compactions=compactions,
    )


def write_status(store: TableStore, status: RunStatus) -> None:
    store.storage.write_bytes(
        store.path(RUNS_DIR, f"{status.id}.json"),
        json.dumps(asdict(status), indent=1, sort_keys=True).encode(),
    )


def read_statuses(store: TableStore) -> list[RunStatus]:
    """Every status file, oldest first (unreadable ones, e.g. half-written, are skipped)."""
    out = []
    for name in store.storage.list_names(store.path(RUNS_DIR)):
        if not name.endswith(".json"):
            continue
        with contextlib.suppress(ValueError, TypeError, FileNotFoundError):
            raw = json.loads(store.storage.read_text(store.path(RUNS_DIR, name)))
            out.append(RunStatus.from_json(raw))
    return sorted(out, key=lambda s: (s.started_at, s.id))


@contextlib.contextmanager
def tracked(store: TableStore, status: RunStatus) -> Iterator[list[RunStatus]]:
    """Write ``status`` as working, refresh its heartbeat, and mark it failed on an exception.

    Yields a one-element list; the caller replaces the element (e.g. with the committed status).
    """
    holder = [status]
    lock = threading.Lock()
    write_status(store, status)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            with lock:
                if holder[0].state != "working":
                    return
                holder[0] = replace(holder[0], heartbeat_at=now_millis())
                with contextlib.suppress(Exception):
                    write_status(store, holder[0])

    thread = threading.Thread(target=beat, name="lakectl-compaction-heartbeat", daemon=True)
    thread.start()
    try:
        yield holder
    except BaseException as exc:
        with lock:
            holder[0] = replace(
                holder[0],
                state="failed",
                ended_at=now_millis(),
                error=_failure(exc)[:500],
            )
            with contextlib.suppress(Exception):
                write_status(store, holder[0])
        raise
    finally:
        stop.set()
    with lock:
        write_status(store, holder[0])


def _failure(exc: BaseException) -> str:
    """What stopped a run, for its status file: the error a user sees for it (a damaged input
    file named, say), else the exception's type and message."""
    known = exc if isinstance(exc, LakectlError) else None
    if known is None and isinstance(exc, Exception):
        known = engine_error(exc)
    if known is not None:
        return f"{type(known).__name__}: {known.message}"
    return f"{type(exc).__name__}: {exc}"
