"""``lakectl clean``: delete what compactions made obsolete and what dead writers left behind.

No Spark. The decision is :func:`lakectl.planning.clean_plan.plan_clean` (rules and guarantees
there); this module gathers its inputs and carries it out:

1. list the table's directories and ``_lakectl/staging`` first, then read the write-id
   allocations, the compaction status files and the log (in that order: anything that commits or
   starts while the listing runs is then seen as committed or running);
2. mark writers judged gone as aborted, so they can never commit later: a write id with its
   ``.aborted`` marker, a compaction with its status ``failed`` (one rule and one function for
   both: :mod:`lakectl.table.open_writers`);
3. expire the log (:mod:`lakectl.planning.log_expiry_plan`): write the checkpoint history
   will start at when there is none (put-if-absent), before anything is deleted;
4. commit one ``clean`` record naming the obsolete directories it is about to delete and the
   log entry history starts at, *then* delete: directories, then log entries oldest first, then
   the checkpoints the new one replaces. A crash while deleting leaves the current state readable
   (it never needs them; readers start from the checkpoint) and time travel to older states fails
   with the clear error rather than a missing file; a rerun deletes what is left and records
   nothing new.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from lakectl.errors import FormatError, StorageError, UsageError
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.results import brief, iso_time
from lakectl.planning.clean_plan import OBSOLETE, STATUS, CleanPlan, plan_clean
from lakectl.planning.log_expiry_plan import LogExpiry, horizon_seq, plan_log_expiry
from lakectl.table.compaction_runs import read_status_files
from lakectl.table.listing import list_table
from lakectl.table.log import Operation, TableState
from lakectl.table.open_writers import OpenWriter, allocated_writers, mark_gone
from lakectl.table.paths import Shape, table_path
from lakectl.table.properties import parse_duration, property_value
from lakectl.table.retention import DELETED_KEY, LOG_START_KEY, availability, cleaned_dirs
from lakectl.table.store import STAGING_DIR, TableStore, now_millis

OPERATION = Operation.CLEAN
# What clean deletes: data directories, staging entries and compaction status files.
CLEANABLE = (Shape.DATA_DIR, Shape.STAGING, Shape.STATUS_FILE)


@dataclass(frozen=True)
class CleanOptions:
    """``retain``: a duration such as ``7d`` (default: the table's ``clean.retain``)."""

    retain: str | None = None
    dry_run: bool = False
    force: bool = False  # allow a retention below the table's clean.retain.minimum


@dataclass
class CleanResult:
    table: str
    dry_run: bool
    retain_ms: int
    plan: CleanPlan
    log_seq: int | None = None
    deleted: tuple[str, ...] = ()
    expired_log_entries: tuple[int, ...] = ()
    expired_checkpoints: tuple[int, ...] = ()
    seconds: float = 0.0

    def __repr__(self) -> str:
        return brief(self, "table", "dry_run", "log_seq")

    @property
    def bytes_freed(self) -> int:
        done = set(self.deleted)
        return sum(i.bytes for i in self.plan.delete if i.path in done)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "dry_run": self.dry_run,
            "retain_ms": self.retain_ms,
            "log_seq": self.log_seq,
            "deleted": list(self.deleted),
            "expired_log_entries": list(self.expired_log_entries),
            "expired_checkpoints": list(self.expired_checkpoints),
            "bytes_freed": self.bytes_freed,
            "plan": _plan_dict(self.plan),
            "seconds": round(self.seconds, 3),
        }


def _plan_dict(plan: CleanPlan) -> dict[str, Any]:
    """``plan`` as ``clean --json`` shows it: its record form with times as ISO-8601 UTC."""
    data = plan.to_json()
    data["horizon"] = iso_time(plan.horizon)
    if plan.oldest is not None:
        data["oldest_available"]["committed_at"] = iso_time(plan.oldest.committed_at)
    if data["log_expiry"] is not None:
        start = data["log_expiry"]["history_start"]
        start["committed_at"] = iso_time(start["committed_at"])
    return data


def _gather(store: TableStore, partition_by: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """ACID directories and staging entries on storage, with their sizes."""
    present = {
        d.relative: d.size
        for listing in list_table(store.storage, store.root, partition_by)
        for d in listing.dirs
    }
    staging = {
        e["name"]: store.storage.du(e["path"]) if e["type"] == "directory" else e["size"]
        for e in store.storage.list_entries(store.path(STAGING_DIR))
    }
    return present, staging


def plan(store: TableStore, options: CleanOptions, now: int | None = None) -> tuple[CleanPlan, int]:
    """Gather the inputs and decide (nothing is changed). Returns the plan and retention (ms)."""
    first = store.read_state()
    meta = first.metadata
    retain = (
        parse_duration(options.retain)
        if options.retain is not None
        else property_value(meta, "clean.retain")
    )
    minimum = property_value(meta, "clean.retain.minimum")
    if retain < minimum and not options.force and not options.dry_run:
        shown = options.retain if options.retain is not None else meta.property("clean.retain")
        raise UsageError(
            f"retention {shown} is below the table's minimum of "
            f"{meta.property('clean.retain.minimum')} (clean.retain.minimum): files that time "
            "travel and running readers may still need would be deleted; nothing was deleted",
            hint="add --force to clean anyway (--dry-run shows what would go), or lower "
            "clean.retain.minimum with `lakectl set`",
        )
    present, staging = _gather(store, list(meta.partition_by))
    writers = allocated_writers(store)
    status_files = read_status_files(store)
    unsafe = [d for d in status_files.damaged if d.unsafe]
    if unsafe:
        raise unsafe[0].error()
    runs = [OpenWriter.of_status(s) for s in status_files.runs]
    state = store.read_state()
    decided = plan_clean(
        state,
        now=now_millis() if now is None else now,
        retain=retain,
        present=present,
        staging=staging,
        writers=writers,
        compactions=runs,
    )
    expiry = _plan_log_expiry(store, state, decided.horizon)
    if expiry is not None:
        gone = cleaned_dirs(state.records) | set(decided.record_deleted)
        decided = replace(decided, log=expiry, oldest=availability(state, gone, expiry.start))
    return decided, retain


def _plan_log_expiry(store: TableStore, state: TableState, horizon: int) -> LogExpiry | None:
    """The log expiry, with the newest usable checkpoint at or before the horizon state."""
    floor = horizon_seq(state, horizon)
    if floor is None or floor <= 0:
        return None
    checkpoints = store.checkpoint_seqs()
    usable = next(
        (c for c in reversed(checkpoints) if c <= floor and store.checkpoint_usable(c)), None
    )
    return plan_log_expiry(
        state,
        horizon=horizon,
        log_entries=store.log_seqs(),
        checkpoints=checkpoints,
        usable=() if usable is None else (usable,),
    )


def clean(ctx: Context, table_ref: str | None, options: CleanOptions) -> CleanResult:
    """Plan, and unless ``dry_run``, mark dead writers aborted, commit the record, delete."""
    started = time.time()
    store = ctx.table(table_ref)
    decided, retain = plan(store, options)
    result = CleanResult(store.name or store.url, options.dry_run, retain, decided)
    if options.dry_run or not decided.changes_anything:
        result.seconds = time.time() - started
        return result
    # Every path is checked before anything changes (the plan's come from the listing already).
    doomed = [
        (
            item.path,
            table_path(
                store.storage,
                store.root,
                item.path,
                CLEANABLE,
                source=f"the clean plan ({item.kind}: {item.reason})",
                deleting=True,
            ),
        )
        for item in decided.delete
    ]
    for writer, reason in decided.recovered:
        mark_gone(store, writer, "clean: " + reason)
    uncommitted = sorted(i.path for i in decided.delete if i.kind not in (OBSOLETE, STATUS))
    expiry = decided.log
    if expiry is not None and expiry.write_checkpoint:
        _write_start_checkpoint(store, expiry)
    new_start = expiry is not None and not expiry.recorded
    marked = decided.abort_write_ids or decided.abort_runs
    if decided.record_deleted or uncommitted or marked or new_start:
        with store.transaction(OPERATION) as txn:
            result.log_seq = txn.commit(
                partitions={_partition_of(i.path) for i in decided.delete},
                counts={
                    "deleted_paths": len(decided.delete),
                    "bytes": sum(i.bytes for i in decided.delete),
                },
                info={
                    DELETED_KEY: list(decided.record_deleted),
                    "uncommitted": uncommitted,
                    "retain_ms": retain,
                    "horizon": decided.horizon,
                    "aborted_write_ids": list(decided.abort_write_ids),
                    "aborted_compactions": list(decided.abort_runs),
                    "oldest_available": decided.oldest.to_json() if decided.oldest else None,
                    **({LOG_START_KEY: expiry.start} if expiry is not None else {}),
                },
            ).seq
    failpoint("clean.before_delete")
    done = []
    for relative, path in doomed:
        store.storage.delete(path, recursive=True)
        done.append(relative)
        failpoint("clean.after_first_delete")
    result.deleted = tuple(done)
    if expiry is not None:
        result.expired_log_entries, result.expired_checkpoints = _expire_log(store, expiry)
    result.seconds = time.time() - started
    return result


def _write_start_checkpoint(store: TableStore, expiry: LogExpiry) -> None:
    """Write the checkpoint history will start at (put-if-absent) and make sure it reads back;
    nothing is deleted or recorded when it does not."""
    failpoint("clean.before_checkpoint")
    state = store.read_state().prefix(expiry.start)
    created = state.last_seq == expiry.start and store.write_checkpoint(state)
    if not store.checkpoint_usable(expiry.start):
        if not created and expiry.start in store.checkpoint_seqs():
            raise FormatError(
                f"the checkpoint at log entry {expiry.start} "
                f"({store.checkpoint_url(expiry.start)}) is damaged, and history would start "
                "there: no log entry was expired and nothing was deleted",
                hint="remove the damaged checkpoint file (readers skip it already), then run "
                "clean again: it writes the checkpoint anew",
            )
        raise StorageError(
            f"the checkpoint at log entry {expiry.start} ({store.checkpoint_url(expiry.start)}) "
            "does not read back as written: no log entry was expired and nothing was deleted",
            hint="check the store, then run clean again",
        )


def _expire_log(store: TableStore, expiry: LogExpiry) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Delete the expired log entries, oldest first, then the checkpoints the new start
    replaces: a crash in between leaves a log that reads from the start's checkpoint."""
    failpoint("clean.before_log_expiry")
    entries = []
    for seq in expiry.entries:
        store.delete_log_entry(seq)
        entries.append(seq)
        failpoint("clean.after_first_log_expiry")
    checkpoints = []
    for seq in expiry.checkpoints:
        store.delete_checkpoint(seq)
        checkpoints.append(seq)
    return tuple(entries), tuple(checkpoints)


def _partition_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path and not path.startswith("_lakectl") else ""


__all__ = ["CleanOptions", "CleanResult", "clean", "plan"]
