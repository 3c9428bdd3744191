"""``lakectl maintain``: compaction, clean and checkpoints for every table of a warehouse.

Per table, under its maintenance lock (:mod:`lakectl.table.maintenance_lock`): gather what it
needs without Spark (the ``compact --auto`` plan, the ``clean`` plan with the table's own
retention, the log's checkpoint position), decide with the pure
:func:`lakectl.planning.maintain_plan.plan_maintenance`, then run the actions with the
operations ``compact``, ``clean`` and ``checkpoint`` run (in this process, one Spark session for
every table). A table that fails is reported with its error and the next one is done; a table
whose lock another run holds is skipped (or waited for).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lakectl.ops.checkpoint import write_checkpoint
from lakectl.ops.clean import CleanOptions, clean
from lakectl.ops.clean import plan as plan_clean
from lakectl.ops.compact import CompactOptions, compact
from lakectl.ops.compact import plan as plan_compaction
from lakectl.ops.context import Context
from lakectl.ops.tables import error_json, find_tables
from lakectl.planning.maintain_plan import (
    CHECKPOINT,
    CLEAN,
    COMPACT,
    Action,
    MaintenancePlan,
    TableFacts,
    plan_maintenance,
)
from lakectl.table.checkpoint import INTERVAL_PROPERTY
from lakectl.table.maintenance_lock import MaintenanceLock
from lakectl.table.properties import property_value
from lakectl.table.store import TableStore

OK, SKIPPED, FAILED = "ok", "skipped", "failed"


@dataclass(frozen=True)
class MaintainOptions:
    """``tables``: names or locations (default: every table of the warehouse)."""

    tables: tuple[str, ...] = ()
    dry_run: bool = False
    wait: bool = False


@dataclass(frozen=True)
class ActionResult:
    """One planned action and what became of it: ``planned`` (dry run), ``done``, ``failed``,
    or ``not run`` (an earlier action of the table failed)."""

    action: Action
    status: str
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**self.action.to_json(), "status": self.status, "summary": self.summary}


@dataclass(frozen=True)
class TableMaintenance:
    """The outcome for one table: ``status`` is ``ok``, ``skipped`` or ``failed``."""

    table: str
    status: str
    actions: tuple[ActionResult, ...] = ()
    reason: str = ""
    error: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "status": self.status,
            "actions": [a.to_dict() for a in self.actions],
            "reason": self.reason or None,
            "error": self.error,
            "notes": list(self.notes),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class MaintainResult:
    warehouse: str | None
    dry_run: bool
    tables: list[TableMaintenance] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(t.status == FAILED for t in self.tables)

    @property
    def skipped(self) -> int:
        return sum(t.status == SKIPPED for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {
            "warehouse": self.warehouse,
            "dry_run": self.dry_run,
            "tables": [t.to_dict() for t in self.tables],
            "failed": self.failed,
            "skipped": self.skipped,
        }


def gather(ctx: Context, ref: str, store: TableStore) -> TableFacts:
    """What :func:`plan_maintenance` needs, read from the log and the listing (no Spark)."""
    compaction = plan_compaction(ctx, ref, CompactOptions(kind="auto"))
    cleaning, _ = plan_clean(store, CleanOptions())
    state = store.read_state()
    read = store.last_read
    return TableFacts(
        table=store.name or store.url,
        compaction=compaction.partitions,
        clean=cleaning,
        last_seq=state.last_seq,
        checkpoint_seq=read.checkpoint_seq if read is not None else -1,
        checkpoint_interval=int(property_value(state.metadata, INTERVAL_PROPERTY)),
        lowest_open_write_id=compaction.lowest_open_write_id,
    )


def plan(ctx: Context, ref: str) -> MaintenancePlan:
    """The maintenance plan of one table (nothing is changed)."""
    store = ctx.table(ref)
    store.require_log()
    return plan_maintenance(gather(ctx, ref, store))


def _run_action(ctx: Context, ref: str, store: TableStore, action: Action) -> str:
    """Carry out one action with its operation; returns what it did, in a few words."""
    if action.kind == COMPACT:
        done = compact(ctx, ref, CompactOptions(kind="auto"))
        if done.log_seq is None:
            return "nothing to compact any more"
        kinds = sorted({p.kind for p in done.chosen if p.kind})
        return (
            f"{'/'.join(kinds)} in {len(done.chosen)} partition(s), log entry "
            f"{done.log_seq}; {len(done.obsolete)} dir(s) replaced"
        )
    if action.kind == CLEAN:
        cleaned = clean(ctx, ref, CleanOptions())
        return (
            f"deleted {len(cleaned.deleted)} path(s), {cleaned.bytes_freed} bytes; "
            f"expired {len(cleaned.expired_log_entries)} log entries"
        )
    if action.kind == CHECKPOINT:
        written = write_checkpoint(store)
        return f"checkpoint at log entry {written.seq}" + ("" if written.created else " (kept)")
    raise ValueError(f"unknown maintenance action {action.kind!r}")


def maintain_table(ctx: Context, ref: str, options: MaintainOptions) -> TableMaintenance:
    """Plan and (unless ``dry_run``) maintain one table; never raises for the table's own
    errors: they are its ``failed`` result."""
    started = time.time()
    name = ref
    results: list[ActionResult] = []
    try:
        store = ctx.table(ref)
        name = store.name or store.url
        store.require_log()
        lock = MaintenanceLock(store)
        if not options.dry_run:
            if options.wait:
                ctx.progress(f"{name}: waiting for its maintenance lock")
                lock.acquire_waiting()
            else:
                holder = lock.acquire()
                if holder is not None:
                    return TableMaintenance(
                        name,
                        SKIPPED,
                        reason=f"locked: another maintenance run holds it ({holder.describe()})",
                        seconds=time.time() - started,
                    )
        with lock:
            ctx.progress(f"{name}: planning")
            decided = plan_maintenance(gather(ctx, ref, store))
            if options.dry_run:
                results = [ActionResult(a, "planned") for a in decided.actions]
            for action in () if options.dry_run else decided.actions:
                ctx.progress(f"{name}: {action.kind}")
                try:
                    summary = _run_action(ctx, ref, store, action)
                except Exception:
                    results.append(ActionResult(action, FAILED))
                    results += [ActionResult(a, "not run") for a in decided.actions[len(results) :]]
                    raise
                results.append(ActionResult(action, "done", summary))
        return TableMaintenance(
            name,
            OK,
            tuple(results),
            notes=decided.notes,
            seconds=time.time() - started,
        )
    except Exception as exc:  # the next table is still maintained
        return TableMaintenance(
            name, FAILED, tuple(results), error=error_json(exc), seconds=time.time() - started
        )


def maintain(ctx: Context, options: MaintainOptions) -> MaintainResult:
    """Maintain the tables ``options`` names, else every table of the warehouse, in order."""
    refs: Sequence[str]
    warehouse: str | None = None
    if options.tables:
        refs = options.tables
    else:
        found = find_tables(ctx)
        refs, warehouse = found.names, found.url
    result = MaintainResult(warehouse, options.dry_run)
    for ref in refs:
        result.tables.append(maintain_table(ctx, ref, options))
    return result


__all__ = [
    "ActionResult",
    "MaintainOptions",
    "MaintainResult",
    "TableMaintenance",
    "gather",
    "maintain",
    "maintain_table",
    "plan",
]
