"""Finding the stored rows of a batch's keys with pyarrow inside Spark tasks.

A load needs, for each key of its batch, the live stored row with that key: its partition, its
identity (originalTransaction, bucket, rowId) and the ``--order-by`` value.

Here each Spark task takes a few partitions of the table and runs the Arrow lookup of
:mod:`lakectl.arrow.key_lookup` on them (the Arrow engine runs the same in process): only the
event columns, the key and the order column are read, probed against the batch's keys (shipped
with the task as one Arrow array), and the live survivors returned.

The path applies to a single-column key that is not a partition column, with key and order
columns of plain types or ``timestamp``; otherwise :func:`lookup_spec` returns ``None`` and the
caller reads the key columns of the touched partitions through the live-row kernel in tasks
(:func:`lakectl.spark.kernel_read.kernel_rows`) and keeps the batch's keys with a semi join.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakectl.arrow import key_lookup as arrow_lookup
from lakectl.arrow.bucket_compaction import unsafe_type
from lakectl.arrow.key_lookup import LookupSpec, PartitionKeyLookup
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds

from .types import IDENTITY_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

# ``false`` sends every load's key lookup through Spark's row engine (to compare the two, or as
# an escape hatch): ``lakectl --conf spark.lakectl.load.arrowLookup=false load ...``.
ENABLED_CONF = "spark.lakectl.load.arrowLookup"
_MAX_TASKS = 1000
_TASK_BYTES = 256 << 20  # of event files per task, at most (above two tasks per core)


def lookup_spec(
    spark: SparkSession, data_schema: Schema, primary_key: Sequence[str], order_by: str | None
) -> LookupSpec | None:
    """The lookup of ``primary_key`` (with ``order_by``, :func:`lakectl.arrow.key_lookup.
    lookup_spec`) or ``None`` if this path cannot do it (columns of types whose values Spark
    and Arrow do not hand over exactly) or is switched off (:data:`ENABLED_CONF`)."""
    if (spark.conf.get(ENABLED_CONF, "true") or "true").lower() == "false":
        return None
    spec = arrow_lookup.lookup_spec(data_schema, primary_key, order_by)
    if spec is None or unsafe_type(spec.columns) is not None:
        return None
    return spec


def stored_rows_for_keys(
    spark: SparkSession,
    storage: Storage,
    plans: Sequence[PartitionReadPlan],
    valid: ValidWriteIds,
    spec: LookupSpec,
    partition_schema: Schema,
    keys: pa.Array,
) -> DataFrame:
    """The live stored rows whose key is in ``keys`` (an Arrow array), as the columns
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
        *[F.col(f"`{c}`") for c in spec.names],
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


def _output_ddl(spec: LookupSpec, partition_schema: Schema) -> str:
    cols = [f"`{c.name}` {c.type}" for c in spec.columns.columns]
    cols += [f"`{c.name}` string" for c in partition_schema.columns]
    cols += ["originalTransaction bigint", "bucket int", "rowId bigint"]
    return ", ".join(cols)


class _LookupTask(PartitionKeyLookup):
    """The function each task runs: the lookup of its group of partitions."""

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
        super().__init__(storage, spec, types, partition_names, keys, valid)
        self.groups = groups

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column("id").to_pylist():
                yield from self.matches(self.groups[i])


def _arrow_type(type_text: str) -> pa.DataType:
    """The Arrow type of a Spark SQL type as the tasks hand it to Spark (on the driver: parsing
    needs the session): a ``timestamp`` as microseconds in UTC, as every task of lakectl's."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_type(_parse_datatype_string(type_text), timezone="UTC")


__all__ = [
    "ENABLED_CONF",
    "LookupSpec",
    "lookup_spec",
    "stored_rows_for_keys",
]
