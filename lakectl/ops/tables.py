"""``lakectl tables``: the lakectl tables under a warehouse, each in one line.

No Spark: versions and commit times come from the log, sizes and delta counts from the listing,
row counts from ORC footers, and the pending compaction from the same planner ``compact --auto``
uses. A table lakectl cannot read is listed with its error; the others are listed as usual.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lakectl.errors import InternalError, LakectlError, TableNotFoundError, engine_error
from lakectl.ops.compact import CompactOptions
from lakectl.ops.compact import plan as plan_compaction
from lakectl.ops.context import Context
from lakectl.ops.inspect import show
from lakectl.ops.results import iso_time
from lakectl.storage.fs import storage_for
from lakectl.table.paths import META_DIR
from lakectl.times import utc


@dataclass(frozen=True)
class Warehouse:
    """Where the warehouse is (``url``) and the names of the lakectl tables in it, sorted."""

    url: str
    names: tuple[str, ...]


def find_tables(ctx: Context) -> Warehouse:
    """The lakectl tables directly under the configured warehouse: folders holding a
    ``_lakectl`` directory (Hive-written tables have none and are not listed)."""
    root = ctx.config.warehouse
    storage, path = storage_for(root, ctx.config.storage_options)
    if not storage.isdir(path):
        raise TableNotFoundError(
            f"warehouse {storage.url(path)} does not exist",
            hint="give the warehouse with --warehouse (or LAKECTL_WAREHOUSE, or warehouse = "
            "in lakectl.toml); `lakectl create` makes its first table",
        )
    names = tuple(
        e["name"]
        for e in storage.list_entries(path)
        if e["type"] == "directory" and storage.isdir(storage.join(e["path"], META_DIR))
    )
    return Warehouse(storage.url(path), names)


def error_json(exc: BaseException) -> dict[str, Any]:
    """An error as the ``error`` object of one table in a warehouse-wide result."""
    error = exc if isinstance(exc, LakectlError) else engine_error(exc)
    if error is None:
        error = InternalError.wrapping(exc)
    body: dict[str, Any] = {"type": error.kind, "message": error.message}
    if error.hint:
        body["hint"] = error.hint
    return body


@dataclass(frozen=True)
class TableSummary:
    """One table of ``lakectl tables``; ``error`` set (and the rest ``None``) when lakectl
    cannot read it."""

    table: str
    url: str
    version: int | None = None
    rows: int | None = None
    bytes: int | None = None
    deltas: int | None = None
    pending_compaction: tuple[dict[str, str], ...] = ()
    last_commit: dt.datetime | None = None  # UTC
    error: dict[str, Any] | None = None

    @property
    def pending(self) -> str:
        """``minor 2, major 1`` (partitions per kind), or ``-``."""
        kinds = Counter(p["type"] for p in self.pending_compaction)
        return ", ".join(f"{k} {kinds[k]}" for k in sorted(kinds)) or "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "url": self.url,
            "version": self.version,
            "rows": self.rows,
            "bytes": self.bytes,
            "deltas": self.deltas,
            "pending_compaction": list(self.pending_compaction),
            "last_commit": iso_time(self.last_commit),
            "error": self.error,
        }


@dataclass
class TablesResult:
    """Every lakectl table of a warehouse, sorted by name."""

    warehouse: str
    tables: list[TableSummary] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"warehouse": self.warehouse, "tables": [t.to_dict() for t in self.tables]}


def summarize(ctx: Context, name: str) -> TableSummary:
    """One table's line; a table lakectl cannot read gives its error instead."""
    url = name
    try:
        store = ctx.table(name)
        url = store.url
        store.require_log()
        shown = show(store)
        state = store.read_state()
        pending = plan_compaction(ctx, name, CompactOptions(kind="auto")).chosen
        return TableSummary(
            table=name,
            url=url,
            version=shown.version,
            rows=sum(p.rows for p in shown.partitions),
            bytes=sum(p.bytes for p in shown.partitions),
            deltas=sum(p.deltas + p.delete_deltas for p in shown.partitions),
            pending_compaction=tuple(
                {"partition": p.relative, "type": p.kind or "", "reason": p.reason} for p in pending
            ),
            last_commit=utc(state.records[-1].committed_at) if state.records else None,
        )
    except Exception as exc:  # one unreadable table never hides the others
        return TableSummary(table=name, url=url, error=error_json(exc))


def list_tables(ctx: Context) -> TablesResult:
    """Every lakectl table under the configured warehouse (:func:`find_tables`), summarized."""
    found = find_tables(ctx)
    return TablesResult(found.url, [summarize(ctx, name) for name in found.names])


__all__ = ["TableSummary", "TablesResult", "Warehouse", "find_tables", "list_tables", "summarize"]
