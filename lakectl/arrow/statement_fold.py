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
from lakectl.arrow.statements import CompiledStatement, apply_compiled
from lakectl.arrow.types import arrow_schema
from lakectl.errors import overflow_error
from lakectl.kernel.live_rows import IDENTITY, identity_fields
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
        import pyarrow as pa

        from lakectl.arrow.acid_writer import PartitionChanges

        data = arrow_schema(self.meta.data_schema)
        identity = pa.schema(identity_fields())
        for values in sorted({*self.deletes, *self.inserts}, key=_sort_key):
            yield PartitionChanges(
                values,
                inserts=_concat(self.inserts.get(values), data),
                deletes=_concat(self.deletes.get(values), identity),
            )


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
    changed = _changed(after.select(names), before.select(names))
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
    for values, part in _by_partition(meta, new):
        folded.inserts.setdefault(values, []).append(part)


def _changed(new: pa.Table, old: pa.Table) -> pa.Array:
    """Rows where any column of ``new`` differs from ``old`` (NULL equals NULL, NaN NaN, as
    Spark's ``<=>`` compares)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    differs = np.zeros(new.num_rows, dtype=bool)
    for a, b in zip(new.columns, old.columns, strict=True):
        a, b = a.combine_chunks(), b.combine_chunks()
        if pa.types.is_nested(a.type):
            same = np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)])
        else:
            equal = pc.fill_null(pc.equal(a, b), False)
            both_null = pc.and_(a.is_null(), b.is_null())
            eq = pc.or_(equal, both_null)
            if pa.types.is_floating(a.type):
                eq = pc.or_(eq, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
            same = np.asarray(eq.to_numpy(zero_copy_only=False), dtype=bool)
        differs |= ~same
    return pa.array(differs)


def _by_partition(
    meta: TableMetadata, rows: pa.Table
) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """``rows`` (the table's columns) split by the partition their partition columns name."""
    import pyarrow as pa

    if not rows.num_rows:
        return
    if not meta.partition_by:
        yield (), rows
        return
    keys = list(zip(*(rows.column(p).to_pylist() for p in meta.partition_by), strict=True))
    positions: dict[tuple[Any, ...], list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    for key, at in positions.items():
        yield key, rows.take(pa.array(at, pa.int64()))


def _sort_key(values: tuple[Any, ...]) -> tuple[tuple[bool, str], ...]:
    return tuple((v is None, "" if v is None else str(v)) for v in values)


def _concat(tables: list[pa.Table] | None, schema: pa.Schema) -> pa.Table | None:
    import pyarrow as pa

    if not tables:
        return None
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables]).combine_chunks()


__all__ = ["FoldedChanges", "fold_statements"]
