"""Which log entries and checkpoints ``clean`` may expire: a pure function of the log.

``clean`` keeps every state current inside the retention window: the one current at the
horizon ``now - retain`` (the newest entry committed at or before it) and every later one. The
log entries before that state are needed by no kept state, but a reader still rebuilds the
table from them, so they go only once a checkpoint at or before it exists: the newest usable
checkpoint at or before the horizon state (``clean`` writes one at the horizon state when there
is none). History then starts at that checkpoint: the entries before it and the older
checkpoints are expired, and time travel to a state before it is a clear error.

Entry 0 (the table's birth) always stays: ``create`` claims the table with put-if-absent on it,
so deleting it would let a second ``create`` succeed over the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lakectl.table.log import TableState
from lakectl.table.retention import describe_start, first_version, history_start


@dataclass(frozen=True)
class LogExpiry:
    """History starts at ``start`` after ``clean``; ``write_checkpoint``: no usable checkpoint
    is there yet, ``clean`` writes it (put-if-absent) before deleting anything."""

    start: int
    start_version: int | None
    start_time: int
    write_checkpoint: bool
    entries: tuple[int, ...]
    checkpoints: tuple[int, ...]
    recorded: bool
    """Whether an earlier ``clean`` already recorded ``start`` (a rerun only deletes leftovers)."""
    describe: str

    @property
    def changes_anything(self) -> bool:
        return bool(self.entries or self.checkpoints or self.write_checkpoint or not self.recorded)

    def to_json(self) -> dict[str, Any]:
        return {
            "history_start": {
                "seq": self.start,
                "version": self.start_version,
                "committed_at": self.start_time,
            },
            "write_checkpoint": self.write_checkpoint,
            "log_entries": list(self.entries),
            "checkpoints": list(self.checkpoints),
        }

    def summary(self, dry_run: bool) -> str:
        """``expired 4,899 log entries and 48 checkpoints: history starts at version 4900 ...``"""
        verb = "would expire" if dry_run else "expired"
        parts = [f"{len(self.entries):,} log entr{'y' if len(self.entries) == 1 else 'ies'}"]
        if self.checkpoints:
            parts.append(f"{len(self.checkpoints):,} checkpoint(s)")
        wrote = ""
        if self.write_checkpoint:
            wrote = f"; {'would write' if dry_run else 'wrote'} the checkpoint at log entry "
            wrote += f"{self.start} first"
        return f"{verb} {' and '.join(parts)}: {self.describe}{wrote}"


def horizon_seq(state: TableState, horizon: int) -> int | None:
    """The log entry of the state current at ``horizon``: the newest committed at or before it."""
    seqs = [r.seq for r in state.records if r.committed_at <= horizon]
    return max(seqs) if seqs else None


def plan_log_expiry(
    state: TableState,
    *,
    horizon: int,
    log_entries: Iterable[int],
    checkpoints: Iterable[int],
    usable: Iterable[int],
) -> LogExpiry | None:
    """What to expire, given the full ``state``, the seqs of the log entries and checkpoints on
    storage, and those of the checkpoints known to be usable (at least the newest usable one at
    or before the horizon state, when there is one); None when history cannot start later."""
    floor = horizon_seq(state, horizon)
    if floor is None or floor <= 0:
        return None
    candidates = [c for c in usable if 0 < c <= floor]
    start = max(candidates, default=floor)
    recorded = history_start(state.records)
    if start <= recorded:
        start = recorded  # never move history's start back
    if start <= 0:
        return None
    first = next((r for r in state.records if r.seq == start), None)
    if first is None:
        return None
    entries = tuple(sorted(s for s in log_entries if 0 < s < start))
    old_checkpoints = tuple(sorted(c for c in checkpoints if c < start))
    return LogExpiry(
        start=start,
        start_version=first_version(first, state),
        start_time=first.committed_at,
        write_checkpoint=not candidates and start > recorded,
        entries=entries,
        checkpoints=old_checkpoints,
        recorded=start <= recorded,
        describe=describe_start(first, state),
    )
