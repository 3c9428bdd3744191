"""A scan: everything a read decides before it reads a row, as one engine-neutral value.

:func:`plan_scan` resolves a :class:`~lakectl.scan.request.SnapshotRequest` on a table: the
state to read (version, ``known_at`` transaction time, ``as_of`` valid time, or a
valid-write-id list for a Hive-written table), per partition the files to read with the data
schema each was written with and the delete files, the ``where`` bound to the schema once, the
projection, the Type 7 statements to apply and what pruning removed. Every back end (the Java
data source and the live-row kernel in Spark tasks in :mod:`lakectl.spark`, the Arrow engine in
:mod:`lakectl.arrow`) reads from a :class:`Scan`; none of them resolves a request itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from lakectl.expr import bind_where
from lakectl.expr.tree import Node
from lakectl.planning.prune import where_reads_only_unassigned
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.pruning import ScanStats, prune_target
from lakectl.scan.request import SnapshotRequest, check_request
from lakectl.scan.statements import statements_for_read
from lakectl.scan.target import ReadTarget, open_for_read
from lakectl.table.listing import FileEntry
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Schema
from lakectl.table.store import TableStore
from lakectl.table.validity import ValidWriteIds
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_stored_statement


@dataclass(frozen=True)
class ScanPartition:
    """One partition of a scan: its values, its data files each with the data schema it was
    written with, and its delete files (the delete events the data files' rows are checked
    against)."""

    relative: str
    values: tuple[str | None, ...]
    data_files: tuple[tuple[FileEntry, Schema], ...]
    delete_files: tuple[FileEntry, ...]


@dataclass(frozen=True)
class Scan:
    """A read of one table, resolved and pruned; nothing is read from data files yet."""

    target: ReadTarget
    """The table state read, its valid write ids and per-partition plans (after pruning)."""
    request: SnapshotRequest
    as_of: int
    """The valid time the statements are chosen at (the request's, else when planned)."""
    where: Node | None
    """The ``where`` bound to the table's schema (None: every row)."""
    statements: tuple[Statement, ...]
    """The Type 7 statements applied to the stored rows, in install order (none when raw)."""
    pruning: ScanStats
    """What the read scans out of what an unpruned read would (and on which columns)."""
    filter_first: bool
    """The ``where`` reads no column a statement assigns, so it may filter the stored rows
    before the statements are applied (and be pushed into the file scan)."""

    @property
    def store(self) -> TableStore:
        return self.target.store

    @property
    def metadata(self) -> TableMetadata:
        return self.target.metadata

    @property
    def state(self) -> TableState | None:
        """The log state read (None for a Hive-written table)."""
        return self.target.state

    @property
    def valid(self) -> ValidWriteIds:
        return self.target.valid

    @property
    def plans(self) -> tuple[PartitionReadPlan, ...]:
        return self.target.plans

    @property
    def table(self) -> str:
        """How results name the table: its name, else its URL."""
        return self.store.name or self.store.url

    @property
    def version(self) -> int | None:
        """The version read (the newest write id of the state; None for a Hive table)."""
        return self.target.state.max_write_id if self.target.state is not None else None

    @property
    def known_at(self) -> int | None:
        return self.request.known_at

    @property
    def raw(self) -> bool:
        return self.request.raw

    @property
    def where_text(self) -> str | None:
        """The ``where`` as the user wrote it (for messages; readers use :attr:`where`)."""
        return self.request.where or None

    @property
    def columns(self) -> tuple[str, ...]:
        """The projection in the schema's spelling (every column when none was asked for)."""
        meta = self.metadata
        if self.request.columns:
            return tuple(meta.schema[c].name for c in self.request.columns)
        return (*meta.data_schema.names, *meta.partition_by)

    @property
    def order_by(self) -> tuple[str, ...]:
        """The sort the read applies (empty: the order of the files)."""
        return self.request.row_order(self.metadata.primary_key)

    @property
    def key(self) -> str | None:
        """The primary-key column stored in the rows (not a partition column), if any."""
        meta = self.metadata
        return meta.data_key

    def partitions(self) -> list[ScanPartition]:
        """Per partition read, its files with their written schemas and its delete files."""
        out = []
        for plan in self.plans:
            data = [
                (f, plan.written_schema(d) or self.metadata.data_schema)
                for d in plan.data_dirs
                for f in d.files
            ]
            data += [(f, self.metadata.data_schema) for f in plan.originals]
            deletes = tuple(f for d in plan.delete_deltas for f in d.files)
            out.append(ScanPartition(plan.relative, plan.values, tuple(data), deletes))
        return out


def plan_scan(
    store: TableStore,
    request: SnapshotRequest,
    storage_options: dict[str, object] | None = None,
) -> Scan:
    """Resolve ``request`` on ``store``: the request checked against the schema, the state
    chosen, the ``where`` bound, the statements read back and checked, partitions and
    list-bucketing directories the ``where`` cannot match pruned. No data file is opened."""
    target = open_for_read(
        store,
        version=request.version,
        known_at=request.known_at,
        as_of=request.as_of,
        valid_write_ids=request.valid_write_ids,
        raw=request.raw,
    )
    return scan_of(target, request, storage_options)


def scan_of(
    target: ReadTarget,
    request: SnapshotRequest | None = None,
    storage_options: dict[str, object] | None = None,
) -> Scan:
    """The scan of an already resolved ``target`` with ``request``'s filter, projection and
    statements (default: every row and column, the statements effective now)."""
    request = request or SnapshotRequest()
    meta = target.metadata
    check_request(meta.schema, request, storage_options)
    where = bind_where(request.where, meta.schema) if request.where else None
    as_of = request.as_of if request.as_of is not None else int(time.time() * 1000)
    statements: tuple[Statement, ...] = ()
    if not request.raw:
        statements = tuple(statements_for_read(target.store, target.state, meta, as_of))
    checked = (
        [check_stored_statement(s, meta.schema) for s in statements] if where is not None else []
    )
    pruned, stats = prune_target(target, where, checked)
    first = where is not None and where_reads_only_unassigned(where, checked)
    return Scan(pruned, request, as_of, where, statements, stats, first)


__all__ = ["Scan", "ScanPartition", "plan_scan", "scan_of"]
