"""Finding the stored rows of a load's keys in a few partitions, with pyarrow: the lookup Spark
tasks run (:mod:`lakectl.spark.key_lookup`) and the Arrow engine runs in process
(:mod:`lakectl.arrow.load_changes`).

A load needs, for each key of its batch, the live stored row with that key: its partition, its
identity (originalTransaction, bucket, rowId) and the ``--order-by`` value. For each partition
this reads only the event columns, the key and the order column of the base and delta files
with pyarrow's ORC reader, keeps the events whose key is in the batch (integer keys by a binary
search of the batch's keys, sorted once; others by ``pyarrow.compute.is_in``, which hashes the
batch's keys at each probe), keeps the live ones (:mod:`lakectl.kernel.live_rows`:
bases taken whole, deltas filtered by validity, minus the identities the partition's valid
delete events name), and returns the few survivors; the key and order columns of files written
with an older schema are found by :mod:`lakectl.kernel.schema_map`. Files are read through the
table's fsspec filesystem.

It applies to a single-column key that is not a partition column, ordered (if at all) by a data
column; :func:`lookup_spec` returns ``None`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.arrow.events import orc_source
from lakectl.arrow.orc_io import read_file
from lakectl.expr.convert import default_value
from lakectl.kernel.change_classify import find_sorted
from lakectl.kernel.live_rows import EVENT_COLUMNS, IDENTITY, DeleteSet, insert_events
from lakectl.kernel.schema_map import conformed, row_source
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# Events probed against the batch's keys in one call: each call hashes every key of the batch.
PROBE_ROWS = 4_000_000


@dataclass(frozen=True)
class LookupSpec:
    """What the lookup reads: the key column, the order column (if any) and their types."""

    key: str
    order_by: str | None
    columns: Schema  # the key, then the order column, as the table declares them
    positions: tuple[int, ...]  # their positions in ``row`` (files with Hive's ``_colN`` names)

    @property
    def names(self) -> list[str]:
        """The columns read from ``row``: the key, then the order column (if not the key)."""
        if self.order_by and self.order_by != self.key:
            return [self.key, self.order_by]
        return [self.key]


def lookup_spec(
    data_schema: Schema, primary_key: Sequence[str], order_by: str | None
) -> LookupSpec | None:
    """The lookup of ``primary_key`` (with ``order_by``), or ``None`` for a composite key, a
    key or order column that is a partition column, or a name pyarrow cannot select."""
    if len(primary_key) != 1 or data_schema.find(primary_key[0]) is None:
        return None
    key = data_schema[primary_key[0]].name
    names = [key]
    if order_by and order_by.lower() != key.lower():
        if data_schema.find(order_by) is None:
            return None  # ordering by a partition column
        names.append(data_schema[order_by].name)
    if any("." in n for n in names):  # pyarrow reads `row.<name>`
        return None
    lowered = [c.lower() for c in data_schema.names]
    positions = tuple(lowered.index(c.lower()) for c in names)
    order = data_schema[order_by].name if order_by else None
    return LookupSpec(key, order, data_schema.select(names), positions)


def output_names(spec: LookupSpec, partition_names: Sequence[str]) -> list[str]:
    """The columns of :meth:`PartitionKeyLookup.matches`' batches."""
    return [*spec.names, *partition_names, *IDENTITY]


class PartitionKeyLookup:
    """The live stored rows of some partitions whose key is one of ``keys`` (picklable:
    storage, plain values and Arrow arrays only, so Spark ships it to its tasks)."""

    def __init__(
        self,
        storage: Storage,
        spec: LookupSpec,
        types: list[pa.DataType],
        partition_names: list[str],
        keys: pa.Array,
        valid: ValidWriteIds,
        probe_rows: int | None = PROBE_ROWS,
    ) -> None:
        self.storage = storage
        # Events held for one probe (memory: about 70 bytes each); None: the most events of one
        # partition read so far (a probe then holds at most about twice the largest partition's).
        self.probe_rows = probe_rows
        self.spec = spec
        self.types = types  # of spec.columns
        self.partition_names = partition_names
        self.keys = keys  # of types[0]
        self.valid = valid
        self._sorted: np.ndarray | None = None  # integer keys, sorted: made at the first probe

    def matches(self, plans: Sequence[PartitionReadPlan]) -> Iterator[pa.RecordBatch]:
        """The matches of ``plans`` as :func:`output_names` (partition values as text),
        probing up to ``probe_rows`` events (and at least one partition's) at a time; with
        ``probe_rows`` None, up to the most events one partition of ``plans`` has had so far."""
        pending: list[tuple[PartitionReadPlan, pa.Table, pa.ChunkedArray]] = []
        rows = largest = 0
        for plan in plans:
            found = self._events(plan)
            if found is None:  # no stored row: e.g. a partition whose compaction kept none
                continue
            pending.append((plan, *found))
            rows += found[0].num_rows
            largest = max(largest, found[0].num_rows)
            del found  # held by ``pending`` only: freed by the probe, before the next read
            if rows >= (largest if self.probe_rows is None else self.probe_rows):
                yield from self._probe(pending)
                pending, rows = [], 0
        if pending:
            yield from self._probe(pending)

    def _events(self, plan: PartitionReadPlan) -> tuple[pa.Table, pa.ChunkedArray] | None:
        """The partition's base and delta events, and which are live inserts of valid write
        ids (delete events aside); ``None`` when it has no data file."""
        import pyarrow as pa

        tables, masks = [], []
        files = [(f.path, False) for f in plan.base.files] if plan.base else []
        files += [(f.path, True) for d in plan.deltas for f in d.files]
        for path, is_delta in files:
            events, _ = self._read(path, with_data=True)
            present = events.column(self.spec.key).is_valid()
            keep = insert_events(_events(events), present, self.valid if is_delta else None)
            tables.append(events)
            masks.append(keep)
        if not tables:
            return None
        live = pa.chunked_array([c for m in masks for c in m.chunks], pa.bool_())
        return pa.concat_tables(tables), live

    def _probe(
        self, pending: list[tuple[PartitionReadPlan, pa.Table, pa.ChunkedArray]]
    ) -> Iterator[pa.RecordBatch]:
        """The live events of ``pending`` with a key of the batch; one ``is_in`` call (one hash
        table of the batch's keys) for them all."""
        import pyarrow as pa
        import pyarrow.compute as pc

        keys = pa.chunked_array(
            [c for _, events, _ in pending for c in events.column(self.spec.key).chunks],
            self.types[0],
        )
        hits = self._hits(keys)
        offset = 0
        for plan, events, live in pending:
            hit = hits.slice(offset, events.num_rows)
            offset += events.num_rows
            found = events.filter(pc.and_(live, pc.fill_null(hit, False)))
            if found.num_rows:
                yield from self._survivors(plan, found).to_batches()

    def _hits(self, keys: pa.ChunkedArray) -> pa.ChunkedArray:
        """Which of ``keys`` are keys of the batch: integer keys by a binary search of the
        batch's keys sorted (holding no more than them, and them only when not sorted already),
        other keys by a hash table of the batch's keys made for this call."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_integer(self.types[0]) or not len(self.keys):
            return pc.is_in(keys, value_set=self.keys)
        if self._sorted is None:
            known = self.keys.drop_null().to_numpy()
            in_order = bool(np.all(known[1:] >= known[:-1]))
            self._sorted = known if in_order else np.sort(known)
        known = self._sorted
        out = []
        for chunk in keys.chunks:
            nulls = chunk.is_null().to_numpy(zero_copy_only=False) if chunk.null_count else None
            values = chunk.fill_null(0).to_numpy() if nulls is not None else chunk.to_numpy()
            out.append(pa.array(find_sorted(known, values)[1], mask=nulls))
        return pa.chunked_array(out, pa.bool_())

    def _survivors(self, plan: PartitionReadPlan, found: pa.Table) -> pa.Table:
        """``found`` (events of ``plan``) less those a valid delete event names, as output rows."""
        import pyarrow as pa

        gone = self._deletes(plan).deleted(*(found.column(c) for c in IDENTITY))
        if gone is not None:
            found = found.filter(pa.array(~gone))
        n = found.num_rows
        names = self.spec.names
        arrays = [found.column(c) for c in names]
        arrays += [pa.array([v] * n, pa.string()) for v in plan.values]
        arrays += [found.column(c) for c in IDENTITY]
        return pa.Table.from_arrays(arrays, names=output_names(self.spec, self.partition_names))

    def _deletes(self, plan: PartitionReadPlan) -> DeleteSet:
        """The identities named by the partition's valid delete events."""
        parts = (
            self._read(path, with_data=False)
            for path in (f.path for d in plan.delete_deltas for f in d.files)
        )
        return DeleteSet.of_events(((_events(t), has_row) for t, has_row in parts), self.valid)

    def _read(self, path: str, *, with_data: bool) -> tuple[pa.Table, pa.ChunkedArray]:
        """The event columns of one file (and, ``with_data``, the key and order columns of
        ``row``, named as the table names them; a null ``row`` gives null values), and which
        events have a row."""
        import pyarrow as pa
        import pyarrow.orc as orc

        with orc_source(self.storage, path) as source:
            reader = orc.ORCFile(source)
            row_names = [f.name for f in reader.schema.field("row").type]
            sources = [row_source(p, len(row_names)) for p in self.spec.positions]
            if not with_data:
                sources = []
            fields = [row_names[i] for i in sources if i is not None]
            first = row_names[:1] if not fields else []  # the row's presence, from any column
            wanted = [*EVENT_COLUMNS, *(f"row.{f}" for f in fields + first)]
            table = read_file(reader, source, wanted)
        row = table.column("row").combine_chunks()
        out = [table.column(c) for c in EVENT_COLUMNS]
        columns = self.spec.columns.columns if with_data else ()
        for i, (column, source) in enumerate(zip(columns, sources, strict=True)):
            field = pa.field(column.name, self.types[i])
            if source is None:  # added after the file was written
                out.append(conformed(None, field, default_value(column), table.num_rows))
                continue
            values = row.field(row_names[source])
            if row.null_count:  # a null row: its fields are null too
                values = _null_where(values, row.is_null())
            out.append(conformed(values, field, None, table.num_rows))
        names = [*EVENT_COLUMNS, *(c.name for c in columns)]
        return pa.Table.from_arrays(out, names=names), pa.chunked_array([row.is_valid()])


def _events(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    return {name: table.column(name) for name in EVENT_COLUMNS}


def _null_where(values: pa.Array, mask: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.if_else(mask, None, values)


__all__ = ["PROBE_ROWS", "LookupSpec", "PartitionKeyLookup", "lookup_spec", "output_names"]
