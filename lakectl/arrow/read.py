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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.arrow.merge import MergeSpec, partition_rows
from lakectl.arrow.statements import CompiledStatement, apply_compiled, compile_statements
from lakectl.arrow.where import arrow_filter
from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.pruning import ScanStats, prune_target
from lakectl.ops.reading import ReadTarget
from lakectl.ops.snapshot import SnapshotRequest, open_request
from lakectl.ops.updates import statements_for_read

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

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows, one partition at a time (only one partition's rows are held at once)."""
        meta = self.target.metadata
        key = next((k for k in meta.primary_key if k not in meta.partition_by), None)
        spec = MergeSpec(
            self.target.store.storage,
            meta.data_schema,
            meta.schema.select(list(meta.partition_by)),
            self.target.valid,
            key,
        )
        condition = arrow_filter(self.request.where, meta.schema) if self.request.where else None
        names = self.schema.names
        for plan in self.target.plans:
            if plan.is_empty:
                continue
            rows = partition_rows(spec, plan)
            if self.statements:  # row by row: a partition's rows are all they need
                rows = apply_compiled(rows, self.statements)
            if condition is not None:
                rows = rows.filter(condition)
            yield from rows.select(names).to_batches()

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
    return ArrowRead(name, version, schema, scan, pruned, request, tuple(compiled))


__all__ = ["ArrowRead", "read_arrow"]
