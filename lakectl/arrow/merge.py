"""Merge-on-read of one partition's ACID directories into Arrow, without a JVM.

The rules of :mod:`lakectl.spark.acid_read`: a base's insert events all count; a delta's only
for valid write ids; a row whose identity (originalTransaction, bucket, rowId) has a delete
event of a valid write id in the partition's delete deltas is gone; original files count with
their synthetic identities. Event columns must all be set, and an insert's row must be present
(its key column set, when the table has a key).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lakectl.arrow.deletes import DeletedRows
from lakectl.arrow.event_reader import EventRead, FlatEvents
from lakectl.arrow.events import EVENT_COLUMNS, all_set, valid_write_ids
from lakectl.arrow.originals import original_stripes
from lakectl.arrow.pushdown import StripeTest
from lakectl.arrow.types import arrow_schema
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import OP_DELETE
from lakectl.table.listing import FileEntry
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

IDENTITY = ("originalTransaction", "bucket", "rowId")
CHUNK_ROWS = 65_536  # rows filtered (copied) at a time: bounds the copies next to a stripe
SMALL_ROWS = 4_096  # stripes below this many rows are tested and filtered together


@dataclass(frozen=True)
class MergeSpec:
    """What a merge needs besides the plans: where the files are, schemas, visibility, the
    data columns to read (None: all), and a test that may skip insert stripes by statistics."""

    storage: Storage
    data_schema: Schema
    partition_schema: Schema
    valid: ValidWriteIds
    not_null_column: str | None = None  # a data column that is never null (the key), if any
    columns: tuple[str, ...] | None = None
    stripe_test: StripeTest | None = None
    bounded: bool = True  # memory within a few batches (else: fastest, pruned columns first)

    def data_fields(self) -> list[pa.Field]:
        """The data columns read, in the table's order."""
        fields = list(arrow_schema(self.data_schema))
        if self.columns is None:
            return fields
        wanted = {c.lower() for c in self.columns}
        return [f for f in fields if f.name.lower() in wanted]

    def output_schema(self) -> pa.Schema:
        """The rows' schema: the data columns read, then the partition columns."""
        import pyarrow as pa

        return pa.schema([*self.data_fields(), *arrow_schema(self.partition_schema)])


def partition_batches(spec: MergeSpec, plan: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
    """The live rows of one partition, stripe by stripe: the data columns read, then its
    partition values as columns. Only the partition's delete events are held throughout."""
    deleted = _deleted_rows(spec, plan)
    outputs = spec.data_fields()
    fields = list(outputs)
    names = [f.name for f in fields]
    if spec.not_null_column and spec.not_null_column not in names:
        key = arrow_schema(spec.data_schema.select([spec.not_null_column])).field(0)
        fields.append(key)
    stream = CHUNK_ROWS if spec.bounded or spec.columns is None else None
    read = EventRead(EVENT_COLUMNS, tuple(fields), tuple(spec.data_schema.names), stream)
    constants = _partition_constants(spec, plan)
    schema = spec.output_schema()
    groups = ((plan.base.files if plan.base else (), False), (_delta_files(plan), True))
    for files, check_valid in groups:
        for flat in _gathered(read, spec, files):
            keep = _live(spec, flat, fields, check_valid, deleted)
            arrays = flat.data[: len(outputs)]
            yield from _kept_batches(arrays, keep, constants, schema, flat.num_rows)
            del flat, keep, arrays  # not held while the next stripes are read
    yield from _original_batches(spec, plan, deleted, constants)


def _original_batches(
    spec: MergeSpec, plan: PartitionReadPlan, deleted: DeletedRows, constants: list[pa.Scalar]
) -> Iterator[pa.RecordBatch]:
    """The partition's original files, stripe by stripe, less the rows deleted by their
    synthetic identities (write id 0, the file's bucket, the row's position)."""
    import numpy as np
    import pyarrow as pa

    outputs = spec.data_fields()
    schema = spec.output_schema()
    names = [f.name for f in outputs]
    for bucket, first, rows, arrays in original_stripes(spec.storage, plan, names):
        identity = (
            pa.repeat(pa.scalar(0, pa.int64()), rows),
            pa.repeat(pa.scalar(bucket, pa.int32()), rows),
            pa.array(np.arange(first, first + rows, dtype=np.int64)),
        )
        gone = deleted.deleted(*identity)
        typed = [
            a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, outputs, strict=True)
        ]
        keep = None if gone is None else pa.array(~gone)
        yield from _kept_batches(typed, keep, constants, schema, rows)


def _gathered(read: EventRead, spec: MergeSpec, files: Sequence[FileEntry]) -> Iterator[FlatEvents]:
    """The stripes of ``files``, small ones gathered up to :data:`CHUNK_ROWS` rows (a delta of
    a few rows costs one test and one filter with its neighbours, not one of its own); a
    stripe of :data:`SMALL_ROWS` rows or more comes alone (gathering copies)."""
    pending: list[FlatEvents] = []
    rows = 0
    for entry in files:
        for flat in read.stripes(spec.storage, entry.path, spec.stripe_test):
            if pending and (flat.num_rows >= SMALL_ROWS or rows + flat.num_rows > CHUNK_ROWS):
                yield FlatEvents.concat(pending)
                pending, rows = [], 0
            if flat.num_rows >= SMALL_ROWS:
                yield flat
                del flat  # not held while the next stripe is read
                continue
            pending.append(flat)
            rows += flat.num_rows
    if pending:
        yield FlatEvents.concat(pending)


def _delta_files(plan: PartitionReadPlan) -> list[FileEntry]:
    return [f for d in plan.deltas for f in d.files]


def _valid(events: dict[str, pa.Array], valid: ValidWriteIds) -> pa.Array:
    return valid_write_ids(events["currentTransaction"], valid.high_watermark, valid.exceptions)


def _all_set(events: dict[str, pa.Array]) -> pa.Array | None:
    return all_set(events.values())


def _live(
    spec: MergeSpec,
    flat: FlatEvents,
    fields: Sequence[pa.Field],
    check_valid: bool,
    deleted: DeletedRows,
) -> pa.Array | None:
    """Which events of ``flat`` are live rows: set insert events with a row (and its key) of
    valid write ids (for deltas) that no delete event names; None when all are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    events = flat.events
    if spec.not_null_column:
        position = [f.name for f in fields].index(spec.not_null_column)
        present = flat.data[position].is_valid()
    else:
        present = flat.has_row
    tests = [present, pc.not_equal(events["operation"], OP_DELETE)]
    tests += [t for t in (_all_set(events),) if t is not None]
    if check_valid:
        tests.append(_valid(events, spec.valid))
    keep = tests[0]
    for test in tests[1:]:
        keep = pc.and_(keep, test)
    keep = pc.fill_null(keep, False)
    identity = [events[c] for c in IDENTITY]
    if any(c.null_count for c in identity):
        identity = [pc.fill_null(c, 0) for c in identity]
    gone = deleted.deleted(*identity)
    if gone is not None:
        keep = pc.and_(keep, pa.array(~gone))
    return None if keep.false_count == 0 else keep


def _kept_batches(
    arrays: list[pa.Array],
    keep: pa.Array | None,
    constants: list[pa.Scalar],
    schema: pa.Schema,
    n: int,
) -> Iterator[pa.RecordBatch]:
    """Record batches of ``arrays`` (``n`` rows; those where ``keep``) and the partition
    ``constants``, at most :data:`CHUNK_ROWS` rows filtered at a time."""
    import pyarrow as pa

    for start in range(0, n, CHUNK_ROWS):
        chunk = [a.slice(start, CHUNK_ROWS) for a in arrays]
        rows = min(CHUNK_ROWS, n - start)
        if keep is not None:
            mask = keep.slice(start, CHUNK_ROWS)
            chunk = [a.filter(mask) for a in chunk]
            rows = mask.true_count
        if not rows:
            continue
        chunk += [pa.repeat(value, rows) for value in constants]
        yield pa.RecordBatch.from_arrays(chunk, schema=schema)


def _partition_constants(spec: MergeSpec, plan: PartitionReadPlan) -> list[pa.Scalar]:
    """The partition's values as scalars of the partition columns' types."""
    import pyarrow as pa

    out = []
    for field, value in zip(arrow_schema(spec.partition_schema), plan.values, strict=True):
        out.append(pa.scalar(value, pa.string()).cast(field.type))
    return out


def _deleted_rows(spec: MergeSpec, plan: PartitionReadPlan) -> DeletedRows:
    """The identities named by the valid delete events of the partition's delete deltas."""
    import pyarrow.compute as pc

    read = EventRead(EVENT_COLUMNS, (), tuple(spec.data_schema.names), CHUNK_ROWS)
    files = [f for d in plan.delete_deltas for f in d.files]
    parts = []
    for flat in _gathered(read, replace(spec, stripe_test=None), files):
        tests = [pc.invert(flat.has_row), pc.equal(flat.events["operation"], OP_DELETE)]
        tests += [t for t in (_all_set(flat.events),) if t is not None]
        tests.append(_valid(flat.events, spec.valid))
        keep = tests[0]
        for test in tests[1:]:
            keep = pc.and_(keep, test)
        keep = pc.fill_null(keep, False)
        parts.append(tuple(flat.events[c].filter(keep) for c in IDENTITY))
    return DeletedRows(parts)


__all__ = ["IDENTITY", "MergeSpec", "partition_batches"]
