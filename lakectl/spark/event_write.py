"""A transaction's change events written in Spark tasks by the Arrow engine's ORC event writer.

A Spark job that changes a table produces its events as rows of :func:`events_struct`: a new
row (:data:`KIND_INSERT`) with the table's columns, a delete event (:data:`KIND_DELETE`) with
the partition values and identity of the stored row it removes, or a tally (:data:`KIND_TALLY`:
a label and a count the job wants summed, such as a load's ignored changes). :func:`write_events`
sends each target partition's events to one task, which writes them with
:func:`lakectl.arrow.acid_writer.write_changes` (the writer the Arrow engine runs) under the
transaction's staging directory. The driver then moves the directories into place
(:func:`move_into_place`) after registering them with the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.acid_writer import PartitionChanges, write_changes
from lakectl.failpoints import failpoint, spark_side
from lakectl.kernel.change_classify import partition_runs
from lakectl.kernel.live_rows import IDENTITY
from lakectl.storage.fs import Storage
from lakectl.table.layout import ACID_VERSION_FILE, delta_dir_name
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import Shape, table_path

from .session import wait_for_running_tasks

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

    from lakectl.table.transaction import WriteTransaction

KIND_COL = "__lakectl_kind"
LABEL_COL = "__lakectl_label"
TALLY_COL = "__lakectl_tally"
# The identity of the stored row a delete event removes.
ID_COLS = {c: f"__lakectl_{c}" for c in IDENTITY}
KIND_INSERT, KIND_DELETE, KIND_TALLY = 0, 1, 2
# What a write task returns: a row per directory written, its event counts, a row per tally.
_WRITTEN = {
    "dir": "string",
    "inserts": "bigint",
    "deletes": "bigint",
    "label": "string",
    "tally": "bigint",
}
_WRITTEN_DDL = ", ".join(f"{name} {kind}" for name, kind in _WRITTEN.items())


@dataclass(frozen=True)
class WrittenEvents:
    """What the tasks wrote: directories (relative to the table, still under the staging
    directory), the insert and delete events in them, and the tallies summed by label."""

    directories: list[str]
    inserts: int
    deletes: int
    tallies: dict[str, int]


def events_struct(columns: StructType, meta: TableMetadata) -> StructType:
    """The events' rows: kind, tally label and count, the table's columns (partition columns
    first, their types from ``columns``), the removed row's identity."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    fields = {f.name: f for f in columns.fields}
    names = [*meta.partition_by, *meta.data_schema.names]
    return StructType(
        [
            StructField(KIND_COL, IntegerType()),
            StructField(LABEL_COL, StringType()),
            StructField(TALLY_COL, LongType()),
            *[StructField(c, fields[c].dataType) for c in names],
            StructField(ID_COLS["originalTransaction"], LongType()),
            StructField(ID_COLS["bucket"], IntegerType()),
            StructField(ID_COLS["rowId"], LongType()),
        ]
    )


def change_events(
    frame: DataFrame,
    meta: TableMetadata,
    *,
    insert: Column,
    delete: Column,
    old: Callable[[str], Column],
) -> DataFrame:
    """The events one transaction writes, as rows of :func:`events_struct` for
    :func:`write_events`.

    Every row of ``frame`` (which has the table's columns) gives up to two events: its values
    as a new row (:data:`KIND_INSERT`) where ``insert`` holds, and a delete event
    (:data:`KIND_DELETE`) for the stored row it replaces or deletes where ``delete`` holds.
    ``old(name)`` is that stored row's partition column or identity column ``name``
    (originalTransaction, bucket, rowId): a delete event carries those, its data columns are
    null. An update gives both.
    """
    from pyspark.sql import functions as F

    kinds = F.filter(
        F.array(F.when(insert, F.lit(KIND_INSERT)), F.when(delete, F.lit(KIND_DELETE))),
        lambda kind: kind.isNotNull(),
    )
    exploded = frame.select("*", F.explode(kinds).alias(KIND_COL))
    is_delete = F.col(KIND_COL) == KIND_DELETE
    partitions = set(meta.partition_by)
    identity = {v: k for k, v in ID_COLS.items()}
    columns = []
    for field in events_struct(frame.schema, meta).fields:
        name = field.name
        if name == KIND_COL:
            value = F.col(KIND_COL)
        elif name in identity:
            value = F.when(is_delete, old(identity[name]))
        elif name in partitions:
            value = F.when(is_delete, old(name)).otherwise(F.col(f"`{name}`"))
        elif name in (LABEL_COL, TALLY_COL):
            value = F.lit(None)
        else:
            value = F.when(~is_delete, F.col(f"`{name}`"))
        columns.append(value.cast(field.dataType).alias(name))
    return exploded.select(*columns)


def arrow_events_schema(struct: StructType) -> pa.Schema:
    """``struct`` (:func:`events_struct`) as the Arrow schema Spark's tasks exchange."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")


def as_batches(target: pa.Schema, columns: Mapping[str, Any], n: int) -> Iterator[pa.RecordBatch]:
    """``n`` rows of ``columns`` (arrays by name; the rest null) as record batches of
    ``target``, each array cast to its field's type."""
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


def tally_batches(target: pa.Schema, tallies: Mapping[str, int]) -> Iterator[pa.RecordBatch]:
    """One tally row per label of ``tallies`` (:data:`KIND_TALLY`)."""
    import pyarrow as pa

    labels = list(tallies)
    columns = {
        KIND_COL: pa.array([KIND_TALLY] * len(labels), pa.int32()),
        LABEL_COL: pa.array(labels, pa.string()),
        TALLY_COL: pa.array([int(tallies[x]) for x in labels], pa.int64()),
    }
    yield from as_batches(target, columns, len(labels))


def gather(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A task's input batches as one table (None when there are no rows)."""
    import pyarrow as pa

    parts = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(parts).combine_chunks() if parts else None


def write_events(
    events: DataFrame,
    meta: TableMetadata,
    storage: Storage,
    staging: str,
    write_id: int,
    *,
    tasks: int,
    delta_dir: str,
    delete_dir: str,
) -> WrittenEvents:
    """Write ``events`` (rows of :func:`events_struct`) as transaction ``write_id``'s files under
    ``staging`` (``<staging>/<partition>/<delta_dir or delete_dir>/bucket_N``), a target
    partition's events in one of ``tasks`` tasks.

    A table with neither partitions nor buckets is spread over the ``tasks`` tasks instead (so
    that no task holds all of a large write): its new rows by a hash of their values, each
    task writing its own bucket file; the delete events of one stored bucket in one task.
    """
    from pyspark.sql import functions as F

    parts = [F.col(f"`{c}`") for c in meta.partition_by]
    spread = not parts and not meta.buckets and tasks > 1
    if parts:
        by_partition = events.repartition(tasks, *parts)
    elif spread:
        values = [F.col(f"`{c}`") for c in meta.data_schema.names]
        slot = F.when(
            F.col(KIND_COL) == KIND_DELETE, F.col(ID_COLS["bucket"]).cast("long")
        ).otherwise(F.pmod(F.hash(*values), F.lit(tasks)).cast("long"))
        by_partition = events.repartition(tasks, slot)
    else:
        by_partition = events.repartition(1)
    task = WriteTask(meta, storage, staging, write_id, delta_dir, delete_dir, spread=spread)
    try:
        rows = by_partition.mapInArrow(task, _WRITTEN_DDL).collect()
    except Exception:
        # A task failed: the others are being killed and may still be writing to staging,
        # which the transaction's abort removes once they have stopped.
        wait_for_running_tasks(events.sparkSession)
        raise
    tallies: dict[str, int] = {}
    for row in rows:
        if row["label"] is not None:
            tallies[row["label"]] = tallies.get(row["label"], 0) + int(row["tally"])
    return WrittenEvents(
        sorted(row["dir"] for row in rows if row["dir"] is not None),
        sum(int(row["inserts"] or 0) for row in rows),
        sum(int(row["deletes"] or 0) for row in rows),
        tallies,
    )


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


def write_transaction_events(
    txn: WriteTransaction,
    meta: TableMetadata,
    events: DataFrame | None,
    *,
    tasks: int,
    driver_changes: Sequence[PartitionChanges] = (),
) -> WrittenEvents:
    """Write ``events`` (rows of :func:`events_struct`, e.g. :func:`change_events`; None: no
    events) as transaction ``txn``'s ``delta_W_W`` and ``delete_delta_W_W`` directories, a
    target partition's in one of ``tasks`` tasks, and move them into place: each joins
    ``txn.added`` before its first file moves, so that an abort removes it.

    ``driver_changes`` (changes the driver holds already: a load's delete events decided
    there) are written by the driver with the same writer, before the tasks run; a partition's
    events given that way are not in ``events`` too.
    """
    store = txn.store
    storage = store.storage
    write_id = txn.version
    delta_dir = delta_dir_name(write_id)
    delete_dir = delta_dir_name(write_id, delete=True)
    staging = storage.join(txn.staging, "changes")
    with spark_side():
        here = write_changes(
            storage,
            staging,
            meta,
            write_id,
            driver_changes,
            delta_dir=delta_dir,
            delete_dir=delete_dir,
        )
    written = WrittenEvents(list(here.directories), here.inserts, here.deletes, {})
    if events is not None:
        theirs = write_events(
            events,
            meta,
            storage,
            staging,
            write_id,
            tasks=tasks,
            delta_dir=delta_dir,
            delete_dir=delete_dir,
        )
        written = WrittenEvents(
            sorted({*written.directories, *theirs.directories}),
            written.inserts + theirs.inserts,
            written.deletes + theirs.deletes,
            theirs.tallies,
        )
    for rel in written.directories:
        txn.added.append(rel)
        move_into_place(storage, store.root, staging, rel)
    if storage.exists(txn.staging):
        storage.delete(txn.staging, recursive=True)
    return written


def _task_number() -> int:
    """The running Spark task's partition number (0 outside a task): the same in a retry."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


class WriteTask:
    """A task's partitions' events written as ACID files under staging (picklable: plain
    values only)."""

    def __init__(
        self,
        meta: TableMetadata,
        storage: Storage,
        staging: str,
        write_id: int,
        delta_dir: str,
        delete_dir: str,
        *,
        spread: bool = False,
    ) -> None:
        self.meta = meta
        self.storage = storage
        self.staging = staging
        self.write_id = write_id
        self.delta_dir = delta_dir
        self.delete_dir = delete_dir
        self.spread = spread  # several tasks write new rows of one partition: bucket = task

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_schema

        rows = gather(batches)
        if rows is None:
            return
        meta = self.meta
        kind = rows.column(KIND_COL)
        tallies = rows.filter(pc.equal(kind, KIND_TALLY))
        events = rows.filter(pc.not_equal(kind, KIND_TALLY))
        del rows
        data = arrow_schema(meta.data_schema)
        bucket = _task_number() if self.spread else 0
        changes: list[PartitionChanges] = []
        for part in partition_runs(events, meta.partition_by):
            values = tuple(part.column(c)[0].as_py() for c in meta.partition_by)
            kinds = part.column(KIND_COL)
            new = part.filter(pc.equal(kinds, KIND_INSERT))
            gone = part.filter(pc.equal(kinds, KIND_DELETE))
            changes.append(
                PartitionChanges(
                    values,
                    new.select(data.names).cast(data) if new.num_rows else None,
                    gone.select([ID_COLS[c] for c in IDENTITY]).rename_columns(list(IDENTITY))
                    if gone.num_rows
                    else None,
                    bucket,
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
        labels = tallies.column(LABEL_COL).to_pylist()
        counts = tallies.column(TALLY_COL).to_pylist()
        n = 1 + len(written.directories) + len(labels)
        yield pa.RecordBatch.from_pydict(
            {
                "dir": [None, *written.directories, *[None] * len(labels)],
                "inserts": [written.inserts] + [None] * (n - 1),
                "deletes": [written.deletes] + [None] * (n - 1),
                "label": [None] * (1 + len(written.directories)) + labels,
                "tally": [None] * (1 + len(written.directories)) + counts,
            },
            schema=pa.schema(
                [(n, pa.string() if k == "string" else pa.int64()) for n, k in _WRITTEN.items()]
            ),
        )


__all__ = [
    "ID_COLS",
    "KIND_COL",
    "KIND_DELETE",
    "KIND_INSERT",
    "KIND_TALLY",
    "LABEL_COL",
    "TALLY_COL",
    "WriteTask",
    "WrittenEvents",
    "arrow_events_schema",
    "as_batches",
    "change_events",
    "events_struct",
    "gather",
    "move_into_place",
    "tally_batches",
    "write_events",
    "write_transaction_events",
]
