"""Which partitions to compact, and how: Hive's compactor Initiator, as a pure function.

Input: per partition, what a reader uses now (:class:`PartitionReadPlan`), the row counts of its
directories (from ORC footers), and the lowest write id still open. Output: one
:class:`PartitionCompaction` per partition with a decision and a reason a person can read, whether
the partition was chosen or not.

Hive's policy (``Initiator.determineCompactionType``), used by ``auto``:

* major when more than ``compactor.aborted.threshold`` aborted write ids left directories in the
  partition (checked first, as Hive's "too many aborts"; ``clean`` then removes those
  directories, which no reader uses);
* major when the deltas hold more than ``compactor.delta.pct.threshold`` of the base's bytes or
  rows;
* otherwise, when there are more than ``compactor.delta.num.threshold`` delta directories (delete
  deltas count too): minor, or major when there is no base;
* otherwise nothing.

Only write ids below the lowest still-open one are compacted: a delta at or above it stays as it
is, so a running writer's transaction is never folded into a compacted directory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakectl.errors import UsageError
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import base_dir_name, delta_range_dir_name
from lakectl.table.listing import DirListing, PartitionListing
from lakectl.table.metadata import TableMetadata

KINDS = ("minor", "major", "auto")
MINOR, MAJOR = "minor", "major"
DELTA_NUM_KEY = "compactor.delta.num.threshold"
DELTA_PCT_KEY = "compactor.delta.pct.threshold"
ABORTED_KEY = "compactor.aborted.threshold"


@dataclass(frozen=True)
class Thresholds:
    """When ``auto`` compacts: more than ``delta_num`` deltas, deltas > ``delta_pct`` of the
    base, or more than ``aborted_num`` aborted write ids with directories in the partition."""

    delta_num: int = 10
    delta_pct: float = 0.1
    aborted_num: int = 1000

    @staticmethod
    def from_metadata(
        meta: TableMetadata,
        delta_num: int | None = None,
        delta_pct: float | None = None,
        aborted_num: int | None = None,
    ) -> Thresholds:
        """Table properties, overridden by per-run options when given."""

        def parse(key: str, cast: Any) -> Any:
            text = meta.property(key)
            try:
                return cast(text)
            except ValueError as exc:
                raise UsageError(
                    f"table property {key}={text!r} is not a valid number",
                    hint="set it to a number, or pass the threshold as an option for this run",
                ) from exc

        num = delta_num if delta_num is not None else parse(DELTA_NUM_KEY, int)
        pct = delta_pct if delta_pct is not None else parse(DELTA_PCT_KEY, float)
        aborted = aborted_num if aborted_num is not None else parse(ABORTED_KEY, int)
        if num < 0 or aborted < 0 or not math.isfinite(pct) or pct < 0:
            raise UsageError("compaction thresholds must be finite and not negative")
        return Thresholds(num, pct, aborted)

    def to_json(self) -> dict[str, float]:
        return {
            DELTA_NUM_KEY: self.delta_num,
            DELTA_PCT_KEY: self.delta_pct,
            ABORTED_KEY: self.aborted_num,
        }


@dataclass(frozen=True)
class PartitionCompaction:
    """The decision for one partition. ``kind`` is ``None`` when it is left alone."""

    relative: str
    kind: str | None
    reason: str
    base: DirListing | None = None
    deltas: tuple[DirListing, ...] = ()
    delete_deltas: tuple[DirListing, ...] = ()
    waiting: tuple[DirListing, ...] = ()
    output_delta: str | None = None
    output_delete_delta: str | None = None
    output_base: str | None = None
    min_write_id: int = 0
    max_write_id: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def chosen(self) -> bool:
        return self.kind is not None

    @property
    def inputs(self) -> tuple[DirListing, ...]:
        """Directories whose contents the compaction rewrites (and makes obsolete)."""
        base = (self.base,) if self.base is not None and self.kind == MAJOR else ()
        return base + self.deltas + self.delete_deltas

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names (inside the partition) of the directories the compaction writes."""
        names = (self.output_base, self.output_delta, self.output_delete_delta)
        return tuple(n for n in names if n)

    def output_path(self, name: str) -> str:
        return f"{self.relative}/{name}" if self.relative else name

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.relative,
            "type": self.kind,
            "reason": self.reason,
            "inputs": [d.relative for d in self.inputs] if self.chosen else [],
            "outputs": [self.output_path(n) for n in self.outputs],
            "waiting": [d.relative for d in self.waiting],
            "write_ids": [self.min_write_id, self.max_write_id] if self.chosen else None,
            "stats": dict(self.stats),
        }


def _rows(dirs: Sequence[DirListing], rows: Mapping[str, int]) -> int | None:
    """Total rows of ``dirs``; ``None`` when a count is unknown."""
    total = 0
    for d in dirs:
        if d.relative not in rows:
            return None
        total += rows[d.relative]
    return total


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def aborted_write_ids(
    listings: Iterable[PartitionListing], aborted: Iterable[int]
) -> dict[str, int]:
    """Per partition (relative path), how many of the ``aborted`` write ids left a delta or
    delete delta directory in it. Partitions without any are left out."""
    ids = set(aborted)
    out: dict[str, int] = {}
    for listing in listings:
        found = {
            d.acid.min_write_id
            for d in listing.dirs
            if not d.acid.is_base
            and d.acid.min_write_id == d.acid.max_write_id
            and d.acid.min_write_id in ids
        }
        if found:
            out[listing.relative] = len(found)
    return out


def plan_partition_compaction(
    plan: PartitionReadPlan,
    kind: str,
    thresholds: Thresholds,
    *,
    lowest_open: int | None = None,
    rows: Mapping[str, int] | None = None,
    visibility_txn: int | None = None,
    aborted: int = 0,
) -> PartitionCompaction:
    """Decide for one partition (see module docstring). ``aborted`` is how many aborted write
    ids left directories in it (:func:`aborted_write_ids`)."""
    if kind not in KINDS:
        raise UsageError(f"compaction kind {kind!r}: use one of {', '.join(KINDS)}")
    rows = rows or {}
    name = plan.relative

    def below(d: DirListing) -> bool:
        return lowest_open is None or d.acid.max_write_id < lowest_open

    deltas = tuple(d for d in plan.deltas if below(d))
    deletes = tuple(d for d in plan.delete_deltas if below(d))
    waiting = tuple(d for d in (*plan.deltas, *plan.delete_deltas) if not below(d))
    wait_note = (
        f"; {_plural(len(waiting), 'delta')} at or above open write id {lowest_open} left as they are"
        if waiting
        else ""
    )
    base = plan.base
    if base is not None and not below(base):
        return PartitionCompaction(
            name, None, f"base {base.acid.name} is above open write id {lowest_open}", base
        )
    delta_dirs = deltas + deletes
    n = len(delta_dirs)
    base_bytes = base.size if base else 0
    delta_bytes = sum(d.size for d in delta_dirs)
    base_rows = _rows((base,), rows) if base else 0
    delta_rows = _rows(delta_dirs, rows)
    stats: dict[str, float] = {
        "deltas": n,
        "base_bytes": base_bytes,
        "delta_bytes": delta_bytes,
    }
    if base_rows is not None and delta_rows is not None:
        stats.update(base_rows=base_rows, delta_rows=delta_rows)
    if aborted:
        stats["aborted_write_ids"] = aborted

    def leave(reason: str) -> PartitionCompaction:
        return PartitionCompaction(
            name, None, reason + wait_note, base, deltas, deletes, waiting, stats=stats
        )

    if n == 0:
        where = f"above {base.acid.name}" if base else "in the partition"
        if kind == "auto" and aborted > thresholds.aborted_num:
            return leave(
                f"{_aborts(aborted, thresholds)}, but no committed deltas {where} to compact; "
                "`lakectl clean` removes their directories"
            )
        return leave(f"nothing to compact: no committed deltas {where}")
    ranges = {(d.acid.min_write_id, d.acid.max_write_id) for d in delta_dirs}
    low = min(r[0] for r in ranges)
    high = max(r[1] for r in ranges)

    chosen: str | None
    if kind == MAJOR:
        chosen, reason = MAJOR, f"major requested: rewrite {_describe(base, n)}"
    elif kind == MINOR:
        if len(ranges) < 2:
            return leave(f"nothing to merge: the deltas cover one write-id range ({low}..{high})")
        chosen, reason = MINOR, f"minor requested: merge {_plural(n, 'delta')} ({low}..{high})"
    else:
        chosen, reason = _auto(
            base, n, base_bytes, delta_bytes, base_rows, delta_rows, aborted, thresholds
        )
        if chosen == MINOR and len(ranges) < 2:
            return leave(f"{reason}, but they cover one write-id range: nothing to merge")
        if chosen is None:
            return leave(reason)
    if chosen == MAJOR:
        top = max(high, base.acid.max_write_id if base else 0)
        return PartitionCompaction(
            name,
            MAJOR,
            reason + wait_note,
            base,
            deltas,
            deletes,
            waiting,
            output_base=base_dir_name(top, visibility_txn),
            min_write_id=base.acid.max_write_id if base else low,
            max_write_id=top,
            stats=stats,
        )
    return PartitionCompaction(
        name,
        MINOR,
        reason + wait_note,
        base,
        deltas,
        deletes,
        waiting,
        output_delta=delta_range_dir_name(low, high) if deltas else None,
        output_delete_delta=delta_range_dir_name(low, high, delete=True) if deletes else None,
        min_write_id=low,
        max_write_id=high,
        stats=stats,
    )


def _aborts(aborted: int, t: Thresholds) -> str:
    return (
        f"{_plural(aborted, 'aborted write id')} left directories here "
        f"(> {ABORTED_KEY}={t.aborted_num})"
    )


def _describe(base: DirListing | None, n: int) -> str:
    return (f"{base.acid.name} + " if base else "no base, ") + _plural(n, "delta")


def _auto(
    base: DirListing | None,
    n: int,
    base_bytes: int,
    delta_bytes: int,
    base_rows: int | None,
    delta_rows: int | None,
    aborted: int,
    t: Thresholds,
) -> tuple[str | None, str]:
    """Hive's Initiator decision for one partition with ``n`` > 0 committed deltas."""
    if aborted > t.aborted_num:  # Hive's "too many aborts" comes first
        return MAJOR, (
            f"{_aborts(aborted, t)}: rewrite {_describe(base, n)}; "
            "`lakectl clean` then removes their directories"
        )
    no_base = base is None or (base_bytes == 0 and not base_rows)
    if not no_base:
        by_bytes = delta_bytes / base_bytes if base_bytes else 0.0
        by_rows = delta_rows / base_rows if base_rows and delta_rows is not None else 0.0
        if by_bytes > t.delta_pct or by_rows > t.delta_pct:
            what = (
                f"{by_bytes:.0%} of the base's bytes"
                if by_bytes > t.delta_pct
                else f"{by_rows:.0%} of the base's rows"
            )
            return MAJOR, f"deltas hold {what} (> {DELTA_PCT_KEY}={t.delta_pct:g})"
    if n > t.delta_num:
        more = f"{_plural(n, 'delta')} (> {DELTA_NUM_KEY}={t.delta_num})"
        if no_base:
            return MAJOR, f"{more} and no base"
        return MINOR, more
    pct = ""
    if not no_base:
        by_bytes = delta_bytes / base_bytes if base_bytes else 0.0
        pct = f", deltas are {by_bytes:.1%} of the base's bytes (<= {t.delta_pct:g})"
    return None, f"below thresholds: {_plural(n, 'delta')} (<= {t.delta_num}){pct}"


def plan_compaction(
    plans: Sequence[PartitionReadPlan],
    kind: str,
    thresholds: Thresholds,
    *,
    lowest_open: int | None = None,
    rows: Mapping[str, int] | None = None,
    visibility_txn: int | None = None,
    aborted: Mapping[str, int] | None = None,
) -> list[PartitionCompaction]:
    """One decision per partition, in partition order.

    ``rows`` maps a directory's relative path to its row (event) count; ``lowest_open`` is the
    lowest write id allocated but neither committed nor aborted (``None``: none open);
    ``visibility_txn`` goes into the ``_vNNNNNNN`` suffix of new bases; ``aborted`` maps a
    partition to its count of aborted write ids with directories (:func:`aborted_write_ids`).
    """
    aborted = aborted or {}
    return [
        plan_partition_compaction(
            plan,
            kind,
            thresholds,
            lowest_open=lowest_open,
            rows=rows,
            visibility_txn=visibility_txn,
            aborted=aborted.get(plan.relative, 0),
        )
        for plan in sorted(plans, key=lambda p: p.relative)
    ]
