"""A table on storage: its log directory, write-id allocation and commits.

Layout under the table root::

    _lakectl/log/00000000000000000003.json   commit seq 3 (put-if-absent: the commit point)
    _lakectl/checkpoints/00000000000000000100.json  every record up to seq 100 (optional)
    _lakectl/txns/00000000000000000002.json  write id 2 allocated (put-if-absent)
    _lakectl/txns/00000000000000000002.aborted
    _lakectl/staging/...                     Spark output before it is moved into place

Hive-written tables have no ``_lakectl`` directory; they are read from their listing alone.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import posixpath
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakectl.errors import (
    CommitConflictError,
    FormatError,
    LakectlError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
)
from lakectl.failpoints import failpoint
from lakectl.storage.fs import AlreadyExistsError, Storage
from lakectl.storage.s3 import S3_SCHEMES
from lakectl.table.checkpoint import (
    INTERVAL_PROPERTY,
    checkpoint_due,
    checkpoint_name,
    encode_checkpoint,
    load_checkpoint,
    parse_checkpoint_name,
    remember_checkpoint,
)
from lakectl.table.json_input import (
    JsonInputError,
    SizeLimit,
    field_int,
    field_str,
    read_json_object,
    warn,
)
from lakectl.table.log import CommitRecord, Operation, TableState, conflict_error, find_conflict
from lakectl.table.metadata import DEFAULT_PROPERTIES, TableMetadata
from lakectl.table.paths import META_DIR, STAGING_DIR, check_record_names

if TYPE_CHECKING:
    from lakectl.table.compaction_runs import RunStatus
    from lakectl.table.transaction import WriteTransaction

LOG_DIR = f"{META_DIR}/log"
CHECKPOINT_DIR = f"{META_DIR}/checkpoints"
TXN_DIR = f"{META_DIR}/txns"
UPDATES_FILE = ".updates"
_WIDTH = 20
MAX_PID = 2**31 - 1
"""The largest process id an allocation or status file may name (the range ``kill`` takes)."""


def now_millis() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class StateRead:
    """A state this store read, and the checkpoint it started from (-1: none)."""

    state: TableState
    checkpoint_seq: int


@dataclass
class TableStore:
    """Storage access for one table root. Pure decisions live in :mod:`lakectl.table.log`."""

    storage: Storage
    root: str
    name: str = ""
    last_read: StateRead | None = field(default=None, compare=False, repr=False)
    """The newest state :meth:`read_state` returned; a commit based on it writes a due
    checkpoint without reading the log again."""

    @property
    def url(self) -> str:
        return self.storage.url(self.root)

    def path(self, *relative: str) -> str:
        return self.storage.join(self.root, *[r for r in relative if r])

    # --- existence ------------------------------------------------------------------------
    def has_log(self) -> bool:
        return self.storage.exists(self.path(LOG_DIR, _log_name(0)))

    def exists(self) -> bool:
        return self.storage.isdir(self.root)

    def require_log(self) -> None:
        if not self.has_log():
            if self.exists():
                raise TableNotFoundError(
                    f"{self.url} has no lakectl log: it is not a lakectl table",
                    hint="read a Hive-written table with `lakectl snapshot`; create one with "
                    "`lakectl create` or `lakectl load --create`",
                )
            raise self.missing_error()

    def missing_error(self) -> TableNotFoundError:
        """The error for a table that is not there: a file where the table should be, or
        nothing (naming lakectl tables next to it with a similar name: "did you mean ...?")."""
        name = self.name or self.url
        if self.storage.exists(self.root):
            return TableNotFoundError(
                f"{name} is a file, not a table ({self.url})",
                hint="a table is a directory holding a _lakectl log: name the table's "
                "directory, or give the new table another name",
            )
        create = "create it with `lakectl create` or `lakectl load --create`"
        similar = self.similar_tables()
        if not similar:
            return TableNotFoundError(f"table {name} does not exist ({self.url})", hint=create)
        guess = " or ".join(similar)
        return TableNotFoundError(
            f"table {name} does not exist ({self.url}): did you mean {guess}?",
            hint=f"name an existing table, e.g. {similar[0]}; or {create}",
        )

    def require_creatable(self) -> None:
        """Refuse to create the table where a file stands: at its location, or at a folder
        above it (exit 73, naming the file)."""
        path = self.root.rstrip("/")
        for _ in range(8):  # the nearest existing ancestor decides; a few levels are enough
            if self.storage.exists(path):
                if self.storage.isdir(path):
                    return
                what = (
                    f"{self.url} is a file"
                    if path == self.root.rstrip("/")
                    else f"{self.storage.url(path)} is a file, so no table can be created under it"
                )
                raise TableExistsError(
                    f"cannot create table {self.name or self.url}: {what}",
                    hint="choose another table name or location, or move the file away",
                )
            parent = posixpath.dirname(path)
            if not parent or parent == path:
                return
            path = parent

    def similar_tables(self, limit: int = 3) -> list[str]:
        """lakectl tables next to this one whose name is close to its name, named the way this
        table was (a warehouse name, or a location)."""
        root = self.root.rstrip("/")
        parent, base = posixpath.dirname(root), posixpath.basename(root)
        if not base or not parent:
            return []
        try:
            names = [
                e["name"]
                for e in self.storage.list_entries(parent)
                if e["type"] == "directory" and e["name"] != base
            ]
        except LakectlError:  # an unreadable parent: no suggestion, the error still stands
            return []
        close = difflib.get_close_matches(base, names, n=limit, cutoff=0.6)
        found = [
            n for n in close if TableStore(self.storage, self.storage.join(parent, n)).has_log()
        ]
        if self.name and "://" not in self.name and not self.name.startswith("/"):
            prefix = posixpath.dirname(self.name.rstrip("/"))
            return [posixpath.join(prefix, n) for n in found]
        return [self.storage.url(self.storage.join(parent, n)) for n in found]

    # --- log ------------------------------------------------------------------------------
    def read_state(self) -> TableState:
        """All committed records, in commit order.

        Read from the newest usable checkpoint plus the records committed after it; from every
        record when no checkpoint can be used (none yet, deleted, damaged, or ahead of the log).
        """
        self.require_log()
        try:
            return self._read_state_once()
        except IncompleteLogError:
            # A concurrent clean may have expired the entries after this read listed the
            # checkpoints it replaced them with: read again once, from the newer checkpoint.
            return self._read_state_once()

    def _read_state_once(self) -> TableState:
        for seq in sorted(self._checkpoint_seqs(), reverse=True):
            later = self._log_seqs_from(seq)
            if not later or later[0] != seq:
                continue  # never trust a checkpoint for a commit the log does not hold
            self._require_contiguous(later)
            base = self._load_checkpoint(seq)
            if base is None:
                continue
            records = self._read_records(later)
            if not self._agrees_with_log(seq, base, records[0]):
                continue
            return self._remember(TableState(base + tuple(records[1:])), seq)
        seqs = self._log_seqs()
        missing = next((i for i, s in enumerate(seqs) if s != i), None)
        if missing is not None:
            raise IncompleteLogError(
                f"the log of {self.name or self.url} starts again at entry {seqs[missing]} "
                f"after entry {missing - 1}: `lakectl clean` expired the entries in between, or "
                f"they were removed, and no usable checkpoint holds them (the checkpoint at entry "
                f"{seqs[missing]} in {self.storage.url(self.path(CHECKPOINT_DIR))} is missing or "
                f"damaged; the first missing entry is "
                f"{self.storage.url(self.path(LOG_DIR, _log_name(missing)))}); the "
                "table cannot be read",
                hint="restore the checkpoint file from a backup; lakectl cannot rebuild the "
                "expired entries",
            )
        return self._remember(TableState(tuple(self._read_records(seqs))), -1)

    def _require_contiguous(self, seqs: list[int]) -> None:
        """Raise when entries are missing between ``seqs[0]`` and ``seqs[-1]`` (a listing), or,
        when they were probed, right after ``seqs[-1]`` (one more probe: the entry after the
        first missing one exists)."""
        gap = next((i for i, s in enumerate(seqs) if s != seqs[0] + i), None)
        if gap is not None:
            raise self._gap_error(seqs[0] + gap, seqs[gap])
        if self.storage.scheme in S3_SCHEMES:
            return  # a listing: nothing after the last entry it found
        free = seqs[-1] + 1
        if self.storage.exists(self.path(LOG_DIR, _log_name(free + 1))) and not (
            self.storage.exists(self.path(LOG_DIR, _log_name(free)))  # a writer just filled it
        ):
            raise self._gap_error(free, free + 1)

    def _gap_error(self, missing: int, found: int) -> IncompleteLogError:
        return IncompleteLogError(
            f"the log of {self.name or self.url} is damaged: entry {missing} "
            f"({self.storage.url(self.path(LOG_DIR, _log_name(missing)))}) is missing "
            f"between entries {missing - 1} and {found}; the table cannot be read",
            hint="restore the missing log entries from a backup",
        )

    def _remember(self, state: TableState, checkpoint_seq: int) -> TableState:
        self.last_read = StateRead(state, checkpoint_seq)
        return state

    def _log_seqs(self, after: int = -1) -> list[int]:
        """The seqs of the log records after ``after``, listing only names that sort later
        (names of another shape than lakectl writes are not log entries)."""
        start = _log_name(after) if after >= 0 else ""
        names = self.storage.list_names_after(self.path(LOG_DIR), start)
        return sorted(s for s in map(_log_seq, names) if s is not None)

    def _log_seqs_from(self, first: int) -> list[int]:
        """The seqs of the log entries from ``first`` on, at a cost bounded by their number.

        Seqs are contiguous, so on a filesystem the entries are probed one by one until the
        first missing one: listing the directory costs time in proportion to the whole log. On
        S3 one listing starting after ``first - 1`` costs no more than the probes would.
        """
        if self.storage.scheme in S3_SCHEMES:
            return self._log_seqs(after=first - 1)
        seqs: list[int] = []
        while self.storage.exists(self.path(LOG_DIR, _log_name(first + len(seqs)))):
            seqs.append(first + len(seqs))
        return seqs

    def log_seqs(self) -> list[int]:
        """The seqs of every log entry on storage (lists the whole log directory)."""
        return self._log_seqs()

    def checkpoint_seqs(self) -> list[int]:
        """The seqs of every checkpoint file on storage, usable or not."""
        return sorted(self._checkpoint_seqs())

    def checkpoint_usable(self, seq: int) -> bool:
        """Whether a reader would use the checkpoint at ``seq``: it exists, is consistent, and
        its last record equals log entry ``seq``."""
        return self._usable_checkpoint(seq) is not None

    def delete_log_entry(self, seq: int) -> None:
        """Delete log entry ``seq`` (only ``clean``, for entries a checkpoint holds)."""
        if seq <= 0:
            raise ValueError("log entry 0 marks the table's existence and is never deleted")
        self.storage.delete(self.path(LOG_DIR, _log_name(seq)))

    def delete_checkpoint(self, seq: int) -> None:
        """Delete the checkpoint at ``seq`` (only ``clean``, for ones a newer one replaces)."""
        self.storage.delete(self.path(CHECKPOINT_DIR, checkpoint_name(seq, _WIDTH)))

    def _checkpoint_seqs(self) -> list[int]:
        names = self.storage.list_names_after(self.path(CHECKPOINT_DIR))
        return [s for s in map(parse_checkpoint_name, names) if s is not None]

    def _load_checkpoint(self, seq: int) -> tuple[CommitRecord, ...] | None:
        """The checkpoint's records, or None when it cannot be used (the log still can); a
        damaged one is reported with a :class:`TableWarning`."""
        path = self.path(CHECKPOINT_DIR, checkpoint_name(seq, _WIDTH))
        try:
            raw = self.storage.read_head(path, SizeLimit.CHECKPOINT + 1)
        except FileNotFoundError:
            return None
        except (OSError, StorageError) as exc:
            warn(f"checkpoint {self.storage.url(path)} was skipped: it cannot be read ({exc})")
            return None
        try:
            records = load_checkpoint(raw, seq, f"checkpoint {self.storage.url(path)}")
            for record in records or ():
                check_record_names(record, source=self.storage.url(path))
            return records
        except FormatError as exc:
            warn(f"{exc.message}; it was skipped and the log records were read instead")
            return None

    def _usable_checkpoint(self, seq: int) -> tuple[CommitRecord, ...] | None:
        """The checkpoint at ``seq`` when a reader would use it: readable, consistent, and its
        last record equal to log entry ``seq`` (which must exist)."""
        if not self.storage.exists(self.path(LOG_DIR, _log_name(seq))):
            return None
        base = self._load_checkpoint(seq)
        if base is None or not self._agrees_with_log(seq, base, self._read_records([seq])[0]):
            return None
        return base

    def _agrees_with_log(
        self, seq: int, base: tuple[CommitRecord, ...], entry: CommitRecord
    ) -> bool:
        """Whether the checkpoint ``base`` ends with log entry ``seq`` as the log holds it
        (``entry``); a :class:`TableWarning` when it does not."""
        if _canonical(base[-1]) == _canonical(entry):
            return True
        warn(
            f"checkpoint {self.checkpoint_url(seq)} was skipped: its last record differs from "
            f"log entry {seq}; the log records were read instead"
        )
        return False

    def _read_records_after(self, seq: int) -> list[CommitRecord]:
        # A listing, not probes: while ``clean`` expires entries the log may have gaps.
        return self._read_records(self._log_seqs(after=seq))

    def _read_records(self, seqs: list[int]) -> list[CommitRecord]:
        """The records of log entries ``seqs``; a damaged one, or one whose seq is not its
        name's, is a :class:`FormatError` naming the file."""
        records = []
        for seq in seqs:
            path = self.path(LOG_DIR, _log_name(seq))
            if self.storage.is_link(path):
                raise FormatError(
                    f"log record {path} is a symbolic link; lakectl never follows links inside "
                    "a table, and the table cannot be read",
                    hint="replace the link by the log record it stands for (from a backup)",
                )
            try:
                data = read_json_object(self.storage, path, limit=SizeLimit.LOG_RECORD)
                record = CommitRecord.from_json(data)
            except (JsonInputError, ValueError) as exc:
                why = exc.why if isinstance(exc, JsonInputError) else str(exc)[:200]
                raise FormatError(
                    f"log record {self.storage.url(path)} is damaged ({why}); the table "
                    "cannot be read",
                    hint="restore the file from a backup; lakectl never rewrites a log record",
                ) from exc
            if record.seq != seq:
                raise FormatError(
                    f"log record {self.storage.url(path)} is damaged: it holds entry "
                    f"{record.seq}, not {seq} (the log has two entries for one seq or one in "
                    "the wrong file); the table cannot be read",
                    hint="restore the file from a backup; lakectl never rewrites a log record",
                )
            check_record_names(record, source=self.storage.url(path))
            records.append(record)
        return records

    # --- checkpoints ----------------------------------------------------------------------
    def write_checkpoint(self, state: TableState) -> bool:
        """Write the checkpoint of ``state`` (put-if-absent); False if one was there already."""
        failpoint("store.before_checkpoint")
        path = self.path(CHECKPOINT_DIR, checkpoint_name(state.last_seq, _WIDTH))
        raw = encode_checkpoint(state.records)
        try:
            self.storage.put_if_absent(path, raw)
        except AlreadyExistsError:
            return False
        remember_checkpoint(raw, state.last_seq, state.records)
        return True

    def log_entry_url(self, seq: int) -> str:
        """The URL of log entry ``seq``, for messages about what it holds."""
        return self.storage.url(self.path(LOG_DIR, _log_name(seq)))

    def checkpoint_url(self, seq: int) -> str:
        return self.storage.url(self.path(CHECKPOINT_DIR, checkpoint_name(seq, _WIDTH)))

    def _checkpoint_after_commit(
        self, final: CommitRecord, read_seq: int, newer: list[CommitRecord]
    ) -> None:
        """Best effort: write the checkpoint at ``final`` when one is due; never fails."""
        try:
            read = self.last_read
            based = read is not None and read.state.last_seq == read_seq
            records = (*read.state.records, *newer, final) if based and read else None
            meta = next((r.metadata for r in reversed(records or ()) if r.metadata), None)
            if not checkpoint_due(
                final.seq, read.checkpoint_seq if based and read else None, _interval(meta)
            ):
                return
            if records is None or [r.seq for r in records] != list(range(final.seq + 1)):
                state = self.read_state().prefix(final.seq)
            else:
                state = TableState(tuple(records))
            if state.last_seq == final.seq:
                self.write_checkpoint(state)
        except Exception:  # a checkpoint is an optimisation: the commit stands
            return

    def create(self, metadata: TableMetadata, info: dict[str, Any] | None = None) -> CommitRecord:
        """Write log entry 0 (the table's birth); fails if the table already exists."""
        record = CommitRecord(
            seq=0,
            operation=Operation.CREATE,
            committed_at=now_millis(),
            metadata=metadata,
            info=info or {},
        )
        # Refuse stores where put-if-absent would not be exclusive (S3 without If-None-Match).
        self.storage.require_conditional_create(self.path(META_DIR))
        try:
            self.storage.put_if_absent(self.path(LOG_DIR, _log_name(0)), _dump_entry(record))
        except AlreadyExistsError as exc:
            raise TableExistsError(f"table {self.name or self.url} already exists") from exc
        return record

    @contextlib.contextmanager
    def transaction(
        self,
        operation: Operation | str,
        *,
        read: TableState | None = None,
        run: RunStatus | None = None,
    ) -> Iterator[WriteTransaction]:
        """``with store.transaction(op, read=state) as txn:``, the one way a table changes: see
        :func:`lakectl.table.transaction.transaction`."""
        from lakectl.table.transaction import transaction

        with transaction(self, operation, read=read, run=run) as txn:
            yield txn

    def commit(self, record: CommitRecord, max_attempts: int = 1000) -> CommitRecord:
        """Append ``record`` after the newest entry, checking conflicts with newer commits
        (writers commit through :meth:`transaction`, which builds the record).

        ``record.read_seq`` is the log position the writer read; every record committed after it
        is checked with :func:`find_conflict`. Raises :class:`CommitConflictError`.
        """
        read_seq = record.read_seq if record.read_seq is not None else -1
        if read_seq >= 0 and not self.has_log():
            # The writer read a log that is gone now: never commit into a removed table.
            raise TableNotFoundError(
                f"{self.url} disappeared while this {record.operation} was running (its "
                "log is gone); nothing was committed",
                hint="check who removed the table; create or restore it, then run again",
            )
        # Seqs are contiguous: when the entry after the one read is free, nothing is newer, and
        # the log need not be listed (the common case, and a cost that grows with the log).
        next_free = read_seq >= 0 and not self.storage.exists(
            self.path(LOG_DIR, _log_name(read_seq + 1))
        )
        newer = [] if next_free else self._read_records_after(read_seq)
        seq = max([read_seq, *[r.seq for r in newer]]) + 1
        for _ in range(max_attempts):
            other = find_conflict(record, newer)
            if other is not None:
                raise conflict_error(record, other)
            final = replace(record, seq=seq, committed_at=now_millis())
            failpoint("store.before_commit")
            try:
                self.storage.put_if_absent(self.path(LOG_DIR, _log_name(seq)), _dump_entry(final))
            except AlreadyExistsError:
                newer = self._read_records_after(read_seq)
                seq = max(r.seq for r in newer) + 1
                continue
            self._refuse_expired_slot(final)
            self._checkpoint_after_commit(final, read_seq, newer)
            return final
        raise conflict_error(record, newer[-1])

    def _refuse_expired_slot(self, final: CommitRecord) -> None:
        """Raise when ``final`` landed among entries ``clean`` expired (its writer read a state
        older than the retention window): readers start after it, so it would be lost."""
        before = final.seq - 1
        if before > 0:
            expired = not self.storage.exists(self.path(LOG_DIR, _log_name(before)))
        else:  # after entry 0, which is never expired: only a checkpoint says entries went
            expired = bool(self._checkpoint_seqs()) and bool(self._log_seqs(after=final.seq))
        if expired:
            raise CommitConflictError(
                f"this {final.operation} read a state of {self.name or self.url} older than "
                "its history (`lakectl clean` expired those log entries while it ran); nothing "
                "of this one is visible",
                hint="run the command again: it will read the new state",
            )

    # --- write ids --------------------------------------------------------------------------
    def allocate_write_id(self, operation: Operation | str) -> int:
        """Reserve the next write id (put-if-absent), as Hive's metastore would (writers get
        theirs from :meth:`transaction`)."""
        names = self.storage.list_names(self.path(TXN_DIR))
        existing = [s for s in (_seq_of(n.split(".")[0]) for n in names) if s is not None]
        candidate = max(existing, default=0) + 1
        body = {
            "operation": operation,
            "started_at": now_millis(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        while True:
            try:
                self.storage.put_if_absent(
                    self.path(TXN_DIR, _seq_name(candidate) + ".json"), _dump(body)
                )
                return candidate
            except AlreadyExistsError:
                candidate += 1

    def mark_aborted(self, write_id: int, reason: str) -> None:
        """Best effort: a writer failing because storage is down cannot mark itself; ``clean``
        treats a write id whose writer is gone as aborted anyway."""
        with contextlib.suppress(AlreadyExistsError, StorageError):
            self.storage.put_if_absent(
                self.path(TXN_DIR, _seq_name(write_id) + ".aborted"),
                _dump({"aborted_at": now_millis(), "reason": reason}),
            )

    def write_id_aborted(self, write_id: int) -> bool:
        """Is ``write_id`` marked aborted (by its writer, or by whoever judged it gone)?"""
        return self.storage.exists(self.path(TXN_DIR, _seq_name(write_id) + ".aborted"))

    def allocated_write_ids(self) -> dict[int, dict[str, Any]]:
        """Every allocated write id with its allocation record and ``aborted`` flag.

        The record's fields are checked (``operation`` and ``host`` strings, ``started_at`` and
        ``pid`` integers); a damaged allocation file is reported with a :class:`TableWarning`
        and its write id kept as allocated with no details, so no writer is judged gone on its
        word.
        """
        out: dict[int, dict[str, Any]] = {}
        for name in self.storage.list_names(self.path(TXN_DIR)):
            stem, _, ext = name.partition(".")
            write_id = _seq_of(stem)
            if write_id is None:
                continue
            entry = out.setdefault(write_id, {"aborted": False})
            if ext == "aborted":
                entry["aborted"] = True
            elif ext == "json":
                entry.update(self._allocation(self.path(TXN_DIR, name)))
        return out

    def _allocation(self, path: str) -> dict[str, Any]:
        """The checked fields of one allocation file; empty (with a warning) when damaged."""
        try:
            data = read_json_object(self.storage, path, limit=SizeLimit.TXN)
            return {
                "operation": field_str(data, "operation", None),
                "started_at": field_int(data, "started_at", None),
                "host": field_str(data, "host", None),
                "pid": field_int(data, "pid", None, low=1, high=MAX_PID),
            }
        except FileNotFoundError:
            return {}
        except (JsonInputError, ValueError) as exc:
            why = exc.why if isinstance(exc, JsonInputError) else str(exc)[:200]
            marker = posixpath.basename(path).split(".")[0] + ".aborted"
            warn(
                f"write id allocation {self.storage.url(path)} is damaged ({why}); its write id "
                "counts as allocated by a writer that may still run (compaction waits for it; "
                f"when no writer is running, create {marker} beside it to mark it aborted)"
            )
            return {}

    def staging_path(self, write_id: int) -> str:
        return self.path(STAGING_DIR, f"w{write_id:07d}-{os.getpid()}-{now_millis()}")


class IncompleteLogError(FormatError):
    """Log entries are missing and no usable checkpoint holds them."""


def _interval(meta: TableMetadata | None) -> int:
    """The table's checkpoint interval (the default when unknown or invalid)."""
    from lakectl.table.properties import property_value

    if meta is not None:
        try:
            return int(property_value(meta, INTERVAL_PROPERTY))
        except LakectlError:
            pass
    return int(DEFAULT_PROPERTIES[INTERVAL_PROPERTY])


def _seq_of(stem: str) -> int | None:
    """The number a file name's stem stands for: only the zero-padded width lakectl writes."""
    return int(stem) if len(stem) == _WIDTH and stem.isascii() and stem.isdigit() else None


def _log_seq(name: str) -> int | None:
    """The seq of a log entry file name; None for anything else."""
    return _seq_of(name[:-5]) if name.endswith(".json") else None


def _canonical(record: CommitRecord) -> str:
    """A record as canonical JSON: two records are the same commit exactly when these match."""
    return json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"))


def _seq_name(seq: int) -> str:
    return f"{seq:0{_WIDTH}d}"


def _log_name(seq: int) -> str:
    return _seq_name(seq) + ".json"


def _dump_entry(record: CommitRecord) -> bytes:
    """A log entry's bytes, unique to this attempt.

    On S3, ``put_if_absent`` takes a key holding exactly its own bytes for its own earlier PUT
    whose answer was lost; the attempt id keeps two writers' entries from ever being identical.
    """
    return _dump({**record.to_json(), "attempt": uuid.uuid4().hex})


def _dump(data: dict[str, Any]) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
