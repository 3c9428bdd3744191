"""Finding the stored rows of a batch's keys with pyarrow inside Spark tasks.

A load needs, for each key of its batch, the live stored row with that key: its partition, its
identity (originalTransaction, bucket, rowId) and the ``--order-by`` value. Through Spark's row
engine that is a scan of every stored event's key prefix, a broadcast semi join with the batch's
keys and an anti join with the delete events, about 0.5 us of CPU per stored row.

Here each Spark task takes one partition of the table: it reads only the event columns, the key
and the order column of that partition's base and delta files with pyarrow's ORC reader, keeps
the events whose key is in the batch (``pyarrow.compute.is_in`` against the batch's keys, shipped
with the task as one Arrow array), drops events of invalid write ids and those a valid delete
event of the partition names (an Arrow hash anti join on the identity), and returns the few
survivors. The rules are those of :mod:`lakectl.spark.acid_read` (bases are taken whole, deltas
filtered by validity, every event column must be set). Files are read through the table's fsspec
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

from lakectl.arrow.events import (
    EVENT_COLUMNS,
    all_event_columns_set,
    of_valid_write_ids,
    orc_source,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.layout import OP_DELETE
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
        valid.high_watermark,
        valid.exceptions,
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
        high_watermark: int,
        exceptions: frozenset[int] | set[int],
    ) -> None:
        self.storage = storage
        self.groups = groups
        self.spec = spec
        self.types = types  # of spec.columns (computed by the driver: it needs a session)
        self.partition_names = partition_names
        self.keys = keys
        self.high_watermark = high_watermark
        self.exceptions = sorted(exceptions)

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
        import pyarrow.compute as pc

        tables, masks = [], []
        files = [(f.path, False) for f in plan.base.files] if plan.base else []
        files += [(f.path, True) for d in plan.deltas for f in d.files]
        for path, is_delta in files:
            events = self._read(path, with_data=True)
            keep = pc.and_(
                all_event_columns_set(events), pc.not_equal(events.column("operation"), OP_DELETE)
            )
            if is_delta:
                keep = pc.and_(keep, self._valid(events))
            tables.append(events)
            masks.append(pc.fill_null(keep, False))
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

        deletes = self._deletes(plan)
        if deletes is not None:
            found = found.join(deletes, list(IDENTITY_COLUMNS), join_type="left anti")
        n = found.num_rows
        names = [self.spec.key, *_order_names(self.spec)]
        arrays = [found.column(c) for c in names]
        arrays += [pa.array([v] * n, pa.string()) for v in plan.values]
        arrays += [found.column(c) for c in IDENTITY_COLUMNS]
        return pa.Table.from_arrays(
            arrays, names=[*names, *self.partition_names, *IDENTITY_COLUMNS]
        )

    def _deletes(self, plan: PartitionReadPlan) -> pa.Table | None:
        """The identities named by the partition's valid delete events."""
        import pyarrow as pa
        import pyarrow.compute as pc

        parts = []
        for path in (f.path for d in plan.delete_deltas for f in d.files):
            events = self._read(path, with_data=False)
            keep = all_event_columns_set(events)
            keep = pc.and_(keep, pc.equal(events.column("operation"), OP_DELETE))
            keep = pc.and_(keep, self._valid(events))
            parts.append(events.filter(pc.fill_null(keep, False)).select(list(IDENTITY_COLUMNS)))
        if not parts:
            return None
        return pa.concat_tables(parts)

    def _valid(self, events: pa.Table) -> pa.Array:
        return of_valid_write_ids(events, self.high_watermark, self.exceptions)

    def _read(self, path: str, *, with_data: bool) -> pa.Table:
        """The event columns of one file (and, ``with_data``, the key and order columns of
        ``row``, named as the table names them; a null ``row`` gives null values)."""
        import pyarrow as pa
        import pyarrow.orc as orc

        with orc_source(self.storage, path) as source:
            reader = orc.ORCFile(source)
            fields: list[str] = []
            if with_data:
                row_names = [f.name for f in reader.schema.field("row").type]
                fields = [_file_field(row_names, c, self.spec) for c in self.spec.columns.names]
            table = reader.read(columns=[*EVENT_COLUMNS, *(f"row.{f}" for f in fields)])
        out = [table.column(c) for c in EVENT_COLUMNS]
        if with_data:
            row = table.column("row").combine_chunks()
            for i, name in enumerate(fields):
                values = row.field(name)
                if row.null_count:  # a null row: its fields are null too
                    values = _null_where(values, row.is_null())
                out.append(values.cast(self.types[i]))
        names = [*EVENT_COLUMNS, *(self.spec.columns.names if with_data else ())]
        return pa.Table.from_arrays(out, names=names)


def _file_field(row_names: list[str], name: str, spec: LookupSpec) -> str:
    """The name of table column ``name`` in a file's ``row`` struct: by name (any case), else
    by position (Hive's ``_colN`` names)."""
    lowered = [n.lower() for n in row_names]
    if name.lower() in lowered:
        return row_names[lowered.index(name.lower())]
    return row_names[spec.positions[spec.columns.names.index(name)]]


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
