"""A snapshot read into Arrow without a JVM: what ``lakectl snapshot`` reads, table by table
partition, as :class:`pyarrow.RecordBatch` es.

The same resolution as the Spark path (:mod:`lakectl.ops.snapshot`): time travel and
valid-write-id lists (:func:`~lakectl.ops.snapshot.open_request`), checked ``where`` and
``columns``, partition and list-bucketing pruning (:func:`~lakectl.ops.pruning.prune_target`),
then merge-on-read per partition (:mod:`lakectl.arrow.partition_reader`), the Type 7 statements effective
at ``as_of`` (:mod:`lakectl.arrow.statements`; one it cannot apply is refused, naming it, never
skipped), the ``where`` filter and the projection.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sqlglot import exp

from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.arrow.pushdown import StripeTest, stripe_test
from lakectl.arrow.statements import CompiledStatement, apply_compiled, compile_statements
from lakectl.arrow.where import arrow_filter
from lakectl.errors import UsageError, overflow_error
from lakectl.ops.context import Context
from lakectl.ops.pruning import ScanStats, prune_target
from lakectl.ops.reading import ReadTarget
from lakectl.ops.snapshot import SnapshotRequest, open_request
from lakectl.ops.updates import statements_for_read
from lakectl.planning.prune import where_reads_only_unassigned
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.schema import Schema
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_where

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class ArrowRead:
    """A resolved read: its rows' schema, the partition batches, and what was planned."""

    table: str
    version: int | None
    schema: pa.Schema
    scan: ScanStats
    target: ReadTarget
    request: SnapshotRequest
    statements: tuple[CompiledStatement, ...] = ()
    data_columns: tuple[str, ...] | None = None  # the data columns to read (None: all)
    stripe_test: StripeTest | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows, stripe by stripe of each partition's files: besides the rows of one
        stripe, only a partition's delete events are held at once."""
        spec = self._merge_spec()
        for plan in self.target.plans:
            if not plan.is_empty:
                yield from self._partition(spec, plan)

    def read_all(self, workers: int | None = None) -> pa.Table:
        """Every row as one table, partitions read by ``workers`` threads at once (default:
        one per CPU; pyarrow decodes and filters without holding the GIL). Unlike
        :meth:`batches`, memory holds the whole result, as a table does anyway."""
        import os
        from concurrent.futures import ThreadPoolExecutor

        import pyarrow as pa

        plans = [plan for plan in self.target.plans if not plan.is_empty]
        workers = min(len(plans), workers or os.cpu_count() or 1)
        if workers <= 1:
            return pa.Table.from_batches(list(self.batches()), schema=self.schema)
        spec = replace(self._merge_spec(), bounded=False)
        with ThreadPoolExecutor(workers, thread_name_prefix="lakectl-arrow") as pool:
            parts = list(pool.map(lambda plan: list(self._partition(spec, plan)), plans))
        return pa.Table.from_batches([b for part in parts for b in part], schema=self.schema)

    def _merge_spec(self) -> MergeSpec:
        meta = self.target.metadata
        key = next((k for k in meta.primary_key if k not in meta.partition_by), None)
        return MergeSpec(
            self.target.store.storage,
            meta.data_schema,
            meta.schema.select(list(meta.partition_by)),
            self.target.valid,
            key,
            self.data_columns,
            self.stripe_test,
        )

    def _partition(self, spec: MergeSpec, plan: PartitionReadPlan) -> Iterator[pa.RecordBatch]:
        """One partition's rows after the statements and the ``where``, in the read's columns."""
        import pyarrow as pa

        meta = self.target.metadata
        condition = arrow_filter(self.request.where, meta.schema) if self.request.where else None
        names = self.schema.names
        for batch in partition_batches(spec, plan):
            try:
                if self.statements:  # row by row: a batch's rows are all they need
                    table = apply_compiled(pa.Table.from_batches([batch]), self.statements)
                    if not table.num_rows:
                        continue
                    batch = table.combine_chunks().to_batches()[0]
                if condition is not None:
                    batch = batch.filter(condition)
            except pa.ArrowInvalid as exc:
                if "overflow" in str(exc):  # the checked integer kernels (lakectl.expr)
                    raise overflow_error() from exc
                raise
            if batch.num_rows:
                yield batch.select(names)

    def reader(self) -> pa.RecordBatchReader:
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, self.batches())


def read_arrow(ctx: Context, table_ref: str | None, request: SnapshotRequest) -> ArrowRead:
    """Resolve ``request`` on the table for an Arrow read (nothing is read from data files
    yet); bad requests and statements the read cannot apply are refused here."""
    from lakectl.arrow.types import arrow_schema

    if request.order_by:
        raise UsageError("order_by is not supported by the Arrow reader: sort the result")
    target = open_request(ctx, table_ref, request)
    store, meta = target.store, target.metadata
    as_of = request.as_of if request.as_of is not None else int(time.time() * 1000)
    statements = [] if request.raw else statements_for_read(store, target.state, meta, as_of)
    compiled = compile_statements(statements, meta.schema)
    if request.where:
        arrow_filter(request.where, meta.schema)  # refuse what cannot be evaluated, up front
    pruned, scan = prune_target(target, request.where, [s.sql for s in statements])
    names = [meta.schema[c].name for c in request.columns] if request.columns else None
    columns = names or [*meta.data_schema.names, *meta.partition_by]
    schema = arrow_schema(meta.schema.select(columns))
    version = target.state.max_write_id if target.state is not None else None
    name = store.name or store.url
    data, test = _reading(meta.schema, meta.data_schema, request, columns, statements)
    return ArrowRead(name, version, schema, scan, pruned, request, tuple(compiled), data, test)


def _reading(
    schema: Schema,
    data_schema: Schema,
    request: SnapshotRequest,
    columns: list[str],
    statements: list[Statement],
) -> tuple[tuple[str, ...] | None, StripeTest | None]:
    """The data columns a read decodes (None: all) and the test that skips insert stripes by
    their statistics (None: none is skipped). Statements may read and set any column, and a
    condition on a column one of them sets must see the value it sets: statistics of the
    stored values are used only when the ``where`` reads no column a statement assigns."""
    texts = [s.sql for s in statements]
    test = None
    if request.where and (not texts or where_reads_only_unassigned(request.where, texts)):
        test = stripe_test(request.where, data_schema, schema)
    if statements:
        return None, test
    wanted = {c.lower() for c in columns}
    if request.where:
        tree = check_where(request.where, schema)
        wanted |= {c.name.lower() for c in tree.find_all(exp.Column)}
    data = tuple(n for n in data_schema.names if n.lower() in wanted)
    return (None if len(data) == len(data_schema.names) else data), test


__all__ = ["ArrowRead", "read_arrow"]
