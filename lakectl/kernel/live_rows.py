"""Which stored events of a partition are live rows: the rule, and the one delete set.

A stored event is a live row when

- every event column (:data:`EVENT_COLUMNS`) is set,
- it is an insert event (its ``operation`` is not :data:`~lakectl.table.layout.OP_DELETE`) and
  has a row (with its key set, when the table has a key),
- its write id (``currentTransaction``) is valid, for the events of deltas (a base is taken
  whole: its compaction kept only valid events), and
- no delete event names its identity (:data:`IDENTITY`: originalTransaction, bucket, rowId)
  among the valid delete events of its partition's delete deltas.

A delete event is one whose event columns are all set, whose ``operation`` is a delete, that has
no row, and whose write id is valid. The identities they name are held in a :class:`DeleteSet`:
per (originalTransaction, bucket), the sorted rowIds deleted; insert events stream past it batch
by batch and are tested by a binary search per row (no join, no hash of every identity).

Events are given as their columns by name (any mapping of :data:`EVENT_COLUMNS` to arrays or
chunked arrays), with a mask of the events that carry a row: that is all the rule reads.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from lakectl.table.layout import OP_DELETE
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    Column: TypeAlias = pa.Array | pa.ChunkedArray

IDENTITY = ("originalTransaction", "bucket", "rowId")
EVENT_COLUMNS = ("operation", *IDENTITY, "currentTransaction")


def identity_fields() -> list[pa.Field]:
    """The row identity columns (:data:`IDENTITY`) as Arrow fields."""
    import pyarrow as pa

    types = (pa.int64(), pa.int32(), pa.int64())
    return [pa.field(name, t) for name, t in zip(IDENTITY, types, strict=True)]


def all_set(columns: Iterable[Column]) -> Column | None:
    """Rows where every one of ``columns`` is set (None: all rows are)."""
    import pyarrow.compute as pc

    keep = None
    for column in columns:
        if column.null_count:
            keep = column.is_valid() if keep is None else pc.and_(keep, column.is_valid())
    return keep


def valid_write_ids(txn: Column, valid: ValidWriteIds) -> Column:
    """Which write ids of ``txn`` are valid: at most the high watermark and not one of the
    exceptions (open or aborted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ok = pc.less_equal(txn, valid.high_watermark)
    excluded = sorted(valid.exceptions)
    if excluded:
        ok = pc.and_(ok, pc.invert(pc.is_in(txn, pa.array(excluded, pa.int64()))))
    return ok


def insert_events(
    events: Mapping[str, Column],
    present: Column,
    valid: ValidWriteIds | None,
    tests: Sequence[Column] = (),
) -> Column:
    """Which ``events`` are insert events with their row ``present`` (the row, or its key, is
    set), all event columns set, of a valid write id (``valid``; None: a base's events, taken
    whole) and passing ``tests``: a mask without nulls. The delete set is not consulted."""
    import pyarrow.compute as pc

    checks = [present, pc.not_equal(events["operation"], OP_DELETE)]
    checks += [t for t in (all_set(events[c] for c in EVENT_COLUMNS),) if t is not None]
    if valid is not None:
        checks.append(valid_write_ids(events["currentTransaction"], valid))
    return _all_of([*checks, *tests])


def delete_events(
    events: Mapping[str, Column],
    has_row: Column,
    valid: ValidWriteIds,
    tests: Sequence[Column] = (),
) -> Column:
    """Which ``events`` are delete events that count: all event columns set, a delete, no row
    (``has_row`` false), of a valid write id, passing ``tests``; a mask without nulls."""
    import pyarrow.compute as pc

    checks = [pc.invert(has_row), pc.equal(events["operation"], OP_DELETE)]
    checks += [t for t in (all_set(events[c] for c in EVENT_COLUMNS),) if t is not None]
    checks.append(valid_write_ids(events["currentTransaction"], valid))
    return _all_of([*checks, *tests])


def live_rows(
    events: Mapping[str, Column],
    present: Column,
    valid: ValidWriteIds | None,
    deleted: DeleteSet,
) -> Column | None:
    """Which ``events`` (of one partition's bases and deltas) are live rows: the insert events
    of :func:`insert_events` whose identity ``deleted`` does not hold. None when all are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = insert_events(events, present, valid)
    gone = deleted.deleted(*_identity(events))
    if gone is not None:
        keep = pc.and_(keep, pa.array(~gone))
    return None if _true_count(keep) == len(keep) else keep


def _identity(events: Mapping[str, Column]) -> list[Column]:
    """The identity columns of ``events``, nulls as 0 (an event with one is not live anyway)."""
    import pyarrow.compute as pc

    identity = [events[c] for c in IDENTITY]
    if any(c.null_count for c in identity):
        identity = [pc.fill_null(c, 0) for c in identity]
    return identity


def _true_count(mask: Column) -> int:
    chunks = mask.chunks if hasattr(mask, "chunks") else [mask]
    return sum(c.true_count for c in chunks)


def _all_of(checks: Sequence[Column]) -> Column:
    import pyarrow.compute as pc

    keep = checks[0]
    for test in checks[1:]:
        keep = pc.and_(keep, test)
    return pc.fill_null(keep, False)


class DeleteSet:
    """The identities a partition's valid delete events name: sorted rowIds deleted, by
    (originalTransaction, bucket)."""

    def __init__(self, identities: Iterable[Sequence[Column]] = ()) -> None:
        """``identities``: (originalTransaction, bucket, rowId) columns of delete events (all
        set), in any number of parts."""
        import numpy as np

        parts = [[_numpy(c) for c in p] for p in identities]
        self.rows: dict[tuple[int, int], np.ndarray] = {}
        if not parts or not sum(len(p[0]) for p in parts):
            return
        txn, bucket, row = (np.concatenate([p[i] for p in parts]) for i in range(3))
        order = np.lexsort((row, bucket, txn))
        txn, bucket, row = txn[order], bucket[order], row[order]
        starts = np.flatnonzero((np.diff(txn) != 0) | (np.diff(bucket) != 0)) + 1
        bounds = [0, *starts.tolist(), len(row)]
        for start, end in itertools.pairwise(bounds):
            self.rows[(int(txn[start]), int(bucket[start]))] = row[start:end]

    @classmethod
    def of_events(
        cls, parts: Iterable[tuple[Mapping[str, Column], Column]], valid: ValidWriteIds
    ) -> DeleteSet:
        """The identities named by the delete events (:func:`delete_events`) among ``parts``:
        (event columns by name, which events have a row), e.g. a partition's delete deltas."""
        chosen = []
        for events, has_row in parts:
            keep = delete_events(events, has_row, valid)
            if _true_count(keep):
                chosen.append([events[c].filter(keep) for c in IDENTITY])
        return cls(chosen)

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def deleted(self, txn: Column, bucket: Column, row: Column) -> np.ndarray | None:
        """Which events of the identity columns ``txn``, ``bucket``, ``row`` (all set) are
        deleted, as a boolean mask; None when none is."""
        import numpy as np

        if not self.rows or not len(row):
            return None
        txns, buckets, rows = _numpy(txn), _numpy(bucket), _numpy(row)
        mask: np.ndarray | None = None
        if txns.min() == txns.max() and buckets.min() == buckets.max():  # one writer's file
            ids = self.rows.get((int(txns[0]), int(buckets[0])))
            return _members(rows, ids) if ids is not None else None
        for (t, b), ids in self.rows.items():
            where = np.flatnonzero((txns == t) & (buckets == b))
            if not len(where):
                continue
            hits = _members(rows[where], ids)
            if hits is None:
                continue
            if mask is None:
                mask = np.zeros(len(rows), dtype=bool)
            mask[where[hits]] = True
        return mask


def _numpy(column: Column) -> np.ndarray:
    import numpy as np

    return np.asarray(column.to_numpy(zero_copy_only=False))


def _members(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray | None:
    """Which ``values`` are in ``sorted_ids`` (a boolean mask; None when none is).

    A file's rowIds come in ascending order: then each id is looked up among the values (the
    ids are fewer than the rows), else each value among the ids."""
    import numpy as np

    if len(sorted_ids) < len(values) and bool(np.all(values[1:] > values[:-1])):
        at = np.searchsorted(values, sorted_ids)
        found = at < len(values)
        at = at[found]
        at = at[values[at] == sorted_ids[found]]
        if not len(at):
            return None
        hits = np.zeros(len(values), dtype=bool)
        hits[at] = True
        return hits
    at = np.searchsorted(sorted_ids, values)
    at[at == len(sorted_ids)] = 0
    hits = sorted_ids[at] == values
    return hits if hits.any() else None


__all__ = [
    "EVENT_COLUMNS",
    "IDENTITY",
    "DeleteSet",
    "all_set",
    "delete_events",
    "identity_fields",
    "insert_events",
    "live_rows",
    "valid_write_ids",
]
