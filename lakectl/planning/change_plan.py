"""Which commits and directories a change feed between two states of a table reads (pure).

The feed from version A to version B holds the row changes of every data commit after A's log
entry up to B's: each such commit wrote its inserted rows to ``delta_w_w`` directories and the
identities of the rows it deleted to ``delete_delta_w_w`` directories, both stamped with its write
id ``w``. Type 7 statements (``apply-updates``) change no stored rows and so are no part of the
feed; a ``materialize`` that folds them into the rows is (it deletes and inserts rows).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from lakectl.errors import TimeTravelError, UsageError
from lakectl.table.log import ALWAYS, DATA_OPS, CommitRecord, TableState
from lakectl.table.retention import availability, cleaned_dirs

# The change feed's columns after the table's, and the change types (Delta's names).
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIME = "_commit_time"
CHANGE_TYPES = ("insert", "update_preimage", "update_postimage", "delete")
# The SCD Type 2 view's columns after the table's.
VALID_FROM = "valid_from"
VALID_TO = "valid_to"
IS_CURRENT = "is_current"

DELETE_DELTA_PREFIX = "delete_delta_"


@dataclass(frozen=True)
class ChangeRange:
    """The commits between two states: after log entry ``from_seq``, up to ``to_seq``."""

    from_version: int
    to_version: int
    from_seq: int
    to_seq: int
    commit_times: dict[int, int]
    """Write id -> commit time (epoch ms) of each data commit in the range."""
    insert_dirs: frozenset[str]
    """Directories (relative to the table) holding the range's inserted rows."""
    delete_dirs: frozenset[str]
    """Directories holding the range's delete events."""
    valid_times: dict[int, int] = field(default_factory=dict)
    """Write id -> the time its rows took effect (epoch ms): the ``load --effective-from`` time
    where a load named one, else its commit time. SCD2 validity follows these."""

    @property
    def write_ids(self) -> list[int]:
        return sorted(self.commit_times)


def _seq_of_version(state: TableState, version: int, option: str) -> int:
    if version < 0:
        raise UsageError(f"{option} {version}: a version is 0 (the empty table) or a write id")
    return state.at_version(version).last_seq


def _seq_known_at(state: TableState, millis: int) -> int:
    return state.known_at(millis).last_seq


def plan_changes(
    state: TableState,
    *,
    from_version: int | None = None,
    to_version: int | None = None,
    from_time: int | None = None,
    to_time: int | None = None,
) -> ChangeRange:
    """The commits from version ``from_version`` (or the state known at ``from_time``) up to
    ``to_version`` (or ``to_time``; the newest state when neither is given).

    Raises :class:`UsageError` for a missing or reversed range and :class:`TimeTravelError`
    for versions that do not exist or whose files ``clean`` removed after a compaction.
    """
    if (from_version is None) == (from_time is None):
        raise UsageError("give exactly one of --from-version and --from-time")
    if to_version is not None and to_time is not None:
        raise UsageError("--to-version and --to-time cannot be combined")
    if from_version is not None:
        from_seq = _seq_of_version(state, from_version, "--from-version")
    else:
        from_seq = _seq_known_at(state, int(from_time or 0))
    if to_version is not None:
        to_seq = _seq_of_version(state, to_version, "--to-version")
    elif to_time is not None:
        to_seq = _seq_known_at(state, to_time)
    else:
        to_seq = state.last_seq
    if to_seq < from_seq:
        raise UsageError(
            "the end of the range is before its start: give --to-version/--to-time at or after "
            "--from-version/--from-time"
        )
    records = [r for r in state.records if from_seq < r.seq <= to_seq]
    data = [r for r in records if r.write_id is not None and r.operation in DATA_OPS]
    dirs = {d for r in data for d in r.added}
    gone = dirs & cleaned_dirs(state.records)
    if gone:
        lost = sorted(r.write_id for r in data if set(r.added) & gone if r.write_id is not None)
        oldest = availability(state)
        raise TimeTravelError(
            f"the changes of version(s) {', '.join(map(str, lost))} are no longer available: a "
            "compaction merged their files and clean removed them",
            hint=(oldest.describe() + "; ask for a later range") if oldest else None,
        )
    deletes = frozenset(d for d in dirs if posixpath.basename(d).startswith(DELETE_DELTA_PREFIX))
    return ChangeRange(
        from_version=state.prefix(from_seq).max_write_id,
        to_version=state.prefix(to_seq).max_write_id,
        from_seq=from_seq,
        to_seq=to_seq,
        commit_times={int(r.write_id): r.committed_at for r in data if r.write_id is not None},
        insert_dirs=frozenset(dirs - deletes),
        delete_dirs=deletes,
        valid_times={int(r.write_id): valid_time(r) for r in data if r.write_id is not None},
    )


def valid_time(record: CommitRecord) -> int:
    """When ``record``'s rows took effect: its ``--effective-from`` time, else its commit time."""
    effective = record.effective_at
    return record.committed_at if effective is None or effective == ALWAYS else effective
