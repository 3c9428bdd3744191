"""Deciding, per key, whether a change of a load's batch is an insert, an update, a delete or
ignored: the rule, in pyarrow.

The batch (the table's columns plus the load's own: the change's position in the source, its
action with ``--op-column``, its order value with ``--order-by``) is reduced to the latest
change per key: the greatest order value (a null one counts as the latest, as Spark's
``desc_nulls_first`` has it), then the last position. That change is matched with the stored
live rows of its key (their partition, identity and order value only) and labelled:

- a delete (cdc): ``delete`` when a stored row exists and the change is newer, else ``ignored``;
- an insert or update (cdc), or any change (upsert): ``update`` when a stored row exists and the
  change is newer, ``ignored`` when one exists and it is not, else ``insert``.

"Newer" is: no ``--order-by``, or the stored row's order value is null, or the change's is
greater (a null change order value is not newer than a set stored one). A late, older change
thus never overwrites a newer one. The changes the latest one replaced are counted as
``superseded_in_batch``.

:func:`decide_changes` applies the rule to a batch's decision columns: the Arrow engine's load
to its whole batch, Spark's load on its driver (a batch of up to a few million changes) or in
its tasks by key (a larger one).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.kernel.live_rows import IDENTITY
from lakectl.table.batch_checks import ACTION_COL, ORDER_COL, POSITION_COL
from lakectl.table.log import LoadMode

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

RESULTS = ("insert", "update", "delete", "ignored")
LOAD_COUNTS = ("inserted", "updated", "deleted", "ignored", "superseded_in_batch")
# A change's column in the decisions of a cdc load: is it a delete (:func:`delete_actions`).
DELETES_COL = "__lakectl_deletes"
KEY = "__key_"


def latest_rows(batch: pa.Table, key: Sequence[str], has_order: bool) -> np.ndarray:
    """The row numbers of the latest change of each key in ``batch`` (the greatest
    :data:`ORDER_COL`, null first, when ``has_order``; then the greatest :data:`POSITION_COL`),
    in key order. Only the key, :data:`ORDER_COL` (with ``has_order``) and
    :data:`POSITION_COL` columns are read; what this holds besides them is a few integers per
    row."""
    import numpy as np
    import pyarrow.compute as pc

    if not batch.num_rows:
        return np.zeros(0, dtype=np.int64)
    # Keys are never null (the batch's checks refuse them); a null order value is the latest.
    sort_keys = [(k, "ascending", "at_end") for k in key]
    names = list(key)
    if has_order:
        sort_keys.append((ORDER_COL, "descending", "at_start"))
        names.append(ORDER_COL)
    sort_keys.append((POSITION_COL, "descending", "at_end"))
    names.append(POSITION_COL)
    order = pc.sort_indices(batch.select(list(dict.fromkeys(names))), sort_keys=sort_keys)
    first = ~same_as_previous([batch.column(k).take(order) for k in key])
    return np.asarray(order.to_numpy(), dtype=np.int64)[first]


def same_as_previous(columns: Sequence[pa.ChunkedArray | pa.Array]) -> np.ndarray:
    """Rows whose values in ``columns`` equal the previous row's (null equal to null); the
    first row never does."""
    import numpy as np
    import pyarrow.compute as pc

    n = len(columns[0]) if columns else 0
    same = np.ones(n, dtype=bool)
    if not n:
        return same
    same[0] = False
    for column in columns:
        before, after = column.slice(0, n - 1), column.slice(1)
        equal = pc.equal(before, after)
        both_null = pc.and_(before.is_null(), after.is_null())
        equal = pc.fill_null(pc.or_kleene(equal, both_null), False)
        same[1:] &= np.asarray(equal.to_numpy(zero_copy_only=False), dtype=bool)
    return same


def decision_columns(changes: pa.Table, primary_key: Sequence[str]) -> pa.Table:
    """What :func:`decide_changes` reads of ``changes`` (a shaped batch's rows, in source
    order): the key columns, :data:`ORDER_COL` (a batch with an order) and
    :data:`DELETES_COL` (a batch with actions, from its :data:`ACTION_COL`)."""
    import pyarrow as pa

    names = changes.schema.names
    columns = {k: changes.column(k) for k in primary_key}
    if ORDER_COL in names:
        columns[ORDER_COL] = changes.column(ORDER_COL)
    if ACTION_COL in names:
        columns[DELETES_COL] = pa.array(delete_actions(changes.column(ACTION_COL)))
    return pa.table(columns)


def stored_columns(
    primary_key: Sequence[str], partition_by: Sequence[str], order_by: str | None
) -> list[str]:
    """The columns of the stored rows :func:`decide_changes` reads: key, partition columns, the
    identity and the order column, each once."""
    seen: list[str] = []
    for c in (*primary_key, *partition_by, *IDENTITY, *([order_by] if order_by else [])):
        if c.lower() not in (s.lower() for s in seen):
            seen.append(c)
    return seen


@dataclass(frozen=True)
class DecidedChanges:
    """A batch's changes decided: which write a new row, which stored rows they replace or
    delete, and the load's counts."""

    writes: np.ndarray  # by change position (row of the decisions): does it write a new row
    replaced: pa.Table  # the stored rows replaced or deleted: partition columns, identity
    counts: dict[str, int]  # the load's counts (:func:`load_counts`)


def decide_changes(
    decisions: pa.Table,
    stored_for: Callable[[pa.Table], pa.Table],
    primary_key: Sequence[str],
    partition_by: Sequence[str],
    *,
    mode: LoadMode,
    order_by: str | None,
) -> DecidedChanges:
    """Decide a batch's changes (the module's rule).

    ``decisions`` has a row per change, in batch order (the row number is the change's
    position): the key columns, :data:`ORDER_COL` (with ``order_by``, the table's name of the
    order column) and :data:`DELETES_COL` (a cdc load: is the change a delete). ``stored_for``
    is given the latest changes' keys (distinct, in key order) and returns the live stored rows
    of those keys (at least), with the :func:`stored_columns`. Besides ``decisions`` and the
    stored rows this holds a few integers per change.
    """
    import numpy as np
    import pyarrow as pa

    keys = list(primary_key)
    rows = decisions.num_rows
    with_positions = decisions.append_column(POSITION_COL, pa.array(np.arange(rows)))
    latest = latest_rows(with_positions, keys, order_by is not None)  # positions, key order
    del with_positions
    latest_keys = decisions.select(keys).take(latest)
    stored = stored_for(latest_keys)
    change, found = matched_stored(latest_keys, stored, keys)
    del latest_keys
    change = latest[change]  # the position of each matched change
    del latest
    results = _results(decisions, change, stored, found, mode=mode, order_by=order_by)
    by_result = np.bincount(results, minlength=len(RESULTS)).tolist()
    _, update, delete, _ = range(len(RESULTS))
    writes = np.zeros(rows, dtype=bool)
    writes[change[results <= update]] = True
    replaced = found[(results == update) | (results == delete)]
    return DecidedChanges(
        writes,
        stored.select([*partition_by, *IDENTITY]).take(pa.array(replaced)),
        load_counts(dict(zip(RESULTS, by_result, strict=True)), rows),
    )


# Changes labelled at a time: the order values compared are copied for them only.
_RESULT_SLICE = 65_536


def _results(
    decisions: pa.Table,
    change: np.ndarray,
    stored: pa.Table,
    found: np.ndarray,
    *,
    mode: LoadMode,
    order_by: str | None,
) -> np.ndarray:
    """The result (index in :data:`RESULTS`) of each change at position ``change`` of
    ``decisions`` against its stored row ``found`` (-1: none), a slice of
    :data:`_RESULT_SLICE` changes at a time."""
    import numpy as np
    import pyarrow as pa

    results = np.empty(len(change), dtype=np.int8)
    for start in range(0, len(change), _RESULT_SLICE):
        at = change[start : start + _RESULT_SLICE]
        stored_at = found[start : start + _RESULT_SLICE]
        exists = stored_at >= 0
        newer = None
        if order_by is not None:
            mine = decisions.column(ORDER_COL).take(at)
            theirs = stored.column(order_by).take(pa.array(stored_at, mask=~exists))
            newer = newer_than_stored(mine, theirs)
        deletes = None
        if mode == LoadMode.CDC:
            flags = decisions.column(DELETES_COL).take(at)
            deletes = np.asarray(flags.to_numpy(zero_copy_only=False), dtype=bool)
        results[start : start + len(at)] = change_results(exists, newer, deletes)
    return results


def matched_stored(
    changes: pa.Table, stored: pa.Table, primary_key: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """``changes`` joined with the ``stored`` rows of their key (both read for the key columns
    only): the row number of each change and of its stored row (-1: none), a change once per
    stored row of its key (at least once), in no particular order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    sorted_pairs = _matched_sorted(changes, stored, primary_key)
    if sorted_pairs is not None:
        return sorted_pairs
    change_col, stored_col = KEY + "change", KEY + "stored"
    left = pa.table(
        [*(changes.column(k) for k in primary_key), np.arange(changes.num_rows)],
        names=[*primary_key, change_col],
    )
    right = pa.table(
        [*(stored.column(k) for k in primary_key), np.arange(stored.num_rows)],
        names=[*(KEY + k for k in primary_key), stored_col],
    )
    joined = left.join(
        right,
        keys=list(primary_key),
        right_keys=[KEY + k for k in primary_key],
        join_type="left outer",
    )
    change = np.asarray(joined.column(change_col).to_numpy(), dtype=np.int64)
    found = pc.fill_null(joined.column(stored_col), -1).to_numpy()
    return change, np.asarray(found, dtype=np.int64)


def _matched_sorted(
    changes: pa.Table, stored: pa.Table, primary_key: Sequence[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`matched_stored` by a binary search, for an integer key whose ``changes`` are in
    key order with one change per key (as :func:`latest_rows` gives them): no hash table of
    the keys is built. None for any other key."""
    import numpy as np
    import pyarrow as pa

    if len(primary_key) != 1:
        return None
    mine, theirs = changes.column(primary_key[0]), stored.column(primary_key[0])
    if not pa.types.is_integer(mine.type) or mine.type != theirs.type:
        return None
    if mine.null_count or theirs.null_count:
        return None
    keys = np.asarray(mine.to_numpy())
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        return None
    at, hit = find_sorted(keys, np.asarray(theirs.to_numpy()))
    matched = at[hit]
    alone = np.ones(len(keys), dtype=bool)
    alone[matched] = False
    change = np.concatenate([matched, np.flatnonzero(alone)]).astype(np.int64)
    found = np.concatenate([np.flatnonzero(hit), np.full(len(change) - len(matched), -1)])
    return change, found.astype(np.int64)


def find_sorted(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``wanted``'s place in the sorted ``keys`` and whether it is there (a binary
    search: nothing is built from ``keys``)."""
    import numpy as np

    if not len(keys):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return at, keys[at] == wanted


def delete_actions(actions: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Which of :data:`ACTION_COL`'s ``actions`` are deletes."""
    import numpy as np
    import pyarrow.compute as pc

    deletes = pc.fill_null(pc.equal(actions, "delete"), False)
    return np.asarray(deletes.to_numpy(zero_copy_only=False), dtype=bool)


def newer_than_stored(
    change: pa.ChunkedArray | pa.Array, stored: pa.ChunkedArray | pa.Array
) -> np.ndarray:
    """Is each change's order value newer than its stored row's: the stored one is null, or
    the change's is greater (a null change order value is not newer than a set one)."""
    import numpy as np
    import pyarrow.compute as pc

    newer = pc.or_kleene(pc.is_null(stored), pc.greater(change, stored))
    return np.asarray(pc.fill_null(newer, False).to_numpy(zero_copy_only=False), dtype=bool)


def change_results(
    exists: np.ndarray, newer: np.ndarray | None, deletes: np.ndarray | None
) -> np.ndarray:
    """Each change's result as its index in :data:`RESULTS`: from whether a stored row of its
    key ``exists``, whether the change is ``newer`` than it (None: no ``--order-by``, every
    change is) and, for a cdc load, whether it ``deletes`` (None: an upsert)."""
    import numpy as np

    replaces = exists if newer is None else exists & newer
    insert, update, delete, ignored = range(len(RESULTS))
    codes = np.where(replaces, update, np.where(exists, ignored, insert)).astype(np.int8)
    if deletes is not None:
        codes[deletes] = np.where(replaces[deletes], delete, ignored)
    return codes


def load_counts(by_result: dict[str, int], rows: int) -> dict[str, int]:
    """A load's counts (its commit record's, named :data:`LOAD_COUNTS`) from the results by
    kind and the batch's rows."""
    values = (*(by_result[r] for r in RESULTS), rows - sum(by_result.values()))
    return dict(zip(LOAD_COUNTS, values, strict=True))


def partition_runs(table: pa.Table, partition_by: Sequence[str]) -> Iterator[pa.Table]:
    """``table`` in parts of one partition each (by the values of ``partition_by``; the whole
    table when it is empty)."""
    import numpy as np
    import pyarrow.compute as pc

    if not partition_by or not table.num_rows:
        if table.num_rows:
            yield table
        return
    order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in partition_by])
    ordered = table.take(order)
    starts = np.flatnonzero(~same_as_previous([ordered.column(c) for c in partition_by]))
    bounds = [*starts.tolist(), ordered.num_rows]
    for start, end in itertools.pairwise(bounds):
        yield ordered.slice(start, end - start)


__all__ = [
    "ACTION_COL",
    "DELETES_COL",
    "LOAD_COUNTS",
    "ORDER_COL",
    "POSITION_COL",
    "RESULTS",
    "DecidedChanges",
    "change_results",
    "decide_changes",
    "decision_columns",
    "delete_actions",
    "find_sorted",
    "latest_rows",
    "load_counts",
    "matched_stored",
    "newer_than_stored",
    "partition_runs",
    "same_as_previous",
    "stored_columns",
]
