"""A scan read into Arrow without a JVM: what ``lakectl snapshot`` reads, partition by
partition, as :class:`pyarrow.RecordBatch` es.

It starts from a :class:`~lakectl.scan.plan.Scan` (time travel, the bound ``where``, the
projection, pruning and the statements are resolved there) and reads it: merge-on-read per
partition (:mod:`lakectl.arrow.partition_reader`), the Type 7 statements (:mod:`lakectl.arrow.statements`;
one it cannot apply is refused, naming it, never skipped), the ``where`` filter and the
projection.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.arrow.pushdown import StripeTest, stripe_test
from lakectl.arrow.statements import CompiledStatement, apply_compiled, compile_statements
from lakectl.errors import UsageError, overflow_error
from lakectl.planning.prune import columns_read
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.plan import Scan

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc


@dataclass(frozen=True)
class ArrowRead:
    """A resolved read: its rows' schema, the partition batches, and what was planned."""

    scan: Scan
    schema: pa.Schema
    statements: tuple[CompiledStatement, ...] = ()
    condition: pc.Expression | None = None  # the bound ``where`` compiled for pyarrow
    data_columns: tuple[str, ...] | None = None  # the data columns to read (None: all)
    stripe_test: StripeTest | None = None

    @property
    def table(self) -> str:
        return self.scan.table

    @property
    def version(self) -> int | None:
        return self.scan.version

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows, stripe by stripe of each partition's files: besides the rows of one
        stripe, only a partition's delete events are held at once."""
        spec = self._merge_spec()
        for plan in self.scan.plans:
            if not plan.is_empty:
                yield from self._partition(spec, plan)

    def read_all(self, workers: int | None = None) -> pa.Table:
        """Every row as one table, partitions read by ``workers`` threads at once (default:
        one per CPU; pyarrow decodes and filters without holding the GIL). Unlike
        :meth:`batches`, memory holds the whole result, as a table does anyway."""
        import os
        from concurrent.futures import ThreadPoolExecutor

        import pyarrow as pa

        plans = [plan for plan in self.scan.plans if not plan.is_empty]
        workers = min(len(plans), workers or os.cpu_count() or 1)
        if workers <= 1:
            return pa.Table.from_batches(list(self.batches()), schema=self.schema)
        spec = replace(self._merge_spec(), bounded=False)
        with ThreadPoolExecutor(workers, thread_name_prefix="lakectl-arrow") as pool:
            parts = list(pool.map(lambda plan: list(self._partition(spec, plan)), plans))
        return pa.Table.from_batches([b for part in parts for b in part], schema=self.schema)

    def _merge_spec(self) -> MergeSpec:
        meta = self.scan.metadata
        return MergeSpec(
            self.scan.store.storage,
            meta.data_schema,
            meta.schema.select(list(meta.partition_by)),
            self.scan.valid,
            self.scan.key,
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


def arrow_read(scan: Scan) -> ArrowRead:
    """Prepare ``scan`` for an Arrow read (nothing is read from data files yet): statements
    and a ``where`` the Arrow engine cannot evaluate as Spark does are refused here."""
    from lakectl.arrow.compile_expr import arrow_expression
    from lakectl.arrow.types import arrow_schema

    if scan.request.order_by:
        raise UsageError("order_by is not supported by the Arrow reader: sort the result")
    meta = scan.metadata
    compiled = compile_statements(list(scan.statements), meta.schema)
    condition = None
    if scan.where is not None:
        condition = arrow_expression(scan.where, f"--where {(scan.where_text or '')[:200]!r}")
    columns = list(scan.columns)
    schema = arrow_schema(meta.schema.select(columns))
    data, test = _reading(scan, columns)
    return ArrowRead(scan, schema, tuple(compiled), condition, data, test)


def _reading(scan: Scan, columns: list[str]) -> tuple[tuple[str, ...] | None, StripeTest | None]:
    """The data columns a read decodes (None: all) and the test that skips insert stripes by
    their statistics (None: none is skipped). Statements may read and set any column, and a
    condition on a column one of them sets must see the value it sets: statistics of the
    stored values are used only when the ``where`` may filter before the statements."""
    meta = scan.metadata
    test = None
    if scan.where is not None and scan.filter_first:
        test = stripe_test(scan.where, meta.data_schema)
    if scan.statements:
        return None, test
    wanted = {c.lower() for c in columns}
    if scan.where is not None:
        wanted |= columns_read(scan.where)
    data = tuple(n for n in meta.data_schema.names if n.lower() in wanted)
    return (None if len(data) == len(meta.data_schema.names) else data), test


__all__ = ["ArrowRead", "arrow_read"]
