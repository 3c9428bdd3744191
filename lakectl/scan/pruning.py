"""Read less for a ``--where``: skip partitions and list-bucketing directories it cannot match.

The decisions are pure (:mod:`lakectl.planning.prune`, :mod:`lakectl.planning.list_bucket_plan`);
this module applies them to a :class:`ReadTarget` and measures what the reader will scan, so
pruning is reported (``snapshot --json`` → ``scan``), not assumed. Deltas and delete deltas are
always read whole: only a base is split by value.

Type 7 statements are applied after the stored rows are read and before ``--where``: a stored
value an ``UPDATE ... SET x = ...`` may change cannot be used to skip files, so constraints on
the columns any installed statement assigns are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakectl.planning.list_bucket_plan import file_may_match, layout_of, layouts_by_dir
from lakectl.planning.prune import (
    analyze_where,
    assigned_columns,
    canonical_text,
    partition_may_match,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.target import ReadTarget

if TYPE_CHECKING:
    from lakectl.expr.check import CheckedStatement
    from lakectl.expr.tree import Node


@dataclass(frozen=True)
class ScanStats:
    """What a read scans (after pruning) out of what the plain plan would scan."""

    partitions: int
    partitions_read: int
    files: int
    files_read: int
    bytes: int
    bytes_read: int
    pruned_on: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitions": self.partitions,
            "partitions_read": self.partitions_read,
            "files": self.files,
            "files_read": self.files_read,
            "bytes": self.bytes,
            "bytes_read": self.bytes_read,
            "pruned_on": self.pruned_on,
        }


def _files(plans: Sequence[PartitionReadPlan]) -> tuple[int, int]:
    entries = [f for p in plans for d in (*p.data_dirs, *p.delete_deltas) for f in d.files] + [
        f for p in plans for f in p.originals
    ]
    return len(entries), sum(f.size for f in entries)


def prune_target(
    target: ReadTarget, where: Node | None, statements: Sequence[CheckedStatement] = ()
) -> tuple[ReadTarget, ScanStats]:
    """The target restricted to what the bound condition ``where`` (the one the read filters
    with, :func:`lakectl.expr.bind_where`) can match, and what it will scan.

    ``statements`` are the checked Type 7 statements the read applies.
    """
    meta = target.metadata
    layouts = layouts_by_dir(target.state.records) if target.state is not None else {}
    used = [layout_of(p, layouts) for p in target.plans]
    skew_cols = {c for lb in used if lb is not None for c in lb.columns}
    types = {c: meta.schema[c].type for c in (*meta.partition_by, *sorted(skew_cols))}
    constraints = analyze_where(where, types)
    if statements and constraints:
        assigned = assigned_columns(statements)
        constraints = {c: v for c, v in constraints.items() if c not in assigned}
    files, size = _files(target.plans)
    plans = list(target.plans)
    if constraints:
        canonical = {c: (lambda text, t=types[c]: canonical_text(text, t)) for c in skew_cols}
        kept: list[PartitionReadPlan] = []
        for plan, layout in zip(target.plans, used, strict=True):
            if not partition_may_match(plan.values, meta.partition_by, types, constraints):
                continue
            if plan.base is not None and layout is not None:
                base_files = tuple(
                    f for f in plan.base.files if file_may_match(f, layout, constraints, canonical)
                )
                plan = replace(plan, base=replace(plan.base, files=base_files))
            kept.append(plan)
        plans = kept
    files_read, bytes_read = _files(plans)
    stats = ScanStats(
        partitions=len(target.plans),
        partitions_read=len(plans),
        files=files,
        files_read=files_read,
        bytes=size,
        bytes_read=bytes_read,
        pruned_on={c: sorted(v) for c, v in sorted(constraints.items())},
    )
    return replace(target, plans=tuple(plans)), stats
