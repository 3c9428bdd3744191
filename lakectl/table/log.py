"""The transaction log as values: commit records and the table state folded from them.

Everything here is pure: the log on storage is read by :mod:`lakectl.table.store`; this module
decides what a list of records means (current metadata, committed write ids, time travel,
conflicts). A record is committed exactly when its file ``_lakectl/log/<seq>.json`` exists.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lakectl.errors import AlreadyLoadedError, CommitConflictError, TimeTravelError
from lakectl.table.json_input import (
    REQUIRED,
    as_int,
    as_str,
    field_dict,
    field_int,
    field_list,
    field_str,
    field_str_dict,
)
from lakectl.table.metadata import TableMetadata
from lakectl.table.validity import ValidWriteIds


class Operation(StrEnum):
    """What a commit record did; stored in the log as the value's text."""

    CREATE = "create"
    APPEND = "append"
    UPSERT = "upsert"
    CDC = "cdc"
    DELETE = "delete"
    UPDATE = "update"
    RESTORE = "restore"
    MATERIALIZE = "materialize"
    APPLY_UPDATES = "apply-updates"
    SET_PROPERTIES = "set-properties"
    ALTER = "alter"
    COMPACT = "compact"
    LIST_BUCKET = "list-bucket"
    CLEAN = "clean"


class LoadMode(StrEnum):
    """How ``load`` (and ``stream``) applies a batch; each mode commits as the operation of the
    same name."""

    APPEND = "append"
    UPSERT = "upsert"
    CDC = "cdc"

    @property
    def operation(self) -> Operation:
        """The operation a load in this mode commits."""
        return Operation(self.value)


# Operation kinds, for conflict rules.
APPEND_OPS = frozenset({Operation.APPEND})
MERGE_OPS = frozenset(
    {
        Operation.UPSERT,
        Operation.CDC,
        Operation.DELETE,
        Operation.UPDATE,
        Operation.MATERIALIZE,
        Operation.RESTORE,
    }
)
DATA_OPS = APPEND_OPS | MERGE_OPS
# Operations that read (and decide for) the whole table, whatever partitions they end up writing.
WHOLE_TABLE_OPS = frozenset({Operation.MATERIALIZE, Operation.RESTORE})
# ``set`` changes table properties only: the rows stay as they are.
PROPERTY_OPS = frozenset({Operation.SET_PROPERTIES})
# ``alter`` changes the schema (lakectl.table.evolution): the stored files stay as they are, but
# the rows read have other columns, so a version before it never reads with it.
SCHEMA_OPS = frozenset({Operation.ALTER})
METADATA_OPS = frozenset({Operation.CREATE}) | PROPERTY_OPS | SCHEMA_OPS
# A compaction rewrites committed write ids below every open one and keeps each row's identity:
# it conflicts with nothing, and nothing conflicts with it. ``list-bucket`` is such a rewrite too
# (a major compaction whose base is split by skewed values; lakectl.ops.list_bucket).
COMPACT_OPS = frozenset({Operation.COMPACT, Operation.LIST_BUCKET})
# ``clean`` deletes files no state inside its retention window reads; it changes no data and
# conflicts with nothing. Its records say which directories are gone (see lakectl.table.retention).
CLEAN_OPS = frozenset({Operation.CLEAN})


# The valid time of a data change that names none (a load without ``--effective-from``, a
# one-off delete/update, a restore): valid at every time, as data files are in a Type 7
# dimension, whose statements carry the valid times. Records written before it existed keep
# their meaning: no ``effective_at`` means effective from the commit time.
ALWAYS = -(2**63)


@dataclass(frozen=True)
class CommitRecord:
    """One committed transaction, as stored in the log."""

    seq: int
    operation: Operation
    committed_at: int
    write_id: int | None = None
    read_seq: int | None = None
    effective_at: int | None = None
    partitions: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    obsolete: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    metadata: TableMetadata | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Stored and compared as its text; always the enum in memory.
        if type(self.operation) is not Operation:
            object.__setattr__(self, "operation", Operation(self.operation))

    @classmethod
    def draft(cls, operation: Operation | str, **fields: Any) -> CommitRecord:
        """A record to commit: ``seq`` and ``committed_at`` are set by the log at commit (writers
        commit through :func:`lakectl.table.transaction.transaction`, which drafts it)."""
        return cls(seq=-1, operation=Operation(operation), committed_at=0, **fields)

    @property
    def changes_metadata(self) -> bool:
        """Does this record change the table's metadata (an ``alter``, a ``set``, a ``load
        --evolve``, the table's creation)?"""
        return self.metadata is not None or self.operation in METADATA_OPS

    @property
    def effective_time(self) -> int:
        """When the change takes effect on the valid-time axis: ``effective_at``; :data:`ALWAYS`
        for a change valid at every time; the commit time for records that name none."""
        return self.committed_at if self.effective_at is None else self.effective_at

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "seq": self.seq,
            "operation": self.operation,
            "committed_at": self.committed_at,
            "write_id": self.write_id,
            "read_seq": self.read_seq,
            "effective_at": self.effective_at,
            "partitions": list(self.partitions),
            "added": list(self.added),
            "obsolete": list(self.obsolete),
            "counts": dict(self.counts),
            "info": dict(self.info),
        }
        if self.metadata is not None:
            data["metadata"] = self.metadata.to_json()
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> CommitRecord:
        """The record a log entry or checkpoint row holds; ``ValueError`` naming the first
        field of the wrong type or out of range (the file is table content, not trusted)."""
        operation = field_str(data, "operation")
        if operation not in _OPERATIONS:
            raise ValueError(f"field 'operation' is {operation[:40]!r}, not a known operation")
        meta = data.get("metadata")
        info = field_dict(data, "info", {})
        for key, check in _INFO_FIELDS.items():
            if info.get(key) is not None:
                check(info[key], f"info[{key!r}]")
        return CommitRecord(
            seq=field_int(data, "seq", low=0),
            operation=Operation(operation),
            committed_at=field_int(data, "committed_at"),
            write_id=field_int(data, "write_id", None, low=0),
            read_seq=field_int(data, "read_seq", None, low=-1),
            effective_at=field_int(data, "effective_at", None),
            partitions=tuple(field_list(data, "partitions", as_str)),
            added=tuple(field_list(data, "added", as_str)),
            obsolete=tuple(field_list(data, "obsolete", as_str)),
            counts=field_str_dict(data, "counts", as_int, {}),
            metadata=TableMetadata.from_json(meta) if meta is not None else None,
            info=dict(info),
        )


_OPERATIONS = frozenset(op.value for op in Operation)


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be an array")
    return value


def _str_list(value: object, what: str) -> list[str]:
    return [as_str(v, what) for v in _list(value, what)]


def compaction_item(value: object, what: str) -> dict[str, Any]:
    """One partition's compaction, as a compaction record's ``info`` and a compaction status
    file list them, with its fields checked (``ValueError`` otherwise)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    field_str(value, "partition", None)
    field_str(value, "type", None)
    field_str(value, "reason", None)
    for key in ("inputs", "outputs", "waiting"):
        field_list(value, key, as_str)
    field_int(value, "bytes_in", None, low=0)
    field_int(value, "bytes_out", None, low=0)
    field_str_dict(value, "stats", _finite_number, {})
    return value


def _finite_number(value: object, what: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
        raise ValueError(f"{what} must be a number")
    return value  # type: ignore[return-value]


def _statement_ref(value: object, what: str) -> list[Any]:
    """A ``[write id or null, index]`` pair naming an installed statement."""
    pair = _list(value, what)
    if len(pair) != 2 or (pair[0] is not None and type(pair[0]) is not int):
        raise ValueError(f"{what} must be a [write id, index] pair")
    as_int(pair[1], what, 0)
    return pair


def _layouts(value: object, what: str) -> dict[str, Any]:
    """Base directories written split by skewed values, with their mapping (or null)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    for layout in value.values():
        if layout is not None and layout != {}:
            field_list(layout, "columns", as_str, REQUIRED)
            for values in field_list(layout, "values", _list, REQUIRED):
                for item in values:
                    if isinstance(item, dict | list):
                        raise ValueError(f"{what}: a skewed value must be a scalar")
    return value


# The fields of ``info`` that the table's readers and planners rely on (the statements' own
# contents are checked one by one where they are read, lakectl.ops.updates): clean's deleted
# directories and log start (lakectl.table.retention), a compaction's highest folded write id,
# run id, partitions and list-bucketing layouts, and the statements a record installs, retires
# or makes active again.
_INFO_FIELDS: dict[str, Callable[[object, str], object]] = {
    "deleted": _str_list,
    "log_start": lambda v, what: as_int(v, what, 0),
    "max_write_id": lambda v, what: as_int(v, what, 0),
    "run_id": as_str,
    "source_url": as_str,
    "source_hash": as_str,
    "compactions": lambda v, what: [compaction_item(c, what) for c in _list(v, what)],
    "list_bucketing": _layouts,
    "statements": _list,
    "retired": lambda v, what: [_statement_ref(p, what) for p in _list(v, what)],
    "reactivated": lambda v, what: [_statement_ref(p, what) for p in _list(v, what)],
}


@dataclass(frozen=True)
class TableState:
    """The table as a prefix of its log: metadata, committed write ids, history."""

    records: tuple[CommitRecord, ...]

    @property
    def last_seq(self) -> int:
        return self.records[-1].seq if self.records else -1

    @property
    def metadata(self) -> TableMetadata:
        for record in reversed(self.records):
            if record.metadata is not None:
                return record.metadata
        raise TimeTravelError("no table metadata in this state of the log")

    @property
    def committed_write_ids(self) -> set[int]:
        return {r.write_id for r in self.records if r.write_id is not None}

    @property
    def max_write_id(self) -> int:
        return max(self.committed_write_ids, default=0)

    def valid_write_ids(self) -> ValidWriteIds:
        return ValidWriteIds.from_committed(self.committed_write_ids)

    def prefix(self, seq: int) -> TableState:
        return TableState(tuple(r for r in self.records if r.seq <= seq))

    def at_version(self, write_id: int) -> TableState:
        """The state right after write id ``write_id`` committed."""
        for record in self.records:
            if record.write_id == write_id:
                return self.prefix(record.seq)
        available = sorted(self.committed_write_ids)
        if write_id == 0:
            return self.prefix(self.records[0].seq) if self.records else self
        raise TimeTravelError(
            f"version {write_id} does not exist",
            hint=f"committed versions: {_ranges(available) or 'none yet'}",
        )

    def known_at(self, millis: int) -> TableState:
        """Transaction time: the log as it was at ``millis`` (commits at or before it)."""
        if self.records and millis < self.records[0].committed_at:
            from lakectl.times import format_millis  # the one ISO formatter for messages

            raise TimeTravelError(
                f"the table did not exist yet at {format_millis(millis)} (created at "
                f"{format_millis(self.records[0].committed_at)})"
            )
        return TableState(tuple(r for r in self.records if r.committed_at <= millis))

    def effective_at(self, millis: int) -> TableState:
        """Valid time: only data changes effective at or before ``millis`` (metadata always).

        A compaction is kept only when every write id it folded in is kept: its directories hold
        the effects of those write ids merged, which a reader could not take apart again.
        """
        return self._keeping(
            lambda r: (
                r.write_id is None or r.operation not in DATA_OPS or r.effective_time <= millis
            )
        )

    def without_operations(self, operations: frozenset[str]) -> TableState:
        """The state without the commits of ``operations`` (and compactions that folded them).

        ``--raw`` reads drop ``materialize`` commits: the rows as loaded, before any statement.
        """
        return self._keeping(lambda r: r.operation not in operations)

    def with_next_metadata(self, metadata: TableMetadata) -> TableState:
        """This state as if ``metadata`` committed next (not on storage): what a writer that
        changes the schema in its own commit (``load --evolve``) reads the table with."""
        change = CommitRecord(
            seq=self.last_seq + 1,
            operation=Operation.ALTER,
            committed_at=self.records[-1].committed_at if self.records else 0,
            read_seq=self.last_seq,
            metadata=metadata,
        )
        return TableState((*self.records, change))

    def loaded(self, key: tuple[str, str]) -> CommitRecord | None:
        """The newest load of the source ``key`` (location, content hash) in this state: a
        scan of the records the state already holds (see :func:`source_key`)."""
        return next((r for r in reversed(self.records) if source_key(r) == key), None)

    def _keeping(self, keep: Callable[[CommitRecord], bool]) -> TableState:
        """The records ``keep`` accepts, minus compactions that folded in a dropped write id.

        A dropped record that changed the schema (``load --evolve``) keeps its schema change:
        metadata applies at every valid time, and later writers wrote with it.
        """
        kept = [
            k for k in (r if keep(r) else _metadata_only(r) for r in self.records) if k is not None
        ]
        dropped = self.committed_write_ids - {r.write_id for r in kept if r.write_id is not None}
        first_dropped = min(dropped, default=None)
        return TableState(
            tuple(
                r
                for r in kept
                if r.operation not in COMPACT_OPS
                or first_dropped is None
                or int(r.info.get("max_write_id", 0)) < first_dropped
            )
        )


def _metadata_only(record: CommitRecord) -> CommitRecord | None:
    """The schema change a dropped record made, as an ``alter`` of its own; ``None`` when it
    made none."""
    if record.metadata is None:
        return None
    return CommitRecord(
        seq=record.seq,
        operation=Operation.ALTER,
        committed_at=record.committed_at,
        read_seq=record.read_seq,
        metadata=record.metadata,
        info={"source": f"the schema change of {record.operation} (version {record.write_id})"},
    )


def _ranges(values: list[int]) -> str:
    if not values:
        return ""
    out, start, prev = [], values[0], values[0]
    for v in values[1:]:
        if v == prev + 1:
            prev = v
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = v
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def find_conflict(candidate: CommitRecord, newer: list[CommitRecord]) -> CommitRecord | None:
    """The first record committed since ``candidate`` read the table that it conflicts with.

    A merge (upsert, cdc, delete) read keys from the partitions it writes: any data change that
    another writer committed to one of those partitions since then invalidates that read. Appends
    read nothing and conflict with nothing. Two metadata changes (``load --evolve`` included)
    conflict with each other. A
    materialize folds statements into every row it read and retires them for the whole table: any
    data change anywhere since its read conflicts with it.
    """
    mine = set(candidate.partitions)
    # A load of a source another writer loaded meanwhile commits nothing (unless forced).
    loads = None if candidate.info.get("reloaded") else source_key(candidate)
    same = next((r for r in newer if loads is not None and source_key(r) == loads), None)
    if same is not None:
        return same
    for other in newer:
        if candidate.operation in WHOLE_TABLE_OPS and other.operation in DATA_OPS:
            return other
        if (
            candidate.operation in MERGE_OPS
            and other.operation in DATA_OPS
            and mine & set(other.partitions)
        ):
            return other
        if candidate.changes_metadata and other.changes_metadata:
            return other
    return None


def source_key(record: CommitRecord) -> tuple[str, str] | None:
    """The source a load's record says it loaded: its location and content hash (``None`` for
    other records, and for loads committed before lakectl recorded them)."""
    url, digest = record.info.get("source_url"), record.info.get("source_hash")
    if record.operation not in DATA_OPS or not url or not digest:
        return None
    return str(url), str(digest)


def conflict_error(candidate: CommitRecord, other: CommitRecord) -> CommitConflictError:
    if source_key(candidate) is not None and source_key(candidate) == source_key(other):
        return AlreadyLoadedError(
            f"{candidate.info.get('source')} was loaded by another writer (version "
            f"{other.write_id}) while this load was running; nothing of this one is visible",
            version=other.write_id,
        )
    shared = sorted(set(candidate.partitions) & set(other.partitions))
    where = f" in partition(s) {', '.join(p or '(table)' for p in shared[:5])}" if shared else ""
    return CommitConflictError(
        f"commit conflict: another writer committed {other.operation} (version "
        f"{other.write_id}){where} while this {candidate.operation} was running; "
        "nothing of this one is visible",
        hint="run the command again: it will read the new state",
    )
