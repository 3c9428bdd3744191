"""``lakectl show`` and ``lakectl history``: what a table holds and what happened to it.

No Spark: metadata comes from the log, sizes from the listing. Row counts are exact live rows
(delete events applied, before Type 7 statements): from the ORC footers where no delete event or
invalid write id applies, else by merging the partition on read in pyarrow without decoding its
data columns (:mod:`lakectl.arrow.row_count`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lakectl.ops.results import Listing, brief, iso_time
from lakectl.planning.list_bucket_plan import ListBucketing, layout_of, layouts_by_dir
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.target import ReadTarget, open_for_read
from lakectl.table.orc_files import read_footer
from lakectl.table.retention import describe_start, history_start
from lakectl.table.store import TableStore
from lakectl.times import utc

PARTITION_FIELDS = (
    "partition",
    "base",
    "deltas",
    "delete_deltas",
    "obsolete_dirs",
    "rows",
    "delete_events",
    "bytes",
    "list_bucketing",
)
"""The keys of :meth:`PartitionSummary.to_dict`, in order (``show --format csv``'s columns)."""


@dataclass(frozen=True)
class PartitionSummary:
    """One partition of :class:`ShowResult`: the directories a reader uses, its live rows
    (exact: delete events applied, before Type 7 statements), the delete events stored and
    the bytes of its files."""

    partition: str
    base: str | None
    deltas: int
    delete_deltas: int
    obsolete_dirs: int
    rows: int
    delete_events: int
    bytes: int
    list_bucketing: ListBucketing | None = None  # the mapping of the base a reader uses

    def __repr__(self) -> str:
        return f"PartitionSummary({self.partition!r}, rows={self.rows:,}, bytes={self.bytes:,})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "base": self.base,
            "deltas": self.deltas,
            "delete_deltas": self.delete_deltas,
            "obsolete_dirs": self.obsolete_dirs,
            "rows": self.rows,
            "delete_events": self.delete_events,
            "bytes": self.bytes,
            "list_bucketing": self.list_bucketing.to_json() if self.list_bucketing else None,
        }


@dataclass
class ShowResult:
    table: str
    url: str
    kind: str  # "lakectl" or "hive"
    schema: list[tuple[str, str]]
    primary_key: list[str]
    partition_by: list[str]
    buckets: int
    properties: dict[str, str]
    version: int | None
    partitions: list[PartitionSummary] = field(default_factory=list)
    partition_columns: ClassVar[tuple[str, ...]] = PARTITION_FIELDS
    """The keys of each partition's ``to_dict()`` (``show --format csv``'s columns)."""

    def __repr__(self) -> str:
        return brief(self, "table", "kind", "version", "primary_key", "partition_by")

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "url": self.url,
            "kind": self.kind,
            "schema": [{"name": n, "type": t} for n, t in self.schema],
            "primary_key": self.primary_key,
            "partition_by": self.partition_by,
            "buckets": self.buckets,
            "properties": self.properties,
            "version": self.version,
            "partitions": [p.to_dict() for p in self.partitions],
            "totals": self.totals,
        }

    @property
    def totals(self) -> dict[str, int]:
        """Rows and bytes over all partitions."""
        return {
            "rows": sum(p.rows for p in self.partitions),
            "bytes": sum(p.bytes for p in self.partitions),
        }


def _rows(target: ReadTarget, files: list[Any]) -> int:
    return sum(read_footer(target.store.storage, f.path).rows for f in files)


def _live_rows(target: ReadTarget, plan: PartitionReadPlan) -> int:
    from lakectl.arrow.row_count import live_rows

    return live_rows(target.store.storage, target.metadata, target.valid, plan)


def show(store: TableStore, valid_write_ids: str | None = None) -> ShowResult:
    """Describe a table: schema, key, partitioning, and per partition what a reader would use."""
    target = open_for_read(store, valid_write_ids=valid_write_ids)
    meta = target.metadata
    result = ShowResult(
        table=store.name or store.url,
        url=store.url,
        kind="hive" if target.is_hive else "lakectl",
        schema=[(c.name, c.type) for c in meta.schema.columns],
        primary_key=list(meta.primary_key),
        partition_by=list(meta.partition_by),
        buckets=meta.buckets,
        properties=meta.effective_properties(),
        version=target.state.max_write_id if target.state else target.valid.high_watermark,
    )
    layouts = layouts_by_dir(target.state.records) if target.state is not None else {}
    for plan in target.plans:
        data_files = [f for d in plan.data_dirs for f in d.files] + list(plan.originals)
        delete_files = [f for d in plan.delete_deltas for f in d.files]
        result.partitions.append(
            PartitionSummary(
                partition=plan.relative or "(table)",
                base=plan.base.acid.name if plan.base else None,
                deltas=len(plan.deltas),
                delete_deltas=len(plan.delete_deltas),
                obsolete_dirs=len(plan.obsolete),
                rows=_live_rows(target, plan),
                delete_events=_rows(target, delete_files),
                bytes=sum(f.size for f in data_files + delete_files),
                list_bucketing=layout_of(plan, layouts),
            )
        )
    return result


@dataclass(frozen=True)
class HistoryEntry:
    """One commit: its log entry (``seq``), version (write id; None for a commit that wrote no
    data, e.g. ``set``), operation, commit time, row counts and directories added/replaced."""

    seq: int
    version: int | None
    operation: str
    committed_at: dt.datetime
    counts: dict[str, int]
    added_dirs: int
    obsolete_dirs: int
    info: dict[str, Any]
    starts_history: bool = False
    """The first entry kept after ``clean`` expired older ones (history starts here)."""

    def __repr__(self) -> str:
        return brief(self, "seq", "version", "operation", "committed_at")

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "version": self.version,
            "operation": self.operation,
            "committed_at": iso_time(self.committed_at),
            "counts": self.counts,
            "added_dirs": self.added_dirs,
            "obsolete_dirs": self.obsolete_dirs,
            "info": self.info,
            "starts_history": self.starts_history,
        }


class History(Listing[HistoryEntry]):
    """The commits ``history`` lists (``commits``), and where history starts when ``clean``
    expired older log entries (``history_start``: a sentence; None when the whole log is
    there)."""

    items_key = "commits"
    columns = (
        "seq",
        "version",
        "operation",
        "committed_at",
        "counts",
        "added_dirs",
        "obsolete_dirs",
        "info",
        "starts_history",
    )
    history_start: str | None = None

    @property
    def commits(self) -> list[HistoryEntry]:
        return list(self)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "history_start": self.history_start}


def history(store: TableStore, limit: int | None = None) -> History:
    """One entry per commit from the start of history, oldest first (the last ``limit``)."""
    state = store.read_state()
    first = history_start(state.records)
    kept = [r for r in state.records if r.seq >= first]
    entries = History(
        (
            HistoryEntry(
                r.seq,
                r.write_id,
                r.operation,
                utc(r.committed_at),
                r.counts,
                len(r.added),
                len(r.obsolete),
                r.info,
                starts_history=first > 0 and r.seq == first,
            )
            for r in (kept[-limit:] if limit else kept)
        ),
        table=store.name or store.url,
    )
    if first > 0 and kept:
        entries.history_start = describe_start(kept[0], state)
    return entries
