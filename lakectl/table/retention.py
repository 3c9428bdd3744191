"""Which states of the log can still be read after ``clean``: pure functions of the records.

A state (a set of commit records) reads the directories its records added and no record of it
made obsolete (:func:`needed_dirs`). ``clean`` records the obsolete directories it deletes in its
log record (``info["deleted"]``); a state needing any of them can no longer be read, and time
travel to it fails with a :class:`TimeTravelError` naming the oldest version and time still
available.

A prefix of the log is followed, in the log, by compactions (and cleans, and property changes)
that change no rows: the state right after version N is the same table whether or not a
compaction committed right after N is included. :func:`with_following_compactions` adds them, so
``--version`` of the newest version still reads after its deltas were compacted and cleaned.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from lakectl.errors import TimeTravelError
from lakectl.table.log import CLEAN_OPS, COMPACT_OPS, PROPERTY_OPS, CommitRecord, TableState

DELETED_KEY = "deleted"
# A clean record's ``info[LOG_START_KEY]``: the log entry history starts at. The records before it
# were expired (a checkpoint at it holds them); states before it are no longer reachable.
LOG_START_KEY = "log_start"
# Records after which a table holds the same rows as before them.
SAME_ROWS_OPS = COMPACT_OPS | CLEAN_OPS | PROPERTY_OPS


def format_time(millis: int) -> str:
    """``2026-11-22 07:42:59 UTC`` for epoch milliseconds (the number itself outside the years
    Python's datetime knows)."""
    try:
        return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (ValueError, OverflowError, OSError):
        return f"{millis} ms after the epoch"


def cleaned_dirs(records: Iterable[CommitRecord]) -> set[str]:
    """Directories that ``clean`` records say are deleted (or being deleted)."""
    out: set[str] = set()
    for record in records:
        if record.operation in CLEAN_OPS:
            out.update(record.info.get(DELETED_KEY, ()))
    return out


def history_start(records: Iterable[CommitRecord]) -> int:
    """The log entry history starts at: 0 unless ``clean`` expired older entries."""
    return max(
        (int(r.info.get(LOG_START_KEY, 0)) for r in records if r.operation in CLEAN_OPS),
        default=0,
    )


def needed_dirs(records: Iterable[CommitRecord]) -> set[str]:
    """Directories a reader of this state may open: added by its records, made obsolete by none.

    A superset of what the read planner picks (it may skip more), never a subset: an obsolete
    directory is always shadowed by the output of the record that made it obsolete.
    """
    added: set[str] = set()
    obsolete: set[str] = set()
    for record in records:
        added.update(record.added)
        obsolete.update(record.obsolete)
    return added - obsolete


def with_following_compactions(prefix: TableState, full: TableState) -> TableState:
    """``prefix`` plus the compaction, clean and property records that directly follow it in
    ``full``.

    Such a compaction folds only write ids committed before it, all in ``prefix`` (no data
    commit lies in between), so the rows are the same and fewer directories are needed.
    """
    if not prefix.records or len(prefix.records) == len(full.records):
        return prefix
    last = prefix.last_seq
    if [r.seq for r in full.records[: len(prefix.records)]] != [r.seq for r in prefix.records]:
        return prefix  # not a prefix (a valid-time selection): leave it alone
    extra = []
    for record in full.records:
        if record.seq <= last:
            continue
        if record.operation not in SAME_ROWS_OPS:
            break
        extra.append(record)
    return TableState(prefix.records + tuple(extra)) if extra else prefix


@dataclass(frozen=True)
class Availability:
    """The oldest point from which every later state of the log is readable."""

    seq: int
    version: int | None
    committed_at: int

    def to_json(self) -> dict[str, int | None]:
        return {"seq": self.seq, "version": self.version, "committed_at": self.committed_at}

    def describe(self) -> str:
        if self.version is not None:
            state = f"version {self.version}"
        elif self.seq == 0:
            state = "the empty table"
        else:  # no --version from here on: only times
            state = f"the one of log entry {self.seq}"
        return f"the oldest state available is {state} (committed {format_time(self.committed_at)})"


def availability(
    full: TableState, deleted: set[str] | None = None, start: int | None = None
) -> Availability | None:
    """Oldest readable point of ``full`` given the deleted directories (default: recorded ones)
    and the log entry history starts at (default: the recorded one).

    Every prefix from the returned seq on is readable (with its following compactions);
    ``version`` is the oldest write id from which every ``--version`` works, ``committed_at`` the
    oldest ``--known-at`` time from which every later time works.
    """
    records = full.records
    if not records:
        return None
    gone = cleaned_dirs(records) if deleted is None else deleted
    first_kept = history_start(records) if start is None else start
    readable = [
        ok and end >= first_kept
        for ok, end in zip(_prefix_readability(records, gone), _extended_ends(records), strict=True)
    ]
    first = len(records) - 1
    while first > 0 and readable[first - 1]:
        first -= 1
    version_seq = {r.write_id: r.seq for r in reversed(records) if r.write_id is not None}
    oldest_version = None
    for write_id, seq in sorted(version_seq.items(), key=lambda kv: kv[1]):
        index = next(i for i, r in enumerate(records) if r.seq == seq)
        if all(readable[index:]):
            oldest_version = write_id
            break
    return Availability(records[first].seq, oldest_version, records[first].committed_at)


def _extended_ends(records: tuple[CommitRecord, ...]) -> list[int]:
    """For each prefix (ending at index i): the seq its following compactions end at."""
    ends = [r.seq for r in records]
    for i in range(len(records) - 2, -1, -1):
        if records[i + 1].operation in SAME_ROWS_OPS:
            ends[i] = ends[i + 1]
    return ends


def _prefix_readability(records: tuple[CommitRecord, ...], gone: set[str]) -> list[bool]:
    """For each prefix (ending at index i, with its following compactions): readable?"""
    raw: list[bool] = []
    added: set[str] = set()
    obsolete: set[str] = set()
    for record in records:
        added.update(record.added)
        obsolete.update(record.obsolete)
        raw.append(not ((added - obsolete) & gone))
    out = raw[:]
    # A run of compactions after a prefix belongs to it: readable if the run's end is.
    for i in range(len(records) - 2, -1, -1):
        if records[i + 1].operation in SAME_ROWS_OPS:
            out[i] = out[i + 1]
    return out


def require_readable(chosen: TableState, full: TableState, what: str) -> None:
    """Raise :class:`TimeTravelError` when ``chosen`` needs a directory ``clean`` deleted, or
    lies before the start of the history ``clean`` kept."""
    gone = cleaned_dirs(full.records)
    missing = needed_dirs(chosen.records) & gone
    if not missing:
        start = history_start(full.records)
        if chosen.records and chosen.last_seq < start:
            first = next(r for r in full.records if r.seq >= start)
            raise TimeTravelError(
                f"{what} is before the start of the table's history: "
                f"{describe_start(first, full)}; `lakectl clean` expired the older log entries "
                "(older than the retention window)",
                hint=f"ask for version {first_version(first, full)} or later"
                if first_version(first, full) is not None
                else f"ask for a time at or after {format_time(first.committed_at)}",
            )
        return
    oldest = availability(full, gone)
    hint = oldest.describe() if oldest else None
    raise TimeTravelError(
        f"{what} is no longer available: `lakectl clean` deleted {len(missing)} director"
        f"{'y' if len(missing) == 1 else 'ies'} it needs (e.g. {sorted(missing)[0]}), "
        "obsolete for longer than the retention window",
        hint=hint,
    )


def first_version(first: CommitRecord, full: TableState) -> int | None:
    """The version (write id) of the state right after ``first``: the newest one committed at
    or before it; None for the empty table."""
    return full.prefix(first.seq).max_write_id or None


def describe_start(first: CommitRecord, full: TableState) -> str:
    """``history starts at version 7 (committed 2026-11-22 07:42:59 UTC)``."""
    version = first_version(first, full)
    state = f"version {version}" if version is not None else f"log entry {first.seq}"
    return f"history starts at {state} (committed {format_time(first.committed_at)})"
