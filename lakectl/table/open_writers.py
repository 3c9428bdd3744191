"""Writers that started and never committed, and the one rule that recovers those that crashed.

Two kinds of writer can be open on a table:

* a writer that makes a version (load, stream, delete, update, restore, materialize,
  apply-updates, list bucketing) holds the write id it reserved in ``_lakectl/txns``;
* a compaction holds its run: the status file ``_lakectl/compactions/<id>.json``
  (:mod:`lakectl.table.compaction_runs`), ``working`` from its start to its commit.

A compaction takes no write id of its own, on purpose: write ids are the table's versions
(``--version N``, ``restore``, ``history``) and a compaction makes none, it rewrites what earlier
versions wrote; a write id of its own would be a version reading exactly like the one before,
and while it ran it would hold back every other compaction (nothing at or above an open write id
is folded). So both kinds are read into one :class:`OpenWriter` and handled by one rule and one
function, wherever a crashed writer is looked for:

* gone (:meth:`OpenWriter.gone_reason`): it was marked aborted already; or it ran on this host
  and its process is no longer running; or it gave no sign of life for a while (a write id since
  its allocation for a day; a compaction since its last heartbeat, written every 30 s, for 10
  minutes): :func:`~lakectl.table.transaction.writer_gone`;
* recovered (:func:`mark_gone`): a write id gets its ``.aborted`` marker, a compaction's status
  is rewritten ``failed`` with the reason. From then on it cannot commit (the transaction checks
  before its commit), compactions stop waiting for it, and ``clean`` deletes what it wrote: its
  directories and its staging entry.

Where: ``clean`` (it judges every open writer, marks the gone ones, then deletes their files),
and at the start of ``compact`` and of ``stream`` (before they look at open write ids):
:func:`recover_gone_writers`. Status files keep their form: a ``working`` run judged gone reads as
failed whether it was marked or not, so tables written before read and clean the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lakectl.table.compaction_runs import (
    HEARTBEAT_TIMEOUT_MS,
    RunStatus,
    mark_failed,
    process_alive,
    read_statuses,
)
from lakectl.table.log import TableState
from lakectl.table.store import TableStore, now_millis
from lakectl.table.transaction import abort_write_id, writer_gone

DAY_MS = 86_400_000
ABANDON_AFTER_MS = DAY_MS
"""A write id whose process cannot be checked is gone this long after its allocation."""


class WriterKind(StrEnum):
    """What an open writer holds."""

    WRITE_ID = "write id"
    COMPACTION = "compaction"


def age_text(ms: int) -> str:
    """A duration for a reason: ``2d``, ``1.5h``, ``10m``, ``3s``, ``12ms``."""
    for unit, size in (("d", DAY_MS), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size:
            return f"{ms / size:.3g}{unit}"
    return f"{ms}ms"


@dataclass(frozen=True)
class OpenWriter:
    """A writer as the table's files know it: a write id (``key`` an int) or a compaction run
    (``key`` its id). ``alive``: whether its process runs, ``None`` when that cannot be checked
    from here; ``last_sign``: its allocation or its last heartbeat (ms); ``aborted``: marked
    aborted (a run: ``failed``); ``committed``: a run whose status says it committed;
    ``outputs``: the directories a run planned to write."""

    kind: WriterKind
    key: int | str
    started_at: int | None = None
    last_sign: int | None = None
    alive: bool | None = None
    where: str = ""
    aborted: bool = False
    committed: bool = False
    outputs: tuple[str, ...] = ()

    @classmethod
    def of_write_id(
        cls,
        write_id: int,
        started_at: int | None = None,
        aborted: bool = False,
        alive: bool | None = None,
        where: str = "",
    ) -> OpenWriter:
        """An allocated write id (its last sign of life: its allocation)."""
        return cls(WriterKind.WRITE_ID, write_id, started_at, started_at, alive, where, aborted)

    @classmethod
    def of_run(
        cls,
        run_id: str,
        state: str,
        started_at: int = 0,
        heartbeat_at: int = 0,
        alive: bool | None = None,
        outputs: tuple[str, ...] = (),
        where: str = "",
    ) -> OpenWriter:
        """A compaction's run, from its status file (its last sign: its latest heartbeat)."""
        return cls(
            WriterKind.COMPACTION,
            run_id,
            started_at,
            max(started_at, heartbeat_at),
            alive,
            where,
            aborted=state == "failed",
            committed=state == "committed",
            outputs=tuple(outputs),
        )

    @classmethod
    def of_status(cls, status: RunStatus) -> OpenWriter:
        where = f"pid {status.pid} on {status.host}" if status.host else ""
        alive = process_alive(status.host, status.pid)
        return cls.of_run(
            status.id,
            status.state,
            status.started_at,
            status.heartbeat_at,
            alive,
            status.outputs,
            where,
        )

    @property
    def write_id(self) -> int:
        return int(self.key)

    @property
    def id(self) -> str:
        return str(self.key)

    @property
    def state(self) -> str:
        """A run's state as its file says: working, failed or committed."""
        return "committed" if self.committed else "failed" if self.aborted else "working"

    @property
    def name(self) -> str:
        return f"{self.kind} {self.key}"

    @property
    def silence(self) -> int:
        """How long without a sign of life makes it gone when its process cannot be checked."""
        return ABANDON_AFTER_MS if self.kind is WriterKind.WRITE_ID else HEARTBEAT_TIMEOUT_MS

    def gone_reason(self, now: int, silence: int | None = None) -> str | None:
        """Why this writer will never commit, or ``None`` while it may (the one rule for every
        writer; ``silence`` overrides :attr:`silence`)."""
        if self.aborted:
            return f"{self.name} " + (
                "was aborted" if self.kind is WriterKind.WRITE_ID else "failed"
            )
        silence = self.silence if silence is None else silence
        if not writer_gone(self.alive, self.last_sign, now, silence):
            return None
        if self.alive is False:
            return f"{self.name}: its process ({self.where}) is no longer running"
        quiet = age_text(now - (self.last_sign or 0))
        if self.kind is WriterKind.WRITE_ID:
            return (
                f"{self.name} was allocated {quiet} ago and never committed "
                f"(abandoned after {age_text(silence)})"
            )
        return (
            f"{self.name} gave no heartbeat for {quiet} and never committed "
            f"(abandoned after {age_text(silence)})"
        )


def allocated_writers(
    store: TableStore, allocated: dict[int, dict[str, Any]] | None = None
) -> list[OpenWriter]:
    """Every allocated write id (committed ones too: the caller knows the log); ``allocated``:
    :meth:`TableStore.allocated_write_ids`, when read already."""
    out = []
    allocated = store.allocated_write_ids() if allocated is None else allocated
    for write_id, entry in allocated.items():
        host, pid = entry.get("host"), entry.get("pid")
        out.append(
            OpenWriter.of_write_id(
                write_id,
                entry.get("started_at"),
                bool(entry.get("aborted")),
                process_alive(host, pid),
                f"pid {pid} on {host}" if host else "",
            )
        )
    return out


def open_writers(
    store: TableStore, state: TableState, allocated: dict[int, dict[str, Any]] | None = None
) -> list[OpenWriter]:
    """The writers of both kinds that have not committed in ``state`` and are not marked
    aborted (read after ``state``: one that commits meanwhile counts as open)."""
    committed_runs = {r.info.get("run_id") for r in state.records if r.info.get("run_id")}
    writers = [
        w
        for w in allocated_writers(store, allocated)
        if w.write_id not in state.committed_write_ids and not w.aborted
    ]
    runs = [OpenWriter.of_status(s) for s in read_statuses(store)]
    return writers + [
        r for r in runs if not r.aborted and not r.committed and r.id not in committed_runs
    ]


def mark_gone(store: TableStore, writer: OpenWriter, reason: str) -> None:
    """Recover a writer judged gone, from outside it: a write id is marked aborted, a
    compaction's status failed; it can no longer commit, and ``clean`` deletes its files."""
    if writer.kind is WriterKind.WRITE_ID:
        abort_write_id(store, writer.write_id, reason)
    else:
        mark_failed(store, writer.id, reason)


def recover_gone_writers(
    store: TableStore,
    state: TableState,
    who: str,
    allocated: dict[int, dict[str, Any]] | None = None,
) -> list[tuple[OpenWriter, str]]:
    """Mark every open writer that is gone (:meth:`OpenWriter.gone_reason`) aborted; returns
    them with the reason. ``who`` names the command, for the reason it records; ``allocated``:
    the allocations read after ``state``, when read already (their ``aborted`` flags are
    updated)."""
    now = now_millis()
    gone = []
    for writer in open_writers(store, state, allocated):
        why = writer.gone_reason(now)
        if why is not None:
            mark_gone(store, writer, f"{who}: {why}")
            gone.append((writer, why))
            if allocated is not None and writer.kind is WriterKind.WRITE_ID:
                allocated[writer.write_id] = {**allocated[writer.write_id], "aborted": True}
    return gone


__all__ = [
    "ABANDON_AFTER_MS",
    "OpenWriter",
    "WriterKind",
    "age_text",
    "allocated_writers",
    "mark_gone",
    "open_writers",
    "recover_gone_writers",
]
