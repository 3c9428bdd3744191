"""Status files of compactions: ``_lakectl/compactions/<id>.json``, one per ``compact`` run.

The log says what committed; a status file says what a compaction is doing before that: written
``working`` when it starts (with its planned outputs, host, process id and a heartbeat), ``failed``
when it raises, ``committed`` after its log record. A ``working`` file whose process is gone (same
host, pid not running) or whose heartbeat stopped is shown as failed, and is rewritten ``failed``
(:func:`mark_failed`) when a crashed writer is recovered (:mod:`lakectl.table.open_writers`: the
rule and place it shares with loads). ``clean`` reads these files to know which uncommitted
directories a running compaction may still commit.

A compaction commits through the one write transaction (``store.transaction(..., run=status)``,
:mod:`lakectl.table.transaction`), which keeps this file (:func:`tracked`), removes the outputs it
claimed when it fails, and fires the same failpoints as every writer; whether a run that never
committed is gone is the rule every writer is judged by (:func:`~lakectl.table.transaction.
writer_gone`).
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

from lakectl.errors import FormatError, LakectlError, engine_error
from lakectl.failpoints import is_crash
from lakectl.table.json_input import (
    JsonInputError,
    SizeLimit,
    field_int,
    field_list,
    field_str,
    read_json_object,
    warn,
)
from lakectl.table.log import compaction_item
from lakectl.table.paths import RUNS_DIR, Shape, check_name, name_flaw, shown
from lakectl.table.store import MAX_PID, TableStore, now_millis
from lakectl.table.transaction import writer_gone

HEARTBEAT_SECONDS = 30.0
# A working run whose process cannot be checked counts as failed after this much silence.
HEARTBEAT_TIMEOUT_MS = 10 * 60_000
STATES = ("working", "failed", "committed")


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
        gone = writer_gone(alive, self.heartbeat_at, now, HEARTBEAT_TIMEOUT_MS)
        return "failed" if gone else "working"

    @staticmethod
    def from_json(data: dict[str, Any]) -> RunStatus:
        """The status a file holds; ``ValueError`` naming the first field of the wrong type or
        out of range (the file is table content, not trusted)."""
        state = field_str(data, "state")
        if state not in STATES:
            raise ValueError(f"field 'state' is {state[:40]!r}, not one of {', '.join(STATES)}")
        return RunStatus(
            id=field_str(data, "id"),
            state=state,
            started_at=field_int(data, "started_at"),
            heartbeat_at=field_int(data, "heartbeat_at"),
            host=field_str(data, "host", ""),
            pid=field_int(data, "pid", 0, low=0, high=MAX_PID),
            requested=field_str(data, "requested", ""),
            ended_at=field_int(data, "ended_at", None),
            log_seq=field_int(data, "log_seq", None, low=0),
            error=field_str(data, "error", None),
            compactions=field_list(data, "compactions", compaction_item, []),
        )


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


def status_file(run_id: object, *, source: str) -> str:
    """``_lakectl/compactions/<id>.json`` (relative to the table) for a compaction id of the
    shape :func:`new_run` gives; a :class:`FormatError` naming ``source`` for any other."""
    return check_name(f"{RUNS_DIR}/{run_id}.json", Shape.STATUS_FILE, source=source)


def write_status(store: TableStore, status: RunStatus) -> None:
    store.storage.write_bytes(
        store.path(status_file(status.id, source="a new compaction")),
        json.dumps(asdict(status), indent=1, sort_keys=True).encode(),
    )


@dataclass(frozen=True)
class DamagedStatus:
    """A status file lakectl cannot use. ``unsafe``: it names paths (an id that is not its own
    file name, outputs that are not data directories) rather than being merely unreadable."""

    name: str
    url: str
    reason: str
    unsafe: bool

    def error(self) -> FormatError:
        """The error ``clean`` stops with for an unsafe status file."""
        return FormatError(
            f"compaction status file {self.url} is damaged ({self.reason}); nothing was deleted",
            hint="remove the file if no compaction of yours is running; lakectl writes a "
            "status file only under its own compaction id",
        )


@dataclass(frozen=True)
class StatusFiles:
    """The usable status files, oldest first, and the damaged ones."""

    runs: list[RunStatus]
    damaged: list[DamagedStatus]


def read_status_files(store: TableStore) -> StatusFiles:
    """Every status file: usable ones oldest first, and damaged ones (half-written, or an id
    that is not the file's own name or not a compaction id, or outputs that are not data
    directories)."""
    runs, damaged = [], []
    for name in store.storage.list_names(store.path(RUNS_DIR)):
        if not name.endswith(".json"):
            continue
        path = store.path(RUNS_DIR, name)
        url = store.storage.url(path)
        try:
            data = read_json_object(store.storage, path, limit=SizeLimit.COMPACTION_STATUS)
            status = RunStatus.from_json(data)
        except FileNotFoundError:
            continue  # deleted while listed
        except (JsonInputError, ValueError) as exc:
            why = exc.why if isinstance(exc, JsonInputError) else str(exc)[:200]
            warn(f"compaction status {url} is damaged ({why}); ignored")
            damaged.append(DamagedStatus(name, url, f"unreadable: {why}", False))
            continue
        try:
            reason = _status_flaw(name, status)
        except (TypeError, AttributeError):
            reason = "its compactions are not a list of objects"
        if reason is not None:
            damaged.append(DamagedStatus(name, url, reason, True))
            continue
        runs.append(status)
    return StatusFiles(sorted(runs, key=lambda s: (s.started_at, s.id)), damaged)


def _status_flaw(name: str, status: RunStatus) -> str | None:
    """Why a status file names paths it should not; ``None`` when it is sound."""
    flaw = name_flaw(status.id, Shape.RUN_ID)
    if flaw is not None:
        return f"its id {flaw}"
    if name != f"{status.id}.json":
        return f"its id {shown(status.id)} is not its file name"
    for output in status.outputs:
        flaw = name_flaw(output, Shape.DATA_DIR)
        if flaw is not None:
            return f"an output {flaw}"
    return None


def read_status(store: TableStore, run_id: str) -> RunStatus | None:
    """The status file of run ``run_id``; ``None`` when it is missing or unreadable."""
    path = store.path(status_file(run_id, source="a compaction's id"))
    try:
        return RunStatus.from_json(
            read_json_object(store.storage, path, limit=SizeLimit.COMPACTION_STATUS)
        )
    except (FileNotFoundError, JsonInputError, ValueError):
        return None


def mark_failed(store: TableStore, run_id: str, reason: str) -> bool:
    """Rewrite the status of a ``working`` run whose writer is gone as ``failed`` with
    ``reason`` (what a write id's ``.aborted`` marker is to a load); ``False`` when it is not
    working any more (or its file is gone)."""
    status = read_status(store, run_id)
    if status is None or status.state != "working":
        return False
    failed = replace(status, state="failed", ended_at=now_millis(), error=reason[:500])
    write_status(store, failed)
    return True


def read_statuses(store: TableStore) -> list[RunStatus]:
    """Every usable status file, oldest first (damaged ones are left out: see
    :func:`read_status_files`)."""
    return read_status_files(store).runs


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
                marked = read_status(store, holder[0].id)
                if marked is not None and marked.state == "failed":
                    return  # judged gone and marked failed: the transaction refuses to commit
                holder[0] = replace(holder[0], heartbeat_at=now_millis())
                with contextlib.suppress(Exception):
                    write_status(store, holder[0])

    thread = threading.Thread(target=beat, name="lakectl-compaction-heartbeat", daemon=True)
    thread.start()
    try:
        yield holder
    except BaseException as exc:
        if is_crash(exc):  # a simulated crash leaves the status a killed run leaves: working
            raise
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
