"""A load's changes decided and written in Spark tasks by the Arrow engine's code.

An upsert or cdc load is one Spark job, two steps, each a ``mapInArrow`` over a shuffle:

1. by key: the batch's rows and the stored rows of its keys (from the key lookup) go to the
   task of their key's hash; the task reduces its changes to the latest per key and labels
   them (:mod:`lakectl.kernel.change_classify`, the rule the Arrow engine applies) and emits
   the events: each new row (insert or update) with its new partition values, and the
   identity of each stored row an update or delete replaces, with that row's partition
   values; one more row per task counts its ignored changes;
2. by target partition: :func:`lakectl.spark.event_write.write_events` (the Arrow engine's
   ORC event writer in tasks) writes each partition's events under the transaction's staging
   directory and returns the directories written and the summed counts.

An append skips step 1: each batch row is a new row (:func:`append_events`). The driver then
moves the files into place (:func:`lakectl.spark.event_write.move_into_place`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakectl.kernel import change_classify as cc
from lakectl.kernel.live_rows import IDENTITY
from lakectl.table.batch_checks import POSITION_COL
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata

from . import event_write as ew

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


STORED_TAG = "__lakectl_stored"


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
    :func:`~lakectl.spark.event_write.events_struct`, with a tally per result of
    :data:`~lakectl.kernel.change_classify.RESULTS`): the shaped ``batch``'s changes decided
    against the ``stored`` rows of its keys (:func:`lakectl.kernel.change_classify.
    stored_columns`) by :class:`ClassifyTask`, in ``key_tasks`` tasks by key."""
    from pyspark.sql import functions as F

    order = meta.schema[order_by].name if order_by else None
    keys = list(meta.primary_key)
    lower_keys = {k.lower() for k in keys}
    names = cc.stored_columns(keys, meta.partition_by, order)
    old = [F.col(f"`{c}`").alias(c if c.lower() in lower_keys else cc.OLD + c) for c in names]
    tagged = batch.withColumn(STORED_TAG, F.lit(False)).unionByName(
        stored.select(*old, F.lit(True).alias(STORED_TAG)), allowMissingColumns=True
    )
    by_key = tagged.repartition(key_tasks, *[F.col(f"`{k}`") for k in keys])
    struct = ew.events_struct(batch.schema, meta)
    classify = ClassifyTask(meta, list(batch.columns), names, mode, order, struct)
    return by_key.mapInArrow(classify, struct)


class ClassifyTask:
    """Step 1 (picklable: plain values only): a task's changes and stored rows to events."""

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
        changes = rows.filter(pc.invert(is_stored)).select(self.batch_names)
        lower_keys = {k.lower() for k in keys}
        stored = rows.filter(is_stored).select(
            [c if c.lower() in lower_keys else cc.OLD + c for c in self.stored_names]
        )
        stored = stored.rename_columns(self.stored_names)
        del rows
        decision = [
            c
            for c in (*keys, *meta.partition_by, POSITION_COL, cc.ACTION_COL, cc.ORDER_COL)
            if c in changes.column_names
        ]
        latest = cc.latest_per_key(changes, keys, self.order_by is not None)
        classified = cc.classify(
            latest.select(list(dict.fromkeys(decision))),
            stored,
            keys,
            meta.partition_by,
            mode=self.mode,
            order_by=self.order_by,
        )
        counts = cc.count_results(classified)
        chosen = cc.new_rows(classified)
        inserts = latest.filter(
            pc.is_in(latest.column(POSITION_COL), value_set=chosen.column(POSITION_COL))
        )
        n = inserts.num_rows
        new = {c: inserts.column(c) for c in (*meta.partition_by, *meta.data_schema.names)}
        new[ew.KIND_COL] = pa.repeat(pa.scalar(ew.KIND_INSERT, pa.int32()), n)
        yield from ew.as_batches(target, new, n)
        replaced = classified.filter(
            pc.is_in(classified.column(cc.RESULT_COL), value_set=pa.array(["update", "delete"]))
        )
        n = replaced.num_rows
        gone = {c: replaced.column(cc.OLD + c) for c in meta.partition_by}
        gone.update({ew.ID_COLS[c]: replaced.column(cc.OLD + c) for c in IDENTITY})
        gone[ew.KIND_COL] = pa.repeat(pa.scalar(ew.KIND_DELETE, pa.int32()), n)
        yield from ew.as_batches(target, gone, n)
        yield from ew.tally_batches(target, counts)


__all__ = [
    "STORED_TAG",
    "ClassifyTask",
    "append_events",
    "keyed_events",
]
