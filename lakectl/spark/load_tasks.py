"""A load's changes decided by the kernel's rule and written by the Arrow engine's code, from
Spark.

An upsert or cdc load decides its changes with :func:`lakectl.kernel.change_classify.
decide_changes` (the function the Arrow engine runs), in one of two places:

- a batch of up to ``lakectl.ops.load.DECIDE_ON_DRIVER_ROWS`` rows on the driver
  (:func:`driver_events`): the batch's decision columns (key, order value, action: a few bytes
  per change) are collected, the stored rows of its keys looked up in tasks and collected,
  and the changes decided; the events are then the batch's rows that write a new row (a
  broadcast semi join on their position) and the delete events of the stored rows replaced;
- a larger batch in tasks by key (:func:`keyed_events`): the batch's rows and the stored rows
  of its keys go to the task of their key's hash, which decides its changes
  (:class:`DecideTask`) and emits their events, and a tally row per count.

An append's events are its rows (:func:`append_events`). The events are written by
:func:`lakectl.spark.event_write.write_transaction_events` (a target partition's in one task).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.kernel import change_classify as cc
from lakectl.kernel.live_rows import IDENTITY, identity_fields
from lakectl.table.batch_checks import POSITION_COL, SOURCE_ORDER
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata

from . import event_write as ew

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakectl.arrow.acid_writer import PartitionChanges


STORED_TAG = "__lakectl_stored"
OLD = "__old_"  # a stored row's column beside the batch's of the same name


def append_events(batch: DataFrame, meta: TableMetadata) -> DataFrame:
    """The events of an append: every row of the shaped ``batch`` a new row
    (:data:`~lakectl.spark.event_write.KIND_INSERT`), as rows of
    :func:`~lakectl.spark.event_write.events_struct`."""
    from pyspark.sql import functions as F

    struct = ew.events_struct(batch.schema, meta)
    table_columns = {*meta.partition_by, *meta.data_schema.names}
    columns = []
    for field in struct.fields:
        if field.name == ew.KIND_COL:
            value = F.lit(ew.KIND_INSERT)
        elif field.name in table_columns:
            value = F.col(f"`{field.name}`")
        else:
            value = F.lit(None)
        columns.append(value.cast(field.dataType).alias(field.name))
    return batch.select(*columns)


@dataclass(frozen=True)
class DriverDecided:
    """An upsert or cdc load's changes decided on the driver (:func:`driver_events`): the
    events of the new rows (None: none), the delete events per partition (written by the
    driver), the load's counts."""

    inserts: DataFrame | None
    deletes: list[PartitionChanges]
    counts: dict[str, int]


def driver_events(
    batch: DataFrame,
    meta: TableMetadata,
    *,
    mode: LoadMode,
    order_by: str | None,
    stored_for: Callable[[pa.Table], DataFrame],
) -> DriverDecided:
    """An upsert or cdc load of the shaped ``batch`` decided on the driver: ``stored_for(keys)``
    gives the stored rows of ``keys`` (the latest changes' keys, an Arrow table) as a DataFrame
    of the :func:`~lakectl.kernel.change_classify.stored_columns`.

    The new rows' events are the batch's rows that write one, kept by a broadcast join on
    their position (with the positions that do, or those that do not, whichever are fewer)."""
    from pyspark.sql import functions as F

    order = meta.schema[order_by].name if order_by else None
    wanted = (*meta.primary_key, cc.ORDER_COL, cc.ACTION_COL, *SOURCE_ORDER)
    names = [c for c in dict.fromkeys(wanted) if c in batch.columns]
    collected = _in_source_order(batch.select(*[F.col(f"`{c}`") for c in names]).toArrow())
    positions = collected.column(POSITION_COL)
    changes = _table_typed(cc.decision_columns(collected, meta.primary_key), meta, order)
    del collected
    columns = cc.stored_columns(meta.primary_key, meta.partition_by, order)
    decided = cc.decide_changes(
        changes,
        lambda keys: _table_typed(stored_for(keys).toArrow().select(columns), meta, order),
        meta.primary_key,
        meta.partition_by,
        mode=mode,
        order_by=order,
    )
    del changes
    return DriverDecided(
        _written_rows(batch, meta, positions, decided.writes),
        partition_deletes(decided.replaced, meta),
        decided.counts,
    )


def _written_rows(
    batch: DataFrame, meta: TableMetadata, positions: pa.ChunkedArray, writes: np.ndarray
) -> DataFrame | None:
    """The insert events of the rows of ``batch`` whose change ``writes`` (by the row's
    place in ``positions``, the batch's :data:`POSITION_COL` as collected)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    written = int(writes.sum())
    if written == len(writes):
        return append_events(batch, meta)
    if not written:
        return None
    fewer = writes if written <= len(writes) - written else ~writes
    kept = batch.sparkSession.createDataFrame(pa.table({POSITION_COL: positions.filter(fewer)}))
    how = "left_semi" if fewer is writes else "left_anti"
    return append_events(batch.join(F.broadcast(kept), POSITION_COL, how), meta)


def partition_deletes(replaced: pa.Table, meta: TableMetadata) -> list[PartitionChanges]:
    """The delete events of the stored rows ``replaced`` (partition columns and identity, as
    :attr:`~lakectl.kernel.change_classify.DecidedChanges.replaced` has them), a
    :class:`~lakectl.arrow.acid_writer.PartitionChanges` per partition."""
    from lakectl.arrow.acid_writer import PartitionChanges
    from lakectl.arrow.row_changes import split_by_partition

    return [
        PartitionChanges(values, None, part.select(list(IDENTITY)))
        for values, part in split_by_partition(meta, replaced)
    ]


def _in_source_order(changes: pa.Table) -> pa.Table:
    """``changes`` in their order in the source (:data:`~lakectl.table.batch_checks.
    SOURCE_ORDER`: file, part of the file, position; the first two where Spark read them from
    files), which :func:`~lakectl.kernel.change_classify.decide_changes` takes as the row order:
    a shuffle or a collect may hand them over in another."""
    return changes.sort_by([(c, "ascending") for c in SOURCE_ORDER if c in changes.column_names])


def _table_typed(table: pa.Table, meta: TableMetadata, order: str | None) -> pa.Table:
    """``table``'s columns of the table (and identity, and :data:`ORDER_COL`: the ``order``
    column's) of the Arrow engine's types for them, as it compares and writes them."""
    import pyarrow as pa

    from lakectl.arrow.types import arrow_schema

    types = {f.name: f.type for f in (*arrow_schema(meta.schema), *identity_fields())}
    if order is not None:
        types[cc.ORDER_COL] = types[order]
    fields = [pa.field(f.name, types.get(f.name, f.type)) for f in table.schema]
    return table.cast(pa.schema(fields))


def _delete_events(gone: pa.Table, meta: TableMetadata) -> dict[str, Any]:
    """The columns of the delete events of the stored rows ``gone`` (their partition columns
    and identity, :attr:`~lakectl.kernel.change_classify.DecidedChanges.replaced`)."""
    import pyarrow as pa

    values: dict[str, Any] = {c: gone.column(c) for c in meta.partition_by}
    values.update({ew.ID_COLS[c]: gone.column(c) for c in IDENTITY})
    values[ew.KIND_COL] = pa.repeat(pa.scalar(ew.KIND_DELETE, pa.int32()), gone.num_rows)
    return values


def keyed_events(
    batch: DataFrame,
    stored: DataFrame,
    meta: TableMetadata,
    *,
    mode: LoadMode,
    order_by: str | None,
    key_tasks: int,
) -> DataFrame:
    """The events of an upsert or cdc load (rows of
    :func:`~lakectl.spark.event_write.events_struct`, with a tally per count of the load),
    its changes decided in ``key_tasks`` tasks by key (:class:`DecideTask`) against the
    ``stored`` rows of its keys (:func:`lakectl.kernel.change_classify.stored_columns`)."""
    from pyspark.sql import functions as F

    order = meta.schema[order_by].name if order_by else None
    keys = list(meta.primary_key)
    lower_keys = {k.lower() for k in keys}
    names = cc.stored_columns(keys, meta.partition_by, order)
    old = [F.col(f"`{c}`").alias(c if c.lower() in lower_keys else OLD + c) for c in names]
    tagged = batch.withColumn(STORED_TAG, F.lit(False)).unionByName(
        stored.select(*old, F.lit(True).alias(STORED_TAG)), allowMissingColumns=True
    )
    by_key = tagged.repartition(key_tasks, *[F.col(f"`{k}`") for k in keys])
    struct = ew.events_struct(batch.schema, meta)
    decide = DecideTask(meta, list(batch.columns), names, mode, order, struct)
    return by_key.mapInArrow(decide, struct)


class DecideTask:
    """A task of :func:`keyed_events` (picklable: plain values only): its changes and the
    stored rows of their keys to events and tallies."""

    def __init__(
        self,
        meta: TableMetadata,
        batch_names: Sequence[str],
        stored_names: Sequence[str],
        mode: LoadMode,
        order_by: str | None,
        events: StructType,
    ) -> None:
        self.meta = meta
        self.batch_names = list(batch_names)
        self.stored_names = list(stored_names)
        self.mode = mode
        self.order_by = order_by
        self.events = events

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        target = ew.arrow_events_schema(self.events)
        rows = ew.gather(batches)
        if rows is None:
            return
        meta, keys = self.meta, list(self.meta.primary_key)
        is_stored = rows.column(STORED_TAG)
        changes = _in_source_order(rows.filter(pc.invert(is_stored)).select(self.batch_names))
        lower_keys = {k.lower() for k in keys}
        stored = rows.filter(is_stored).select(
            [c if c.lower() in lower_keys else OLD + c for c in self.stored_names]
        )
        stored = stored.rename_columns(self.stored_names)
        del rows
        decided = cc.decide_changes(
            cc.decision_columns(changes, keys),
            lambda _keys: stored,
            keys,
            meta.partition_by,
            mode=self.mode,
            order_by=self.order_by,
        )
        new = changes.filter(pa.array(decided.writes))
        values = {c: new.column(c) for c in (*meta.partition_by, *meta.data_schema.names)}
        values[ew.KIND_COL] = pa.repeat(pa.scalar(ew.KIND_INSERT, pa.int32()), new.num_rows)
        yield from ew.as_batches(target, values, new.num_rows)
        gone = decided.replaced
        yield from ew.as_batches(target, _delete_events(gone, meta), gone.num_rows)
        yield from ew.tally_batches(target, decided.counts)


__all__ = [
    "OLD",
    "STORED_TAG",
    "DecideTask",
    "DriverDecided",
    "append_events",
    "driver_events",
    "keyed_events",
    "partition_deletes",
]
