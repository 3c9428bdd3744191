"""Folding Type 7 statements into stored rows in Arrow, partition by partition: the rule of
:mod:`lakectl.spark.statement_fold` without a JVM.

Each partition's live rows are read with their ACID identity by the Arrow partition reader
(:mod:`lakectl.arrow.partition_reader`, the live-row kernel's rule), the statements applied in
order with the Arrow statement engine (:func:`lakectl.arrow.statements.apply_compiled`, the
semantics a snapshot applies them with), and the result compared with the rows as read by
identity: a row the statements drop gives a delete event, a row they change a delete event plus
its new values as a new row (in the partition its new values name), a row they leave as it was
(every column equal, NULL equal to NULL, NaN to NaN) nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.arrow.partition_reader import MergeSpec, partition_rows
from lakectl.arrow.row_changes import changed_rows, partition_changes, split_by_partition
from lakectl.arrow.statements import CompiledStatement, apply_compiled
from lakectl.errors import overflow_error
from lakectl.kernel.live_rows import IDENTITY
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges

_POSITION = "__lakectl_position"


@dataclass
class FoldedChanges:
    """The changes the statements make, gathered by partition (changed rows only)."""

    meta: TableMetadata
    deleted: int = 0
    updated: int = 0
    deletes: dict[tuple[Any, ...], list[pa.Table]] = field(default_factory=dict)
    inserts: dict[tuple[Any, ...], list[pa.Table]] = field(default_factory=dict)

    def partitions(self) -> Iterator[PartitionChanges]:
        """One :class:`~lakectl.arrow.acid_writer.PartitionChanges` per partition changed, in
        path order (the iterable :func:`~lakectl.arrow.acid_writer.write_changes` takes)."""
        return partition_changes(self.meta, self.deletes, self.inserts)


def fold_statements(
    spec: MergeSpec,
    plans: Sequence[PartitionReadPlan],
    statements: Sequence[CompiledStatement],
    meta: TableMetadata,
) -> FoldedChanges:
    """What ``statements`` (in order) change in the live rows of ``plans``, one partition read
    at a time."""
    folded = FoldedChanges(meta)
    for plan in plans:
        if not plan.is_empty:
            _fold_partition(folded, partition_rows(spec, plan, with_identity=True), statements)
    return folded


def _fold_partition(
    folded: FoldedChanges, rows: pa.Table, statements: Sequence[CompiledStatement]
) -> None:
    import numpy as np
    import pyarrow as pa

    if not rows.num_rows:
        return
    meta = folded.meta
    rows = rows.append_column(_POSITION, pa.array(np.arange(rows.num_rows), pa.int64()))
    try:
        after = apply_compiled(rows, statements)
    except pa.ArrowInvalid as exc:
        if "overflow" in str(exc):  # the checked integer kernels (lakectl.expr)
            raise overflow_error() from exc
        raise
    kept = after.column(_POSITION).to_numpy()
    gone = np.ones(rows.num_rows, dtype=bool)
    gone[kept] = False
    names = meta.schema.names
    before = rows.take(pa.array(kept, pa.int64()))
    changed = changed_rows(after.select(names), before.select(names))
    old = pa.concat_tables(
        [
            rows.filter(pa.array(gone)).select(list(IDENTITY)),
            before.filter(changed).select(list(IDENTITY)),
        ]
    )
    folded.deleted += int(gone.sum())
    new = after.filter(changed)
    folded.updated += new.num_rows
    if old.num_rows:
        values = tuple(rows.column(p)[0].as_py() for p in meta.partition_by)
        folded.deletes.setdefault(values, []).append(old)
    for values, part in split_by_partition(meta, new):
        folded.inserts.setdefault(values, []).append(part)


__all__ = ["FoldedChanges", "fold_statements"]
