"""Merge-on-read of one partition's ACID directories into Arrow, without a JVM.

The rules of :mod:`lakectl.spark.acid_read`: a base's insert events all count; a delta's only
for valid write ids; a row whose identity (originalTransaction, bucket, rowId) has a delete
event of a valid write id in the partition's delete deltas is gone; original files count with
their synthetic identities. Event columns must all be set, and an insert's row must be present
(its key column set, when the table has a key).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.arrow.events import (
    all_event_columns_set,
    conform_batch,
    of_valid_write_ids,
    orc_source,
)
from lakectl.arrow.originals import original_events
from lakectl.arrow.types import arrow_schema, event_schema
from lakectl.errors import StorageError
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import OP_DELETE
from lakectl.table.listing import FileEntry
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

IDENTITY = ("originalTransaction", "bucket", "rowId")


@dataclass(frozen=True)
class MergeSpec:
    """What a merge needs besides the plans: where the files are, schemas, visibility."""

    storage: Storage
    data_schema: Schema
    partition_schema: Schema
    valid: ValidWriteIds
    not_null_column: str | None = None  # a data column that is never null (the key), if any

    def output_schema(self) -> pa.Schema:
        """The rows' schema: data columns, then partition columns."""
        import pyarrow as pa

        data = arrow_schema(self.data_schema)
        return pa.schema([*data, *arrow_schema(self.partition_schema)])


def _events(spec: MergeSpec, files: Sequence[FileEntry]) -> Iterator[pa.RecordBatch]:
    """Every stripe of ``files`` in the event schema (fields matched as Spark's reader does)."""
    import pyarrow.orc as orc

    target = event_schema(spec.data_schema)
    for entry in files:
        try:
            with orc_source(spec.storage, entry.path) as source:
                reader = orc.ORCFile(source)
                for stripe in range(reader.nstripes):
                    yield conform_batch(reader.read_stripe(stripe), target, [])
        except FileNotFoundError as exc:
            raise StorageError(f"{spec.storage.url(entry.path)} does not exist") from exc


def _inserts(spec: MergeSpec, files: Sequence[FileEntry], filter_valid: bool) -> list[pa.Table]:
    """Insert events of ``files`` as flat tables: identity columns, then the data columns."""
    import pyarrow as pa

    out = []
    names = spec.data_schema.names
    for kept in _insert_batches(spec, files, filter_valid):
        fields = kept.column("row").flatten()
        columns = [kept.column(c) for c in IDENTITY] + list(fields)
        out.append(pa.Table.from_arrays(columns, names=[*IDENTITY, *names]))
    return out


def _insert_batches(
    spec: MergeSpec, files: Sequence[FileEntry], filter_valid: bool
) -> Iterator[pa.RecordBatch]:
    """The insert events of ``files`` that count (of valid write ids with ``filter_valid``)."""
    import pyarrow.compute as pc

    names = spec.data_schema.names
    for batch in _events(spec, files):
        row = batch.column("row")
        present = (
            pc.struct_field(row, [names.index(spec.not_null_column)]).is_valid()
            if spec.not_null_column
            else row.is_valid()
        )
        keep = pc.and_(all_event_columns_set(batch), present)
        keep = pc.and_(keep, pc.not_equal(batch.column("operation"), OP_DELETE))
        if filter_valid:
            keep = pc.and_(keep, _valid(batch, spec.valid))
        yield batch.filter(pc.fill_null(keep, False))


def _delete_batches(spec: MergeSpec, files: Sequence[FileEntry]) -> Iterator[pa.RecordBatch]:
    """The delete events of ``files`` that count (of valid write ids)."""
    import pyarrow.compute as pc

    for batch in _events(spec, files):
        keep = pc.and_(all_event_columns_set(batch), batch.column("row").is_null())
        keep = pc.and_(keep, pc.equal(batch.column("operation"), OP_DELETE))
        keep = pc.and_(keep, _valid(batch, spec.valid))
        yield batch.filter(pc.fill_null(keep, False))


def _valid(batch: pa.RecordBatch, valid: ValidWriteIds) -> pa.Array:
    return of_valid_write_ids(batch, valid.high_watermark, valid.exceptions)


def _deletes(spec: MergeSpec, files: Sequence[FileEntry]) -> pa.Table | None:
    """The identities named by valid delete events of ``files``."""
    import pyarrow as pa

    parts = [pa.Table.from_batches([batch]) for batch in _delete_batches(spec, files)]
    if not parts:
        return None
    return pa.concat_tables(parts).select(list(IDENTITY))


def _originals(spec: MergeSpec, plan: PartitionReadPlan) -> pa.Table | None:
    """The partition's original files as flat insert tables (identity, data columns)."""
    import pyarrow.compute as pc

    files = [(plan, f) for f in plan.originals]
    table = original_events(spec.storage, spec.data_schema, spec.partition_schema.names, files)
    if table is None:
        return None
    target = arrow_schema(spec.data_schema)
    arrays = [table.column(c) for c in IDENTITY]
    arrays += [pc.cast(table.column(f.name), f.type) for f in target]
    import pyarrow as pa

    return pa.Table.from_arrays(arrays, names=[*IDENTITY, *target.names])


def partition_rows(
    spec: MergeSpec, plan: PartitionReadPlan, with_identity: bool = False
) -> pa.Table:
    """The live rows of one partition: data columns, then its partition values as columns
    (after the row identity columns, :data:`IDENTITY`, with ``with_identity``)."""
    import pyarrow as pa

    target = arrow_schema(spec.data_schema)
    tables = _inserts(spec, plan.base.files, False) if plan.base else []
    tables += _inserts(spec, [f for d in plan.deltas for f in d.files], True)
    originals = _originals(spec, plan)
    if originals is not None:
        tables.append(originals)
    identity_schema = [pa.field("originalTransaction", pa.int64()), pa.field("bucket", pa.int32())]
    flat_schema = pa.schema([*identity_schema, pa.field("rowId", pa.int64()), *target])
    rows = (
        pa.concat_tables([t.cast(flat_schema) for t in tables])
        if tables
        else flat_schema.empty_table()
    )
    deletes = _deletes(spec, [f for d in plan.delete_deltas for f in d.files])
    if deletes is not None and deletes.num_rows and rows.num_rows:
        rows = rows.join(
            deletes.group_by(list(IDENTITY)).aggregate([]), list(IDENTITY), join_type="left anti"
        )
    identity = rows.select(list(IDENTITY))
    rows = with_partition_values(spec, rows.drop_columns(list(IDENTITY)), plan.values)
    if not with_identity:
        return rows
    return pa.Table.from_arrays(
        [*identity.columns, *rows.columns], schema=pa.schema([*identity.schema, *rows.schema])
    )


def with_partition_values(
    spec: MergeSpec, rows: pa.Table, values: Sequence[str | None]
) -> pa.Table:
    """``rows`` (data columns) with the partition's values appended, in the output schema."""
    import pyarrow as pa

    n = rows.num_rows
    for column, value in zip(spec.partition_schema.columns, values, strict=True):
        typed = arrow_schema(Schema((column,))).field(0).type
        rows = rows.append_column(
            pa.field(column.name, typed), pa.array([value] * n, pa.string()).cast(typed)
        )
    return rows.cast(spec.output_schema())


def range_events(
    spec: MergeSpec, plan: PartitionReadPlan, write_ids: Sequence[int]
) -> tuple[pa.Table, pa.Table]:
    """The insert and delete events that the commits ``write_ids`` wrote in ``plan``'s deltas
    and delete deltas: inserts as identity, ``currentTransaction`` and the data columns;
    deletes as the identity they name and ``currentTransaction``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(sorted(write_ids), pa.int64())
    target = arrow_schema(spec.data_schema)
    txn = pa.field("currentTransaction", pa.int64())
    insert_schema = pa.schema([*_identity_schema(), txn, *target])
    inserts = []
    for batch in _insert_batches(spec, [f for d in plan.deltas for f in d.files], False):
        keep = pc.is_in(batch.column("currentTransaction"), ids)
        kept = batch.filter(pc.fill_null(keep, False))
        fields = kept.column("row").flatten()
        columns = [kept.column(c) for c in (*IDENTITY, "currentTransaction")] + list(fields)
        inserts.append(pa.Table.from_arrays(columns, names=insert_schema.names))
    delete_schema = pa.schema([*_identity_schema(), txn])
    deletes = []
    for batch in _delete_batches(spec, [f for d in plan.delete_deltas for f in d.files]):
        keep = pc.is_in(batch.column("currentTransaction"), ids)
        kept = batch.filter(pc.fill_null(keep, False))
        deletes.append(pa.Table.from_batches([kept]).select(delete_schema.names))
    return concat_as(inserts, insert_schema), concat_as(deletes, delete_schema)


def _identity_schema() -> list[pa.Field]:
    import pyarrow as pa

    return [
        pa.field("originalTransaction", pa.int64()),
        pa.field("bucket", pa.int32()),
        pa.field("rowId", pa.int64()),
    ]


def concat_as(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """``tables`` cast to ``schema`` and concatenated (an empty table when there are none)."""
    import pyarrow as pa

    return pa.concat_tables([t.cast(schema) for t in tables]) if tables else schema.empty_table()


__all__ = [
    "IDENTITY",
    "MergeSpec",
    "concat_as",
    "partition_rows",
    "range_events",
    "with_partition_values",
]
