"""A load's batch turned into the Arrow engine's changes, partition by partition, without a JVM.

An append writes every row of the batch as a new row. An upsert or cdc load reduces the batch to
the latest change per key, finds the stored live rows of those keys in the partitions the batch
touches (their key, partition, identity and order value; read by the Arrow engine's partition
reader, so the live-row rule is :mod:`lakectl.kernel.live_rows`'), labels each change
(:mod:`lakectl.kernel.change_classify`, the rule Spark's path applies too) and gives, per
partition, the new rows and the identities of the stored rows replaced or deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.arrow.types import arrow_schema
from lakectl.kernel import change_classify as cc
from lakectl.kernel.live_rows import IDENTITY
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.metadata import TableMetadata
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges


@dataclass(frozen=True)
class BatchChanges:
    """What a load writes: the changes per partition, and its counts (the commit record's)."""

    partitions: list[PartitionChanges]
    counts: dict[str, int]


def append_changes(batch: pa.Table, meta: TableMetadata) -> BatchChanges:
    """Every row of ``batch`` (the shaped batch: the table's columns and the load's own) as a
    new row of its partition."""
    inserts = _by_partition(batch, meta, meta.partition_by)
    partitions = [_changes(meta, values, rows, None) for values, rows in inserts.items()]
    return BatchChanges(partitions, {"inserted": batch.num_rows})


def keyed_changes(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: pa.Table,
    *,
    mode: str,
    order_by: str | None,
) -> BatchChanges:
    """The changes of an upsert or cdc ``batch`` against the stored rows of ``plans`` (the
    partitions the batch touches), with the counts by result."""
    order = meta.schema[order_by].name if order_by else None
    latest = cc.latest_per_key(batch, meta.primary_key, order is not None)
    stored = stored_rows_for_keys(storage, plans, valid, meta, latest, order)
    classified = cc.classify(
        latest, stored, meta.primary_key, meta.partition_by, mode=mode, order_by=order
    )
    counts = cc.load_counts(cc.count_results(classified), batch.num_rows)
    inserts = _by_partition(cc.new_rows(classified), meta, meta.partition_by)
    deletes = _by_partition(
        cc.replaced_rows(classified, meta.partition_by), meta, meta.partition_by
    )
    partitions = [
        _changes(meta, values, inserts.get(values), deletes.get(values))
        for values in sorted({*inserts, *deletes}, key=_sort_key)
    ]
    return BatchChanges(partitions, counts)


def stored_rows_for_keys(
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    meta: TableMetadata,
    batch: pa.Table,
    order_by: str | None,
) -> pa.Table:
    """The live stored rows of ``plans`` whose key is one of ``batch``'s: the columns of
    :func:`~lakectl.kernel.change_classify.stored_columns`, typed as the table's. Each
    partition is read stripe by stripe (only its key and order columns, the identity and its
    delete events); only the rows with a key of the batch are kept."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data_names = {c.lower() for c in meta.data_schema.names}
    wanted = [c for c in (*meta.primary_key, order_by or "") if c and c.lower() in data_names]
    key_not_null = next((k for k in meta.primary_key if k not in meta.partition_by), None)
    spec = MergeSpec(
        storage,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        valid,
        key_not_null,
        columns=tuple(wanted) or (meta.data_schema.names[0],),
    )
    probe = key_not_null  # a data key column: rows are kept by its values in the batch
    probe_values = pc.unique(batch.column(probe).combine_chunks()) if probe else None
    names = cc.stored_columns(meta.primary_key, meta.partition_by, order_by)
    types = {f.name: f.type for f in (*arrow_schema(meta.schema), *_identity_fields())}
    schema = pa.schema([pa.field(c, types[c]) for c in names])
    found: list[pa.Table] = []
    for plan in plans:
        if plan.is_empty:
            continue
        for part in partition_batches(spec, plan, with_identity=True):
            if probe is not None and probe_values is not None:
                part = part.filter(pc.is_in(part.column(probe), value_set=probe_values))
            if part.num_rows:
                found.append(pa.Table.from_batches([part]).select(names))
    if not found:
        return schema.empty_table()
    return pa.concat_tables([t.cast(schema) for t in found])


def _identity_fields() -> list[pa.Field]:
    from lakectl.kernel.live_rows import identity_fields

    return identity_fields()


def _by_partition(
    rows: pa.Table, meta: TableMetadata, partition_by: Sequence[str]
) -> dict[tuple[Any, ...], pa.Table]:
    """``rows`` split by their partition columns' values (Python values of the table's types)."""
    out: dict[tuple[Any, ...], pa.Table] = {}
    for part in cc.partition_runs(rows, partition_by):
        values = tuple(part.column(c)[0].as_py() for c in partition_by)
        out[values] = part
    return out


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
