"""An upsert or cdc load's changes decided and written in Spark tasks by the Arrow engine's code.

One Spark job, two steps, each a ``mapInArrow`` over a shuffle:

1. by key: the batch's rows and the stored rows of its keys (from the key lookup) go to the
   task of their key's hash; the task reduces its changes to the latest per key and labels
   them (:mod:`lakectl.kernel.change_classify`, the rule the Arrow engine applies) and emits
   the events: each new row (insert or update) with its new partition values, and the
   identity of each stored row an update or delete replaces, with that row's partition
   values; one more row per task counts its ignored changes;
2. by target partition: each partition's events come to one task, which writes them with
   :func:`lakectl.arrow.acid_writer.write_changes` (the Arrow engine's ORC event writer) under
   the transaction's staging directory and returns the directories written and its counts.

The driver then moves the files into place (:func:`move_into_place`). Tables whose column types
do not pass between Spark and Python's Arrow as tested (:func:`eligible`) keep Spark's own
classification and writer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.acid_writer import PartitionChanges, unsupported_reason, write_changes
from lakectl.arrow.bucket_compaction import unsafe_type
from lakectl.failpoints import failpoint
from lakectl.kernel import change_classify as cc
from lakectl.kernel.live_rows import IDENTITY
from lakectl.storage.fs import Storage
from lakectl.table.batch_checks import POSITION_COL
from lakectl.table.layout import ACID_VERSION_FILE
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import Shape, table_path

from .session import wait_for_running_tasks

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

# ``false`` makes every load take Spark's own classification and writer (to compare the two, or
# as an escape hatch): ``lakectl --conf spark.lakectl.load.arrowTasks=false load ...``.
ENABLED_CONF = "spark.lakectl.load.arrowTasks"
STORED_TAG = "__lakectl_stored"
_KIND = "__lakectl_kind"
_RESULT = "__lakectl_result"
_IGNORED = "__lakectl_ignored"
_ID = {c: f"__lakectl_{c}" for c in IDENTITY}  # the replaced row's identity in an event
_INSERT, _DELETE, _COUNT = 0, 1, 2


def eligible(spark: Any, meta: TableMetadata) -> bool:
    """Does this load's change writing run in Arrow tasks (not switched off, every column of a
    type that passes between Spark and Arrow as tested, a table the Arrow writer writes)?"""
    if (spark.conf.get(ENABLED_CONF, "true") or "true").lower() == "false":
        return False
    return unsafe_type(meta.schema, timestamps=False) is None and unsupported_reason(meta) is None


@dataclass(frozen=True)
class WrittenLoad:
    """What the tasks wrote: directories (relative to the table, still under the staging
    directory), and the changes by result (:data:`~lakectl.kernel.change_classify.RESULTS`)."""

    directories: list[str]
    by_result: dict[str, int]


def write_keyed_changes(
    batch: DataFrame,
    stored: DataFrame,
    meta: TableMetadata,
    storage: Storage,
    staging: str,
    write_id: int,
    *,
    mode: LoadMode,
    order_by: str | None,
    key_tasks: int,
    write_tasks: int,
    delta_dir: str,
    delete_dir: str,
) -> WrittenLoad:
    """Decide the changes of the shaped ``batch`` against the ``stored`` rows of its keys
    (:func:`lakectl.kernel.change_classify.stored_columns`) and write their event files under
    ``staging`` (``<staging>/<partition>/<delta_dir or delete_dir>/bucket_N``)."""
    from pyspark.sql import functions as F

    spark = batch.sparkSession
    order = meta.schema[order_by].name if order_by else None
    keys = list(meta.primary_key)
    lower_keys = {k.lower() for k in keys}
    names = cc.stored_columns(keys, meta.partition_by, order)
    old = [F.col(f"`{c}`").alias(c if c.lower() in lower_keys else cc.OLD + c) for c in names]
    tagged = batch.withColumn(STORED_TAG, F.lit(False)).unionByName(
        stored.select(*old, F.lit(True).alias(STORED_TAG)), allowMissingColumns=True
    )
    by_key = tagged.repartition(key_tasks, *[F.col(f"`{k}`") for k in keys])
    struct = events_struct(batch.schema, meta)
    classify = ClassifyTask(meta, list(batch.columns), names, mode, order, struct)
    events = by_key.mapInArrow(classify, struct)
    parts = [F.col(f"`{c}`") for c in meta.partition_by]
    by_partition = events.repartition(write_tasks, *parts) if parts else events.repartition(1)
    write = WriteTask(meta, storage, staging, write_id, delta_dir, delete_dir)
    try:
        rows = by_partition.mapInArrow(write, _WRITTEN_DDL).collect()
    except Exception:
        # A task failed: the others are being killed and may still be writing to staging,
        # which the transaction's abort removes once they have stopped.
        wait_for_running_tasks(spark)
        raise
    by_result = {r: sum(int(row[r]) for row in rows) for r in cc.RESULTS}
    return WrittenLoad(sorted(row["dir"] for row in rows if row["dir"] is not None), by_result)


def move_into_place(storage: Storage, root: str, staging: str, rel_dir: str) -> None:
    """Move the files of ``rel_dir`` (an ACID directory the tasks wrote under ``staging``) to
    the same place under the table's ``root``."""
    source = table_path(storage, staging, rel_dir, Shape.DATA_DIR, source="the directories written")
    final = table_path(storage, root, rel_dir, Shape.DATA_DIR, source="the directories written")
    storage.makedirs(final)
    names = sorted(storage.list_names(source), key=lambda n: n == ACID_VERSION_FILE)
    for name in names:
        storage.move(storage.join(source, name), storage.join(final, name))
        failpoint("write.after_first_move")


_WRITTEN_DDL = "dir string, insert bigint, update bigint, delete bigint, ignored bigint"


def events_struct(batch: StructType, meta: TableMetadata) -> StructType:
    """The events step 1 emits: kind, result, ignored count, the table's columns (partition
    columns first), the replaced row's identity."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    fields = {f.name: f for f in batch.fields}
    columns = [*meta.partition_by, *meta.data_schema.names]
    return StructType(
        [
            StructField(_KIND, IntegerType()),
            StructField(_RESULT, StringType()),
            StructField(_IGNORED, LongType()),
            *[StructField(c, fields[c].dataType) for c in columns],
            StructField(_ID["originalTransaction"], LongType()),
            StructField(_ID["bucket"], IntegerType()),
            StructField(_ID["rowId"], LongType()),
        ]
    )


def _arrow_schema(struct: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")


def _gather(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    import pyarrow as pa

    parts = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(parts).combine_chunks() if parts else None


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

        target = _arrow_schema(self.events)
        rows = _gather(batches)
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
        result_of = pc.index_in(inserts.column(POSITION_COL), value_set=chosen.column(POSITION_COL))
        results = chosen.column(cc.RESULT_COL).take(result_of)
        n = inserts.num_rows
        new = {c: inserts.column(c) for c in (*meta.partition_by, *meta.data_schema.names)}
        new[_KIND] = pa.repeat(pa.scalar(_INSERT, pa.int32()), n)
        new[_RESULT] = results
        yield from _as(target, new, n)
        replaced = classified.filter(
            pc.is_in(classified.column(cc.RESULT_COL), value_set=pa.array(["update", "delete"]))
        )
        n = replaced.num_rows
        gone = {c: replaced.column(cc.OLD + c) for c in meta.partition_by}
        gone.update({_ID[c]: replaced.column(cc.OLD + c) for c in IDENTITY})
        gone[_KIND] = pa.repeat(pa.scalar(_DELETE, pa.int32()), n)
        gone[_RESULT] = replaced.column(cc.RESULT_COL)
        yield from _as(target, gone, n)
        count = {
            _KIND: pa.array([_COUNT], pa.int32()),
            _IGNORED: pa.array([counts["ignored"]], pa.int64()),
        }
        yield from _as(target, count, 1)


def _as(target: pa.Schema, columns: dict[str, Any], n: int) -> Iterator[pa.RecordBatch]:
    """``columns`` (the rest null) as record batches of ``target``."""
    import pyarrow as pa

    if not n:
        return
    arrays = []
    for field in target:
        column = columns.get(field.name)
        if column is None:
            arrays.append(pa.nulls(n, field.type))
            continue
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        arrays.append(column if column.type == field.type else column.cast(field.type))
    yield from pa.Table.from_arrays(arrays, schema=target).to_batches()


class WriteTask:
    """Step 2 (picklable): a task's partitions' events written as ACID files under staging."""

    def __init__(
        self,
        meta: TableMetadata,
        storage: Storage,
        staging: str,
        write_id: int,
        delta_dir: str,
        delete_dir: str,
    ) -> None:
        self.meta = meta
        self.storage = storage
        self.staging = staging
        self.write_id = write_id
        self.delta_dir = delta_dir
        self.delete_dir = delete_dir

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_schema

        schema = pa.schema(
            [
                ("dir", pa.string()),
                *[(r, pa.int64()) for r in cc.RESULTS],
            ]
        )
        rows = _gather(batches)
        if rows is None:
            return
        meta = self.meta
        kind = rows.column(_KIND)
        ignored = pc.sum(rows.filter(pc.equal(kind, _COUNT)).column(_IGNORED)).as_py() or 0
        events = rows.filter(pc.not_equal(kind, _COUNT))
        del rows
        # An update is a new row (counted here) and a delete event (maybe another task's).
        new_results = _results(events.filter(pc.equal(events.column(_KIND), _INSERT)))
        gone_results = _results(events.filter(pc.equal(events.column(_KIND), _DELETE)))
        counts = {
            "insert": new_results.get("insert", 0),
            "update": new_results.get("update", 0),
            "delete": gone_results.get("delete", 0),
            "ignored": ignored,
        }
        data = arrow_schema(meta.data_schema)
        changes: list[PartitionChanges] = []
        for part in cc.partition_runs(events, meta.partition_by):
            values = tuple(part.column(c)[0].as_py() for c in meta.partition_by)
            kinds = part.column(_KIND)
            new = part.filter(pc.equal(kinds, _INSERT))
            gone = part.filter(pc.equal(kinds, _DELETE))
            changes.append(
                PartitionChanges(
                    values,
                    new.select(data.names).cast(data) if new.num_rows else None,
                    gone.select([_ID[c] for c in IDENTITY]).rename_columns(list(IDENTITY))
                    if gone.num_rows
                    else None,
                )
            )
        written = write_changes(
            self.storage,
            self.staging,
            meta,
            self.write_id,
            changes,
            delta_dir=self.delta_dir,
            delete_dir=self.delete_dir,
        )
        dirs = [None, *written.directories]
        yield pa.RecordBatch.from_pydict(
            {
                "dir": dirs,
                **{r: [counts[r]] + [0] * len(written.directories) for r in cc.RESULTS},
            },
            schema=schema,
        )


def _results(events: pa.Table) -> dict[str, int]:
    import pyarrow.compute as pc

    found = pc.value_counts(events.column(_RESULT)).to_pylist() if events.num_rows else []
    return {f["values"]: int(f["counts"]) for f in found}


__all__ = [
    "ENABLED_CONF",
    "STORED_TAG",
    "ClassifyTask",
    "WriteTask",
    "WrittenLoad",
    "eligible",
    "events_struct",
    "move_into_place",
    "write_keyed_changes",
]
