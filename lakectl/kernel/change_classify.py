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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakectl.kernel.live_rows import IDENTITY
from lakectl.table.batch_checks import ACTION_COL, ORDER_COL, POSITION_COL
from lakectl.table.log import LoadMode

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

RESULT_COL = "__lakectl_result"
RESULTS = ("insert", "update", "delete", "ignored")
OLD = "__old_"
KEY = "__key_"


def has_repeated_keys(batch: pa.Table, key: Sequence[str]) -> bool:
    """Does any key occur more than once in ``batch``?"""
    return batch.select(list(key)).group_by(list(key)).aggregate([]).num_rows < batch.num_rows


def latest_per_key(batch: pa.Table, key: Sequence[str], has_order: bool) -> pa.Table:
    """The latest change of each key of ``batch`` (ordered by key): greatest
    :data:`ORDER_COL` (null first) when ``has_order``, then greatest :data:`POSITION_COL`."""
    if not batch.num_rows:
        return batch
    return batch.take(latest_rows(batch, key, has_order))


def latest_rows(batch: pa.Table, key: Sequence[str], has_order: bool) -> np.ndarray:
    """The row numbers of :func:`latest_per_key`'s changes in ``batch``, in key order. Only the
    key, :data:`ORDER_COL` (with ``has_order``) and :data:`POSITION_COL` columns are read; what
    this holds besides them is a few integers per row."""
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


def stored_columns(
    primary_key: Sequence[str], partition_by: Sequence[str], order_by: str | None
) -> list[str]:
    """The columns of the stored rows :func:`classify` reads: key, partition columns, the
    identity and the order column, each once."""
    seen: list[str] = []
    for c in (*primary_key, *partition_by, *IDENTITY, *([order_by] if order_by else [])):
        if c.lower() not in (s.lower() for s in seen):
            seen.append(c)
    return seen


def _old_names(partition_by: Sequence[str], order_by: str | None) -> list[str]:
    """The stored rows' columns a change is labelled with and writes from, each once."""
    names = [*partition_by, *IDENTITY]
    if order_by and order_by not in names:
        names.append(order_by)
    return names


def classify(
    latest: pa.Table,
    stored: pa.Table,
    primary_key: Sequence[str],
    partition_by: Sequence[str],
    *,
    mode: LoadMode,
    order_by: str | None,
) -> pa.Table:
    """``latest`` (one change per key) matched with the ``stored`` live rows of its key and
    labelled (:data:`RESULT_COL`), in the order of :data:`POSITION_COL`.

    ``stored`` has the :func:`stored_columns` (at most one row per key as lakectl writes
    tables; a key stored twice gives a matched change per stored row, as a join does). The
    stored rows' partition columns, identity and order value come as ``__old_<name>``.
    """
    import numpy as np
    import pyarrow as pa

    change, found = matched_stored(latest, stored, primary_key)
    by_position = np.argsort(
        np.asarray(latest.column(POSITION_COL).to_numpy())[change], kind="stable"
    )
    change, found = change[by_position], found[by_position]
    stored_at = pa.array(found, mask=found < 0)
    olds = _old_names(partition_by, order_by)
    joined = latest.take(change)
    for name in olds:
        joined = joined.append_column(OLD + name, stored.column(name).take(stored_at))
    deletes = None
    if mode == LoadMode.CDC:
        deletes = delete_actions(joined.column(ACTION_COL))
    newer = None
    if order_by:
        newer = newer_than_stored(joined.column(ORDER_COL), joined.column(OLD + order_by))
    codes = change_results(found >= 0, newer, deletes)
    return joined.append_column(RESULT_COL, pa.array(RESULTS, pa.string()).take(codes))


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


def count_results(classified: pa.Table) -> dict[str, int]:
    """Rows of ``classified`` by result (:data:`RESULTS`)."""
    import pyarrow.compute as pc

    found = pc.value_counts(classified.column(RESULT_COL)).to_pylist()
    by = {f["values"]: f["counts"] for f in found}
    return {r: int(by.get(r, 0)) for r in RESULTS}


def load_counts(by_result: dict[str, int], rows: int) -> dict[str, int]:
    """A load's counts (its commit record's) from the results by kind and the batch's rows."""
    return {
        "inserted": by_result["insert"],
        "updated": by_result["update"],
        "deleted": by_result["delete"],
        "ignored": by_result["ignored"],
        "superseded_in_batch": rows - sum(by_result.values()),
    }


def new_rows(classified: pa.Table) -> pa.Table:
    """The changes that write a new row: inserts and updates."""
    import pyarrow.compute as pc

    return classified.filter(pc.is_in(classified.column(RESULT_COL), _values("insert", "update")))


def replaced_rows(classified: pa.Table, partition_by: Sequence[str]) -> pa.Table:
    """The stored rows that updates and deletes replace: their partition columns (by their own
    names) and identity."""
    import pyarrow.compute as pc

    chosen = classified.filter(pc.is_in(classified.column(RESULT_COL), _values("update", "delete")))
    names = [*partition_by, *IDENTITY]
    return chosen.select([OLD + c for c in names]).rename_columns(names)


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


def _values(*results: str) -> pa.Array:
    import pyarrow as pa

    return pa.array(results, pa.string())


__all__ = [
    "ACTION_COL",
    "OLD",
    "ORDER_COL",
    "POSITION_COL",
    "RESULTS",
    "RESULT_COL",
    "change_results",
    "classify",
    "count_results",
    "delete_actions",
    "find_sorted",
    "has_repeated_keys",
    "latest_per_key",
    "latest_rows",
    "load_counts",
    "matched_stored",
    "new_rows",
    "newer_than_stored",
    "partition_runs",
    "replaced_rows",
    "same_as_previous",
    "stored_columns",
]
