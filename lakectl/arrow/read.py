"""A snapshot read into Arrow without a JVM: what ``lakectl snapshot`` reads, table by table
partition, as :class:`pyarrow.RecordBatch` es.

The same resolution as the Spark path (:mod:`lakectl.ops.snapshot`): time travel and
valid-write-id lists (:func:`~lakectl.ops.snapshot.open_request`), checked ``where`` and
``columns``, partition and list-bucketing pruning (:func:`~lakectl.ops.pruning.prune_target`),
then merge-on-read per partition (:mod:`lakectl.arrow.merge`), the Type 7 statements effective
at ``as_of`` (:mod:`lakectl.arrow.statements`; one it cannot apply is refused, naming it, never
skipped), the ``where`` filter and the projection.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lakectl.arrow.merge import MergeSpec, partition_batches
from lakectl.arrow.pushdown import StripeTest, stripe_test
from lakectl.arrow.statements import CompiledStatement, apply_compiled, compile_statements
from lakectl.errors import UsageError, overflow_error
from lakectl.expr.compile_arrow import arrow_expression
from lakectl.expr.tree import Node
from lakectl.ops.context import Context
from lakectl.ops.pruning import ScanStats, prune_target
from lakectl.ops.reading import ReadTarget
from lakectl.ops.snapshot import SnapshotRequest, bound_where, open_request
from lakectl.ops.updates import statements_for_read
from lakectl.planning.prune import columns_read, where_reads_only_unassigned
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.schema import Schema
from lakectl.updates.validate import CheckedStatement, check_stored_statement

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc


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
    condition: pc.Expression | None = None  # the request's where, compiled once

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

        condition = self.condition
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
    where = bound_where(request, meta.schema)
    # refuse what cannot be evaluated, up front; compiled once for every partition
    condition = None if where is None else arrow_expression(where, _label(request))
    checked = [check_stored_statement(s, meta.schema) for s in statements]
    pruned, scan = prune_target(target, where, checked)
    names = [meta.schema[c].name for c in request.columns] if request.columns else None
    columns = names or [*meta.data_schema.names, *meta.partition_by]
    schema = arrow_schema(meta.schema.select(columns))
    version = target.state.max_write_id if target.state is not None else None
    name = store.name or store.url
    data, test = _reading(meta.data_schema, where, columns, checked)
    return ArrowRead(
        name, version, schema, scan, pruned, request, tuple(compiled), data, test, condition
    )


def _label(request: SnapshotRequest) -> str:
    return f"--where {(request.where or '')[:200]!r}"


def _reading(
    data_schema: Schema,
    where: Node | None,
    columns: list[str],
    statements: list[CheckedStatement],
) -> tuple[tuple[str, ...] | None, StripeTest | None]:
    """The data columns a read decodes (None: all) and the test that skips insert stripes by
    their statistics (None: none is skipped) for the bound condition ``where``. Statements
    may read and set any column, and a condition on a column one of them sets must see the
    value it sets: statistics of the stored values are used only when ``where`` reads no
    column a statement assigns."""
    test = None
    if where is not None and where_reads_only_unassigned(where, statements):
        test = stripe_test(where, data_schema)
    if statements:
        return None, test
    wanted = {c.lower() for c in columns}
    if where is not None:
        wanted |= columns_read(where)
    data = tuple(n for n in data_schema.names if n.lower() in wanted)
    return (None if len(data) == len(data_schema.names) else data), test


__all__ = ["ArrowRead", "read_arrow"]
