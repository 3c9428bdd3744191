"""Finding the stored rows of a batch's keys with pyarrow inside Spark tasks.

A load needs, for each key of its batch, the live stored row with that key: its partition, its
identity (originalTransaction, bucket, rowId) and the ``--order-by`` value. Through Spark's row
engine that is a scan of every stored event's key prefix, a broadcast semi join with the batch's
keys and an anti join with the delete events, about 0.5 us of CPU per stored row.

Here each Spark task takes one partition of the table: it reads only the event columns, the key
and the order column of that partition's base and delta files with pyarrow's ORC reader, keeps
the events whose key is in the batch (``pyarrow.compute.is_in`` against the batch's keys, shipped
with the task as one Arrow array), keeps the live ones (:mod:`lakectl.kernel.live_rows`: bases
taken whole, deltas filtered by validity, minus the identities the partition's valid delete
events name), and returns the few survivors; the key and order columns of files written with an
older schema are found by :mod:`lakectl.kernel.schema_map`. Files are read through the table's fsspec
filesystem, as :mod:`lakectl.spark.bucket_rewrite` does, so local, Hadoop-less S3 and other
fsspec stores work alike.

The path applies to a single-column key that is not a partition column, with key and order
columns of plain types; otherwise :func:`stored_rows_for_keys` returns ``None`` and the caller
takes the Spark path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.arrow.events import orc_source
from lakectl.expr.convert import default_value
from lakectl.kernel.live_rows import EVENT_COLUMNS, DeleteSet, insert_events
from lakectl.kernel.schema_map import conformed, row_source
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

from .bucket_rewrite import eligible
from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

# ``false`` sends every load's key lookup through Spark's row engine (to compare the two, or as
# an escape hatch): ``lakectl --conf spark.lakectl.load.arrowLookup=false load ...``.
ENABLED_CONF = "spark.lakectl.load.arrowLookup"
_MAX_TASKS = 1000
_TASK_BYTES = 256 << 20  # of event files per task, at most (above two tasks per core)
# Events probed against the batch's keys in one call: each call hashes every key of the batch.
_PROBE_ROWS = 4_000_000


@dataclass(frozen=True)
class LookupSpec:
    """What the lookup reads: the key column, the order column (if any) and their types."""

    key: str
    order_by: str | None
    columns: Schema  # the key, then the order column, as the table declares them
    positions: tuple[int, ...]  # their positions in ``row`` (files with Hive's ``_colN`` names)


def lookup_spec(
    spark: SparkSession, data_schema: Schema, primary_key: Sequence[str], order_by: str | None
) -> LookupSpec | None:
    """The lookup of ``primary_key`` (with ``order_by``) or ``None`` if this path cannot do it
    or is switched off (:data:`ENABLED_CONF`)."""
    if (spark.conf.get(ENABLED_CONF, "true") or "true").lower() == "false":
        return None
    if len(primary_key) != 1 or data_schema.find(primary_key[0]) is None:
        return None  # a composite key, or a key that is a partition column
    key = data_schema[primary_key[0]].name
    names = [key]
    if order_by and order_by.lower() != key.lower():
        if data_schema.find(order_by) is None:
            return None  # ordering by a partition column: rare, left to Spark
        names.append(data_schema[order_by].name)
    columns = data_schema.select(names)
    if not eligible(columns) or any("." in n for n in names):  # pyarrow reads `row.<name>`
        return None
    lowered = [c.lower() for c in data_schema.names]
    positions = tuple(lowered.index(c.lower()) for c in names)
    return LookupSpec(key, data_schema[order_by].name if order_by else None, columns, positions)


def batch_keys(keys: DataFrame) -> pa.Array:
    """The single key column of ``keys``, collected to the driver as one Arrow array."""
    return keys.toArrow().column(0).combine_chunks()


def has_repeated_keys(keys: pa.Array) -> bool:
    """Does any key occur more than once?"""
    import pyarrow.compute as pc

    return bool(pc.count_distinct(keys, mode="all").as_py() < len(keys))


def stored_rows_for_keys(
    spark: SparkSession,
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    spec: LookupSpec,
    partition_schema: Schema,
    keys: pa.Array,
) -> DataFrame:
    """The live stored rows whose key is in ``keys`` (from :func:`batch_keys`), as the columns
    key, partition columns, originalTransaction, bucket, rowId (and the order column)."""
    from pyspark.sql import functions as F

    ddl = _output_ddl(spec, partition_schema)
    groups = _task_groups([p for p in plans if p.base is not None or p.deltas], _cores(spark))
    if not groups:
        return spark.createDataFrame([], ddl)
    types = [_arrow_type(c.type) for c in spec.columns.columns]
    task = _LookupTask(
        storage,
        groups,
        spec,
        types,
        partition_schema.names,
        keys.cast(types[0]),
        valid,
    )
    n = len(groups)
    found = spark.range(0, n, 1, numPartitions=n).mapInArrow(task, ddl)
    return found.select(
        *[F.col(f"`{c}`") for c in (spec.key, *_order_names(spec))],
        *[F.col(f"`{c.name}`").cast(c.type) for c in partition_schema.columns],
        *[F.col(c) for c in IDENTITY_COLUMNS],
    )


def _cores(spark: SparkSession) -> int:
    """Task slots of the cluster (Spark Connect has no SparkContext: the shuffle partitions)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # pyspark.errors.PySparkNotImplementedError on Spark Connect
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)


def _task_groups(plans: list[PartitionReadPlan], parallelism: int) -> list[list[PartitionReadPlan]]:
    """``plans`` packed into tasks of similar size (largest first): two per core, more when
    a task would read over :data:`_TASK_BYTES` of files."""
    sizes = {id(p): sum(f.size for d in p.data_dirs for f in d.files) for p in plans}
    ordered = sorted(plans, key=lambda p: -sizes[id(p)])
    by_bytes = -(-sum(sizes.values()) // _TASK_BYTES)
    n = min(len(ordered), _MAX_TASKS, max(2 * parallelism, by_bytes))
    groups: list[list[PartitionReadPlan]] = [[] for _ in range(n)]
    loads = [0] * n
    for plan in ordered:
        smallest = loads.index(min(loads))
        groups[smallest].append(plan)
        loads[smallest] += sizes[id(plan)]
    return [g for g in groups if g]


def _order_names(spec: LookupSpec) -> list[str]:
    return [spec.order_by] if spec.order_by and spec.order_by != spec.key else []


def _output_ddl(spec: LookupSpec, partition_schema: Schema) -> str:
    cols = [f"`{c.name}` {c.type}" for c in spec.columns.columns]
    cols += [f"`{c.name}` string" for c in partition_schema.columns]
    cols += ["originalTransaction bigint", "bucket int", "rowId bigint"]
    return ", ".join(cols)


class _LookupTask:
    """The function each task runs (picklable: storage, plans and plain values only)."""

    def __init__(
        self,
        storage: Storage,
        groups: list[list[PartitionReadPlan]],
        spec: LookupSpec,
        types: list[pa.DataType],
        partition_names: list[str],
        keys: pa.Array,
        valid: ValidWriteIds,
    ) -> None:
        self.storage = storage
        self.groups = groups
        self.spec = spec
        self.types = types  # of spec.columns (computed by the driver: it needs a session)
        self.partition_names = partition_names
        self.keys = keys
        self.valid = valid

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column("id").to_pylist():
                yield from self._group(self.groups[i])

    def _group(self, plans: list[PartitionReadPlan]) -> Iterator[pa.RecordBatch]:
        """The matches of ``plans``, probing up to :data:`_PROBE_ROWS` events at a time."""
        pending: list[tuple[PartitionReadPlan, pa.Table, pa.ChunkedArray]] = []
        rows = 0
        for plan in plans:
            events, live = self._events(plan)
            pending.append((plan, events, live))
            rows += events.num_rows
            if rows >= _PROBE_ROWS:
                yield from self._probe(pending)
                pending, rows = [], 0
        if pending:
            yield from self._probe(pending)

    def _events(self, plan: PartitionReadPlan) -> tuple[pa.Table, pa.ChunkedArray]:
        """The partition's base and delta events, and which are live inserts of valid write
        ids (delete events aside)."""
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
        hits = pc.is_in(keys, value_set=self.keys)
        offset = 0
        for plan, events, live in pending:
            hit = hits.slice(offset, events.num_rows)
            offset += events.num_rows
            found = events.filter(pc.and_(live, pc.fill_null(hit, False)))
            if found.num_rows:
                yield from self._survivors(plan, found).to_batches()

    def _survivors(self, plan: PartitionReadPlan, found: pa.Table) -> pa.Table:
        """``found`` (events of ``plan``) less those a valid delete event names, as output rows."""
        import pyarrow as pa

        gone = self._deletes(plan).deleted(*(found.column(c) for c in IDENTITY_COLUMNS))
        if gone is not None:
            found = found.filter(pa.array(~gone))
        n = found.num_rows
        names = [self.spec.key, *_order_names(self.spec)]
        arrays = [found.column(c) for c in names]
        arrays += [pa.array([v] * n, pa.string()) for v in plan.values]
        arrays += [found.column(c) for c in IDENTITY_COLUMNS]
        return pa.Table.from_arrays(
            arrays, names=[*names, *self.partition_names, *IDENTITY_COLUMNS]
        )

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
            table = reader.read(columns=[*EVENT_COLUMNS, *(f"row.{f}" for f in fields + first)])
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


def _arrow_type(type_text: str) -> pa.DataType:
    """The Arrow type of a Spark SQL type (on the driver: parsing needs the session)."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_type(_parse_datatype_string(type_text))


__all__ = [
    "ENABLED_CONF",
    "LookupSpec",
    "batch_keys",
    "has_repeated_keys",
    "lookup_spec",
    "stored_rows_for_keys",
]
