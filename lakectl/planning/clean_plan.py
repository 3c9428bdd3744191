"""What ``clean`` may delete: Hive's compaction Cleaner as a pure function of the log and listing.

Three kinds of garbage, each with its own rule.

**Obsolete directories** (``obsolete`` lists of compaction records). A state at log position
``s`` reads the directories added up to ``s`` and not made obsolete up to ``s``; a compaction
committed at ``c`` makes its inputs unneeded by every state from ``c`` on, but states before ``c``
still read them. Retention keeps every state that was *current* at some moment of the window
``[now - retain, now]``: the one current at the horizon ``now - retain`` and all later ones. So
the inputs of compaction ``c`` may go exactly when ``c`` committed at or before the horizon (then
the state current at the horizon already contains ``c``). Valid time adds one condition: an
``--as-of T`` read drops a compaction when a write id it folded (or a lower one) takes effect
after ``T``; so every write id up to the compaction's highest must also take effect at or before
the horizon. Times are commit times from the log, never file modification times.

The guarantee, as with Delta's VACUUM: a reader that runs for less than ``retain`` never loses
files (its state was current less than ``retain`` ago); ``--version``/``--known-at``/``--as-of``
to any state current inside the window keeps working. Older ones fail with a clear error.

**Writers that will never commit.** A write id that is allocated but not committed, or a
compaction whose status says working, belongs to a writer that may still be running: what it
wrote is deleted only when the writer is known to be gone, by the one rule for both
(:meth:`lakectl.table.open_writers.OpenWriter.gone_reason`): it marked itself aborted; or it ran
on this host under a process id that no longer runs; or it gave no sign of life for long (a write
id allocated more than ``abandon_after`` ago, default 1 day, independent of ``retain``, so
``--retain 0s`` never kills a slow load on another host; a compaction's heartbeat 10 minutes
old). A gone writer is marked first (a write id aborted, a compaction failed), so it can never
commit afterwards and compactions stop waiting for it.

**Compaction leftovers.** A compaction writes its output directories before its commit; a crash
leaves them uncommitted. Each compaction keeps a status file naming its outputs; an uncommitted
directory that is not a load's is deleted unless a compaction that is still working (its process
alive, or its heartbeat recent) names it, or an open write id lies in its range. Staging
directories follow their writer. Status files go once the log has the compaction, or once a
failed one is older than the window (``lakectl compactions`` lists failed runs until then).

Uncommitted directories are never visible to readers, so they need no retention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakectl.planning.log_expiry_plan import LogExpiry
from lakectl.table.compaction_runs import status_file
from lakectl.table.layout import parse_acid_dir
from lakectl.table.log import DATA_OPS, TableState
from lakectl.table.open_writers import DAY_MS, OpenWriter
from lakectl.table.paths import STAGING_DIR, Shape, name_flaw
from lakectl.table.retention import (
    Availability,
    availability,
    cleaned_dirs,
    format_time,
    needed_dirs,
)

OBSOLETE = "obsolete"
ABORTED = "aborted writer"
LEFTOVER = "compaction leftover"
STAGING = "staging"
STATUS = "compaction status"


Writer = OpenWriter.of_write_id
"""An allocated write id, as ``_lakectl/txns`` knows it (one kind of :class:`OpenWriter`)."""
CompactionRun = OpenWriter.of_run
"""A compaction's status file (the other kind of :class:`OpenWriter`)."""


@dataclass(frozen=True)
class CleanItem:
    """A path (relative to the table root) to delete or to keep, and why."""

    path: str
    kind: str
    reason: str
    bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "reason": self.reason, "bytes": self.bytes}


@dataclass(frozen=True)
class CleanPlan:
    """The decision: what to delete, what stays and why, which writers to mark aborted."""

    horizon: int
    delete: tuple[CleanItem, ...]
    keep: tuple[CleanItem, ...]
    abort_write_ids: tuple[int, ...]
    record_deleted: tuple[str, ...]
    oldest: Availability | None
    notes: tuple[str, ...] = field(default=())
    log: LogExpiry | None = None
    """The log entries and checkpoints expired with the states outside the window."""
    abort_runs: tuple[str, ...] = ()
    """Compactions judged gone whose status still says working: marked failed."""

    @property
    def changes_anything(self) -> bool:
        expires = self.log is not None and self.log.changes_anything
        marks = self.abort_write_ids or self.abort_runs
        return bool(self.delete or marks or self.record_deleted or expires)

    @property
    def recovered(self) -> list[tuple[OpenWriter, str]]:
        """The writers to mark aborted, each with the reason (in :attr:`notes`' order)."""
        gone = [OpenWriter.of_write_id(w) for w in self.abort_write_ids]
        gone += [OpenWriter.of_run(r, "working") for r in self.abort_runs]
        notes = [*self.notes, *["its writer is gone"] * (len(gone) - len(self.notes))]
        return list(zip(gone, notes, strict=False))

    def to_json(self) -> dict[str, Any]:
        return {
            "horizon": self.horizon,
            "delete": [i.to_json() for i in self.delete],
            "keep": [i.to_json() for i in self.keep],
            "abort_write_ids": list(self.abort_write_ids),
            "abort_compactions": list(self.abort_runs),
            "oldest_available": self.oldest.to_json() if self.oldest else None,
            "notes": list(self.notes),
            "log_expiry": self.log.to_json() if self.log else None,
        }


def judge_writer(writer: OpenWriter, now: int, abandon_after: int) -> str | None:
    """Why an uncommitted write id's writer is gone, or ``None`` if it may still be running."""
    return writer.gone_reason(now, abandon_after)


def run_is_live(run: OpenWriter, now: int) -> bool:
    """May this compaction still commit? Working, and not gone by the rule every writer is
    judged by (its process alive, or its heartbeat recent)."""
    return not run.committed and run.gone_reason(now) is None


def _obsolete_items(
    state: TableState, horizon: int, retain: int, present: Mapping[str, int]
) -> tuple[list[CleanItem], list[CleanItem], list[str]]:
    """Obsolete directories: deletable ones, kept ones, and ones to record as deleted."""
    recorded = cleaned_dirs(state.records)
    current_needs = needed_dirs(state.records)
    effective = {
        r.write_id: r.effective_time
        for r in state.records
        if r.write_id is not None and r.operation in DATA_OPS
    }
    delete: list[CleanItem] = []
    keep: list[CleanItem] = []
    to_record: list[str] = []
    seen: set[str] = set()
    for index, record in enumerate(state.records):
        if not record.obsolete:
            continue
        folded_top = record.info.get("max_write_id")
        if folded_top is None:
            folded_top = max(
                (r.write_id for r in state.records[:index] if r.write_id is not None), default=0
            )
        latest_effect = max(
            (t for w, t in effective.items() if w <= int(folded_top)), default=record.committed_at
        )
        free_at = max(record.committed_at, latest_effect)
        what = f"{record.operation} at log seq {record.seq}"
        for rel in record.obsolete:
            if rel in seen or rel in current_needs:
                continue
            seen.add(rel)
            size = present.get(rel)
            if free_at > horizon:
                if size is not None:
                    until = f"until {format_time(free_at + retain)}"
                    reason = (
                        f"replaced by {what}; time travel inside the retention window reads it "
                        f"({until})"
                    )
                    keep.append(CleanItem(rel, OBSOLETE, reason, size))
                continue
            if rel not in recorded:
                to_record.append(rel)
            if size is not None:
                reason = f"replaced by {what}, before the retention horizon"
                delete.append(CleanItem(rel, OBSOLETE, reason, size))
    return delete, keep, to_record


def plan_clean(
    state: TableState,
    *,
    now: int,
    retain: int,
    present: Mapping[str, int],
    staging: Mapping[str, int] | None = None,
    writers: Sequence[OpenWriter] = (),
    compactions: Sequence[OpenWriter] = (),
    abandon_after: int = DAY_MS,
) -> CleanPlan:
    """Decide what ``clean`` deletes (see the module docstring for the rules).

    ``present`` maps every ACID directory on storage (relative path) to its bytes, ``staging``
    every entry of ``_lakectl/staging`` to its bytes. The listing must have been taken *before*
    ``state``, ``writers`` and ``compactions`` were read: then anything committed or started
    while the listing ran is known to be committed or live here.
    """
    horizon = now - retain
    delete, keep, to_record = _obsolete_items(state, horizon, retain, present)
    committed_dirs = {d for r in state.records for d in r.added}
    committed_ids = state.committed_write_ids
    by_id = {w.write_id: w for w in writers}
    gone: dict[int, str] = {}
    for w in writers:
        if w.write_id in committed_ids:
            continue
        why = judge_writer(w, now, abandon_after)
        if why is not None:
            gone[w.write_id] = why
    live_ids = {w.write_id for w in writers} - committed_ids - set(gone)
    live_runs = [run for run in compactions if run_is_live(run, now)]
    live_outputs = {o for run in live_runs for o in run.outputs}
    top_known = max(by_id, default=0)

    for rel, size in sorted(present.items()):
        if rel in committed_dirs:
            continue
        acid = parse_acid_dir(rel.rsplit("/", 1)[-1])
        if acid is None:
            continue
        single = acid.min_write_id == acid.max_write_id and acid.statement_id is not None
        if single and not acid.is_base:
            wid = acid.min_write_id
            if wid in committed_ids:
                reason = f"not part of the commit of write id {wid}"
                delete.append(CleanItem(rel, ABORTED, reason, size))
            elif wid in gone:
                delete.append(CleanItem(rel, ABORTED, gone[wid], size))
            elif wid in live_ids:
                reason = f"write id {wid} may still be running"
                keep.append(CleanItem(rel, ABORTED, reason, size))
            else:
                keep.append(CleanItem(rel, ABORTED, f"write id {wid} is not allocated", size))
            continue
        span = set(range(acid.min_write_id, acid.max_write_id + 1))
        if rel in live_outputs:
            keep.append(CleanItem(rel, LEFTOVER, "output of a compaction still working", size))
        elif span & live_ids or acid.max_write_id > top_known:
            keep.append(CleanItem(rel, LEFTOVER, "an open write id lies in its range", size))
        else:
            reason = "written by a compaction that never committed"
            delete.append(CleanItem(rel, LEFTOVER, reason, size))

    live_run_ids = {run.id for run in live_runs}
    for name, size in sorted((staging or {}).items()):
        rel = f"{STAGING_DIR}/{name}"
        owner = _staging_owner(rel)
        if owner is None:
            keep.append(CleanItem(rel, STAGING, "not made by lakectl", size))
        elif isinstance(owner, int):
            if owner in committed_ids:
                delete.append(CleanItem(rel, STAGING, f"write id {owner} committed", size))
            elif owner in gone:
                delete.append(CleanItem(rel, STAGING, gone[owner], size))
            else:
                keep.append(CleanItem(rel, STAGING, f"write id {owner} may still be running", size))
        elif owner in live_run_ids:
            keep.append(CleanItem(rel, STAGING, "compaction still working", size))
        else:
            delete.append(CleanItem(rel, STAGING, "compaction no longer working", size))

    committed_runs = {r.info.get("run_id") for r in state.records if r.info.get("run_id")}
    for run in compactions:
        rel = status_file(run.id, source=f"the status file of compaction {run.id!r:.80}")
        if run.state == "committed" or run.id in committed_runs:
            delete.append(CleanItem(rel, STATUS, "committed: the log keeps its record"))
        elif run.id not in live_run_ids and (run.started_at or 0) <= horizon:
            delete.append(CleanItem(rel, STATUS, "failed before the retention horizon"))

    # Mark every gone writer aborted (not only ones with files): compactions stop waiting on it.
    to_abort = tuple(sorted(w for w in gone if not by_id[w].aborted))
    runs_gone = [
        (run.id, run.gone_reason(now) or "")
        for run in compactions
        if run.state == "working" and run.id not in committed_runs and run.id not in live_run_ids
    ]
    deleted_after = cleaned_dirs(state.records) | set(to_record)
    return CleanPlan(
        horizon=horizon,
        delete=tuple(delete),
        keep=tuple(keep),
        abort_write_ids=to_abort,
        record_deleted=tuple(sorted(to_record)),
        oldest=availability(state, deleted_after),
        notes=tuple(gone[w] for w in to_abort) + tuple(why for _, why in runs_gone),
        abort_runs=tuple(run_id for run_id, _ in runs_gone),
    )


def _staging_owner(rel: str) -> int | str | None:
    """``.../w0000007-<pid>-<ms>`` -> write id 7; ``.../compact-<id>`` -> compaction id; None
    for any name lakectl does not give a staging entry."""
    if name_flaw(rel, Shape.STAGING) is not None:
        return None
    name = rel.rsplit("/", 1)[-1]
    if name.startswith("w"):
        return int(name[1:].split("-", 1)[0])
    if name.startswith("compact-"):
        return name[len("compact-") :]
    return None
