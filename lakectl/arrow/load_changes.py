"""A load's batch turned into the Arrow engine's changes, partition by partition, without a JVM.

An append writes every row of the batch as a new row. An upsert or cdc load reduces the batch to
the latest change per key, finds the stored live rows of those keys in the partitions the batch
touches (their key, partition, identity and order value: :mod:`lakectl.arrow.key_lookup`, the
lookup Spark's tasks run, or the Arrow engine's partition reader; the live-row rule is
:mod:`lakectl.kernel.live_rows`'), labels each change
(:mod:`lakectl.kernel.change_classify`, the rule Spark's path applies too) and gives, per
partition, the new rows and the identities of the stored rows replaced or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.key_lookup import LookupSpec, PartitionKeyLookup, lookup_spec
from lakectl.arrow.memory import release_unused_memory
from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.arrow.row_changes import split_by_partition
from lakectl.arrow.types import arrow_schema, arrow_type
from lakectl.kernel import change_classify as cc
from lakectl.kernel.live_rows import IDENTITY, identity_fields
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.batch_checks import POSITION_COL
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges
    from lakectl.arrow.partitioned_batch import PartitionedBatch


@dataclass(frozen=True)
class BatchChanges:
    """What a load writes: the changes per partition (read one partition at a time as they
    are iterated, once), and its counts (the commit record's)."""

    partitions: Iterable[PartitionChanges]
    counts: dict[str, int]


def append_changes(batch: PartitionedBatch, meta: TableMetadata) -> BatchChanges:
    """Every row of ``batch`` (the shaped batch: the table's columns and the load's own) as a
    new row of its partition."""
    partitions = (
        _changes(meta, values, batch.rows_of(values), None)
        for values in sorted(batch.partitions(), key=_sort_key)
    )
    return BatchChanges(partitions, {"inserted": batch.rows})


def keyed_changes(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: PartitionedBatch,
    *,
    mode: LoadMode,
    order_by: str | None,
) -> BatchChanges:
    """The changes of an upsert or cdc ``batch`` against the stored rows of ``plans`` (the
    partitions the batch touches), with the counts by result.

    Each change is decided from the whole batch's keys, order values and actions
    (:meth:`~lakectl.arrow.partitioned_batch.PartitionedBatch.decisions`: a key's changes may
    go to different partitions), holding besides them a few integers per change and the
    stored rows of the batch's keys; which changes write a new row is kept as a flag per
    change, and the new rows themselves are read a partition at a time as the changes are
    iterated."""
    import pyarrow as pa

    order = meta.schema[order_by].name if order_by else None
    decided = cc.decide_changes(
        batch.decisions(),
        lambda keys: stored_rows_for_keys(storage, plans, valid, meta, keys, order),
        meta.primary_key,
        meta.partition_by,
        mode=mode,
        order_by=order,
    )
    writes, counts = decided.writes, decided.counts
    deletes = dict(split_by_partition(meta, decided.replaced))
    del decided

    def partitions() -> Iterator[PartitionChanges]:
        for values in sorted({*batch.partitions(), *deletes}, key=_sort_key):
            new = batch.rows_of(values)
            if new is not None:
                chosen = writes[new.column(POSITION_COL).to_numpy()]
                new = new.filter(pa.array(chosen)) if chosen.any() else None
            if new is not None or values in deletes:
                yield _changes(meta, values, new, deletes.get(values))

    return BatchChanges(partitions(), counts)


def stored_rows_for_keys(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: pa.Table,
    order_by: str | None,
) -> pa.Table:
    """The live stored rows of ``plans`` whose key is one of ``batch``'s (distinct keys, in
    key order: one change per key): the columns of
    :func:`~lakectl.kernel.change_classify.stored_columns`, typed as the table's.

    A single-column key that is not a partition column is looked up as Spark's tasks look it
    up (:mod:`lakectl.arrow.key_lookup`: the key and order columns of each partition's files,
    probed against the batch's keys); any other key by reading the partitions' live rows
    (their key and order columns, stripe by stripe) and keeping those of the batch's keys.
    """
    import pyarrow as pa

    names = cc.stored_columns(meta.primary_key, meta.partition_by, order_by)
    types = {f.name: f.type for f in (*arrow_schema(meta.schema), *identity_fields())}
    schema = pa.schema([pa.field(c, types[c]) for c in names])
    spec = lookup_spec(meta.data_schema, meta.primary_key, order_by)

    def typed(found: pa.Table) -> pa.Table:  # as each part is found: its raw form is freed
        return found.select(names).cast(schema)

    if spec is not None:
        found = _looked_up(storage, plans, valid, meta, batch, spec, typed)
    else:
        found = _scanned(storage, plans, valid, meta, batch, order_by, typed)
    if not found:
        return schema.empty_table()
    return pa.concat_tables(found)


def _looked_up(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: pa.Table,
    spec: LookupSpec,
    typed: Callable[[pa.Table], pa.Table],
) -> list[pa.Table]:
    """The stored rows of the batch's keys by :class:`~lakectl.arrow.key_lookup.
    PartitionKeyLookup` (partition values come as text), each part as ``typed`` gives it."""
    import pyarrow as pa

    types = [arrow_type(c.type) for c in spec.columns.columns]
    keys = batch.column(spec.key).combine_chunks().cast(types[0])  # distinct already
    # A thread probes a partition's events at a time (small partitions together, up to the
    # largest's events): about twice the largest partition's events in memory, not a fixed count.
    lookup = PartitionKeyLookup(
        storage, spec, types, list(meta.partition_by), keys, valid, probe_rows=None
    )

    def matches(group: Sequence[PartitionReadPlan]) -> list[pa.Table]:
        found = []
        for match in lookup.matches(group):  # the events probed before are freed by now
            found.append(typed(pa.Table.from_batches([match])))
            release_unused_memory()
        return found

    groups = _plan_groups(plans, os.cpu_count() or 1)
    if len(groups) <= 1:
        return matches(plans)
    with ThreadPoolExecutor(len(groups), thread_name_prefix="lakectl-lookup") as pool:
        return [t for found in pool.map(matches, groups) for t in found]


def _plan_groups(
    plans: Sequence[PartitionReadPlan], count: int
) -> list[Sequence[PartitionReadPlan]]:
    """``plans`` in up to ``count`` runs of about the same number of stored bytes, in order
    (read by one thread each: pyarrow reads and probes without holding the GIL)."""
    sizes = [sum(f.size for d in p.data_dirs for f in d.files) for p in plans]
    total = sum(sizes)
    if count <= 1 or len(plans) <= 1 or not total:
        return [plans] if plans else []
    groups: list[Sequence[PartitionReadPlan]] = []
    start = seen = 0
    for at, size in enumerate(sizes):
        seen += size
        if seen * count >= total * (len(groups) + 1) and len(groups) < count - 1:
            groups.append(plans[start : at + 1])
            start = at + 1
    groups.append(plans[start:])
    return [g for g in groups if g]


def _scanned(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: pa.Table,
    order_by: str | None,
    typed: Callable[[pa.Table], pa.Table],
) -> list[pa.Table]:
    """The stored rows of the batch's keys, from the partitions' live rows (the Arrow
    engine's partition reader): for a composite key, or one that is a partition column; each
    part as ``typed`` gives it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data_names = {c.lower() for c in meta.data_schema.names}
    wanted = [c for c in (*meta.primary_key, order_by or "") if c and c.lower() in data_names]
    key_not_null = meta.data_key
    spec = MergeSpec.of_table(
        storage, meta, valid, columns=tuple(wanted) or (meta.data_schema.names[0],)
    )
    # Rows are kept by the values of one data key column in the batch; the join on the whole
    # key (kernel.change_classify.classify) does the rest.
    probe = pc.unique(batch.column(key_not_null).combine_chunks()) if key_not_null else None
    found: list[pa.Table] = []
    for plan in plans:
        if plan.is_empty:
            continue
        for part in partition_batches(spec, plan, with_identity=True):
            if key_not_null is not None and probe is not None:
                part = part.filter(pc.is_in(part.column(key_not_null), value_set=probe))
            if part.num_rows:
                found.append(typed(pa.Table.from_batches([part])))
    return found


def _sort_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, "" if v is None else v) for v in values)


def _changes(
    meta: TableMetadata,
    values: tuple[Any, ...],
    inserts: pa.Table | None,
    deletes: pa.Table | None,
) -> PartitionChanges:
    from lakectl.arrow.acid_writer import PartitionChanges

    data = arrow_schema(meta.data_schema)
    new = inserts.select(data.names).cast(data) if inserts is not None else None
    gone = deletes.select(list(IDENTITY)) if deletes is not None else None
    return PartitionChanges(values, new, gone)


__all__ = ["BatchChanges", "append_changes", "keyed_changes", "stored_rows_for_keys"]
