"""What ``lakectl maintain`` does to one table, as a pure function of what it found.

Input (:class:`TableFacts`): the decisions ``compact --auto`` would take now (one per partition,
from :func:`lakectl.planning.compaction_plan.plan_compaction`), what ``clean`` with the table's
own retention would do now (:class:`~lakectl.planning.clean_plan.CleanPlan`), and where the
log and its newest usable checkpoint are. Output (:class:`MaintenancePlan`): the actions, in the
order they run, each with the reason a person reads in ``--dry-run``:

1. ``compact`` (auto: minor or major per partition, by the table's ``compactor.*`` thresholds)
   when any partition is chosen;
2. ``clean`` when it would delete anything (directories replaced by compactions outside the
   retention window, leftovers of dead writers, crashed compactions and staging), mark a dead
   writer's write id aborted, or expire log entries;
3. ``checkpoint`` when the log has grown ``log.checkpoint.interval`` entries past its newest
   usable checkpoint (commits write one when due; a failed or removed one is written here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lakectl.planning.clean_plan import CleanPlan
from lakectl.planning.compaction_plan import PartitionCompaction
from lakectl.table.checkpoint import checkpoint_due

COMPACT, CLEAN, CHECKPOINT = "compact", "clean", "checkpoint"
ACTIONS = (COMPACT, CLEAN, CHECKPOINT)


@dataclass(frozen=True)
class TableFacts:
    """What one table needs, as found without Spark."""

    table: str
    compaction: Sequence[PartitionCompaction]
    clean: CleanPlan
    last_seq: int
    checkpoint_seq: int
    """The newest usable checkpoint's log entry (-1: none)."""
    checkpoint_interval: int
    lowest_open_write_id: int | None = None


@dataclass(frozen=True)
class Action:
    """One step of a table's maintenance: ``kind`` is one of :data:`ACTIONS`."""

    kind: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind, "reason": self.reason, "details": self.details}


@dataclass(frozen=True)
class MaintenancePlan:
    """The actions for one table, in order; empty when it needs nothing."""

    table: str
    actions: tuple[Action, ...]
    notes: tuple[str, ...] = ()

    @property
    def needs_nothing(self) -> bool:
        return not self.actions


def plan_maintenance(facts: TableFacts) -> MaintenancePlan:
    """The actions ``facts`` call for (see the module docstring)."""
    actions = [
        a
        for a in (
            _compaction(facts.compaction),
            _clean(facts.clean),
            _checkpoint(facts.last_seq, facts.checkpoint_seq, facts.checkpoint_interval),
        )
        if a is not None
    ]
    notes = []
    if facts.lowest_open_write_id is not None:
        notes.append(
            f"write id {facts.lowest_open_write_id} is open: deltas from it up are not compacted"
        )
    return MaintenancePlan(facts.table, tuple(actions), tuple(notes))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _compaction(decisions: Sequence[PartitionCompaction]) -> Action | None:
    chosen = [d for d in decisions if d.chosen]
    if not chosen:
        return None
    kinds = Counter(d.kind or "" for d in chosen)
    counted = ", ".join(f"{kind} in {_plural(kinds[kind], 'partition')}" for kind in sorted(kinds))
    first = chosen[0]
    where = f"{first.relative}: " if first.relative else ""
    more = f" (and {_plural(len(chosen) - 1, 'more partition')})" if len(chosen) > 1 else ""
    return Action(
        COMPACT,
        f"{counted}: {where}{first.reason}{more}",
        {
            "partitions": [
                {"partition": d.relative, "type": d.kind, "reason": d.reason} for d in chosen
            ]
        },
    )


def _clean(plan: CleanPlan) -> Action | None:
    if not plan.changes_anything:
        return None
    parts = []
    if plan.delete:
        kinds = Counter(i.kind for i in plan.delete)
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        parts.append(f"delete {_plural(len(plan.delete), 'path')} ({listed})")
    if plan.abort_write_ids:
        ids = ", ".join(str(w) for w in plan.abort_write_ids)
        parts.append(f"mark write id(s) {ids} aborted (their writers are gone)")
    if plan.abort_runs:
        runs = ", ".join(plan.abort_runs)
        parts.append(f"mark compaction(s) {runs} failed (their processes are gone)")
    if plan.log is not None and plan.log.changes_anything:
        parts.append(plan.log.summary(dry_run=True).replace("would ", ""))
    if not parts:  # only records directories already gone
        parts.append(f"record {_plural(len(plan.record_deleted), 'removed directory')}")
    return Action(
        CLEAN,
        "; ".join(parts),
        {
            "delete": [i.to_json() for i in plan.delete],
            "abort_write_ids": list(plan.abort_write_ids),
            "abort_compactions": list(plan.abort_runs),
            "bytes": sum(i.bytes for i in plan.delete),
        },
    )


def _checkpoint(last_seq: int, checkpoint_seq: int, interval: int) -> Action | None:
    if not checkpoint_due(last_seq, checkpoint_seq, interval):
        return None
    if checkpoint_seq < 0:
        why = f"the log has {last_seq + 1} entries and no usable checkpoint"
    else:
        why = f"log entry {last_seq} is {last_seq - checkpoint_seq} entries past the newest "
        why += f"checkpoint (at entry {checkpoint_seq})"
    return Action(
        CHECKPOINT,
        f"{why}; log.checkpoint.interval={interval}",
        {"seq": last_seq},
    )


__all__ = ["ACTIONS", "Action", "MaintenancePlan", "TableFacts", "plan_maintenance"]
