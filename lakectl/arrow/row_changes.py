"""``delete`` and ``update`` in Arrow: which stored rows one statement deletes or changes, per
partition, as the changes :func:`lakectl.arrow.acid_writer.write_changes` writes.

A partition's live rows are read with their ACID identity by the Arrow engine's partition
reader (:mod:`lakectl.arrow.partition_reader`, the live-row kernel's rule); the statement is
compiled as a Type 7 statement is (:mod:`lakectl.arrow.statements`: Spark's semantics, casts
into the column's type, overflow errors) and applied to the rows its condition is true for.
As in :mod:`lakectl.spark.statement_fold`, a deleted row gives a delete event for its identity,
and an updated row a delete event plus its new values as a new row; a row the update leaves as
it was (every column equal, NULL equal to NULL, NaN to NaN) is not rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lakectl.arrow.partition_reader import MergeSpec, partition_batches, partition_values
from lakectl.arrow.statements import CompiledStatement, apply_compiled
from lakectl.arrow.types import arrow_schema
from lakectl.errors import overflow_error
from lakectl.kernel.change_classify import partition_runs
from lakectl.kernel.live_rows import IDENTITY, identity_fields
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges
    from lakectl.scan.target import ReadTarget


def target_merge_spec(target: ReadTarget) -> MergeSpec:
    """The partition reader's description of a resolved table state: storage, schemas, valid
    write ids and the key column (as Spark's reader gets them)."""
    return MergeSpec.of_table(target.store.storage, target.metadata, target.valid)


@dataclass(frozen=True)
class StatementChanges:
    """What one statement does to one partition it read: the rows it deletes and updates, the
    identities of the stored rows to delete, and the new rows (the table's columns, the
    partition columns included), None when it updates none."""

    plan: PartitionReadPlan
    deleted: int
    updated: int
    deletes: pa.Table
    inserts: pa.Table | None


def table_changes(
    spec: MergeSpec,
    plans: Sequence[PartitionReadPlan],
    statement: CompiledStatement,
    workers: int | None = None,
) -> list[StatementChanges]:
    """:func:`statement_changes` of every partition of ``plans`` that it changes, partitions
    read by ``workers`` threads at once (default: one per CPU; pyarrow decodes and filters
    without holding the GIL). A DELETE reads only the columns its condition reads."""
    return list(streamed_changes(spec, plans, statement, workers))


def streamed_changes(
    spec: MergeSpec,
    plans: Sequence[PartitionReadPlan],
    statement: CompiledStatement,
    workers: int | None = None,
) -> Iterator[StatementChanges]:
    """The changes of each partition of ``plans`` that the statement changes, given one at a
    time in the order of ``plans``: at most ``workers`` partitions (default: one per CPU;
    pyarrow decodes and filters without holding the GIL) are read ahead of the one given, so
    memory holds a few partitions' changes, never the table's."""
    import os
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    spec = _delete_spec(spec, statement)
    plans = [p for p in plans if not p.is_empty]
    workers = min(len(plans), workers or os.cpu_count() or 1)
    if workers <= 1:
        for plan in plans:
            found = statement_changes(spec, plan, statement)
            if found.deleted or found.updated:
                yield found
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="lakectl-arrow") as pool:
        ahead: deque[Future[StatementChanges]] = deque()
        try:
            for plan in plans:
                ahead.append(pool.submit(statement_changes, spec, plan, statement))
                if len(ahead) > workers:
                    found = ahead.popleft().result()
                    if found.deleted or found.updated:
                        yield found
            while ahead:
                found = ahead.popleft().result()
                if found.deleted or found.updated:
                    yield found
        finally:
            for future in ahead:
                future.cancel()


def _delete_spec(spec: MergeSpec, statement: CompiledStatement) -> MergeSpec:
    """A DELETE reads only the columns its condition reads, a stripe at a time with only
    those decoded (``bounded`` False: the streaming reader decodes every column of a row)."""
    if not statement.delete:
        return spec
    reads = statement.reads
    columns = tuple(n for n in spec.data_schema.names if n.lower() in reads)
    return replace(spec, columns=columns, bounded=False)


def moves_rows(meta: TableMetadata, statement: CompiledStatement) -> bool:
    """Whether ``statement`` may move rows to another partition (an UPDATE that sets a
    partition column): then a partition's new rows can come from the other partitions read."""
    partition = {c.lower() for c in meta.partition_by}
    return any(name.lower() in partition for name, _ in statement.values)


def own_partition_changes(meta: TableMetadata, change: StatementChanges) -> PartitionChanges:
    """The changes of one partition read by a statement that moves no row
    (:func:`moves_rows` False): its delete events and new rows both go to that partition."""
    from lakectl.arrow.acid_writer import PartitionChanges

    inserts = [change.inserts] if change.inserts is not None else None
    deletes = [change.deletes] if change.deletes.num_rows else None
    return PartitionChanges(
        partition_values(meta, change.plan),
        inserts=_concat(inserts, arrow_schema(meta.data_schema)),
        deletes=_concat(deletes, _identity_schema()),
    )


def statement_changes(
    spec: MergeSpec, plan: PartitionReadPlan, statement: CompiledStatement
) -> StatementChanges:
    """What ``statement`` (a DELETE or an UPDATE) does to the live rows of ``plan``."""
    import pyarrow as pa

    try:
        matched = _matched_rows(spec, plan, statement)
        if statement.delete or not matched.num_rows:
            deletes = matched.select(list(IDENTITY))
            return StatementChanges(plan, deletes.num_rows, 0, deletes, None)
        new = apply_compiled(matched, [statement])
    except pa.ArrowInvalid as exc:
        if "overflow" in str(exc):  # the checked integer kernels (lakectl.expr)
            raise overflow_error() from exc
        raise
    names = spec.output_schema().names
    changed = changed_rows(new.select(names), matched.select(names))
    deletes = matched.select(list(IDENTITY)).filter(changed)
    inserts = new.select(names).filter(changed)
    return StatementChanges(plan, 0, inserts.num_rows, deletes, inserts)


def _matched_rows(
    spec: MergeSpec, plan: PartitionReadPlan, statement: CompiledStatement
) -> pa.Table:
    """The live rows of ``plan`` (with their identity) that ``statement`` applies to, kept
    stripe by stripe as they are read: the partition's other rows are never held."""
    import pyarrow as pa

    schema = pa.schema([*identity_fields(), *spec.output_schema()])
    kept = []
    for batch in partition_batches(spec, plan, with_identity=True):
        if batch.num_rows:
            found = pa.Table.from_batches([batch]).filter(statement.matches)
            if found.num_rows:
                kept.append(found)
    return pa.concat_tables(kept) if kept else schema.empty_table()


def changed_rows(new: pa.Table, old: pa.Table) -> pa.Array:
    """Rows where any column of ``new`` differs from ``old`` (NULL equals NULL, NaN NaN, as
    Spark's ``<=>`` compares)."""
    import numpy as np
    import pyarrow as pa

    differs = np.zeros(new.num_rows, dtype=bool)
    for a, b in zip(new.columns, old.columns, strict=True):
        differs |= ~_same(a.combine_chunks(), b.combine_chunks())
    return pa.array(differs)


def _same(a: pa.Array, b: pa.Array) -> Any:
    """Which values of ``a`` and ``b`` are equal, null-safely, as a numpy mask."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_nested(a.type):
        return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)])
    same = pc.or_kleene(pc.fill_null(pc.equal(a, b), False), pc.and_(a.is_null(), b.is_null()))
    if pa.types.is_floating(a.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)


def grouped_changes(
    meta: TableMetadata, found: Iterable[StatementChanges]
) -> Iterator[PartitionChanges]:
    """The changes to write, one :class:`~lakectl.arrow.acid_writer.PartitionChanges` per
    partition: delete events where the rows were read, new rows in the partition their values
    name (an update of a partition column moves its rows). Partitions in path order."""
    deletes: dict[tuple[Any, ...], list[pa.Table]] = {}
    inserts: dict[tuple[Any, ...], list[pa.Table]] = {}
    for change in found:
        if change.deletes.num_rows:
            deletes.setdefault(partition_values(meta, change.plan), []).append(change.deletes)
        if change.inserts is not None:
            for values, rows in split_by_partition(meta, change.inserts):
                inserts.setdefault(values, []).append(rows)
    return partition_changes(meta, deletes, inserts)


def partition_changes(
    meta: TableMetadata,
    deletes: dict[tuple[Any, ...], list[pa.Table]],
    inserts: dict[tuple[Any, ...], list[pa.Table]],
) -> Iterator[PartitionChanges]:
    """One :class:`~lakectl.arrow.acid_writer.PartitionChanges` per partition of ``deletes``
    (identities, by partition values) and ``inserts`` (new rows, by the partition they go
    to), in path order."""
    from lakectl.arrow.acid_writer import PartitionChanges

    data = arrow_schema(meta.data_schema)
    identity = _identity_schema()
    for values in sorted({*deletes, *inserts}, key=_sort_key):
        yield PartitionChanges(
            values,
            inserts=_concat(inserts.get(values), data),
            deletes=_concat(deletes.get(values), identity),
        )


def split_by_partition(
    meta: TableMetadata, rows: pa.Table
) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """``rows`` (with the table's partition columns) split by the partition their values name
    (Python values of the table's types), each part in its rows' order."""
    for part in partition_runs(rows, meta.partition_by):
        yield tuple(part.column(c)[0].as_py() for c in meta.partition_by), part


def _sort_key(values: tuple[Any, ...]) -> tuple[tuple[bool, str], ...]:
    return tuple((v is None, "" if v is None else str(v)) for v in values)


def _identity_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(identity_fields())


def _concat(tables: Sequence[pa.Table] | None, schema: pa.Schema) -> pa.Table | None:
    import pyarrow as pa

    if not tables:
        return None
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables]).combine_chunks()


__all__ = [
    "StatementChanges",
    "changed_rows",
    "grouped_changes",
    "moves_rows",
    "own_partition_changes",
    "partition_changes",
    "split_by_partition",
    "statement_changes",
    "streamed_changes",
    "table_changes",
    "target_merge_spec",
]
