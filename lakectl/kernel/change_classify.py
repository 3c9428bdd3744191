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
    import numpy as np
    import pyarrow.compute as pc

    if not batch.num_rows:
        return batch
    # Keys are never null (the batch's checks refuse them); a null order value is the latest.
    sort_keys = [(k, "ascending", "at_end") for k in key]
    if has_order:
        sort_keys.append((ORDER_COL, "descending", "at_start"))
    sort_keys.append((POSITION_COL, "descending", "at_end"))
    order = pc.sort_indices(batch, sort_keys=sort_keys)
    ordered = batch.take(order)
    first = ~same_as_previous([ordered.column(k) for k in key])
    return ordered.filter(np.asarray(first))


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
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = [stored.column(k) for k in primary_key]
    olds = [stored.column(c) for c in _old_names(partition_by, order_by)]
    old = pa.table(
        [*keys, *olds],
        names=[
            *(KEY + k for k in primary_key),
            *(OLD + c for c in _old_names(partition_by, order_by)),
        ],
    )
    joined = latest.join(
        old,
        keys=list(primary_key),
        right_keys=[KEY + k for k in primary_key],
        join_type="left outer",
    )
    joined = joined.sort_by([(POSITION_COL, "ascending")])
    exists = joined.column(OLD + "rowId").is_valid()
    if order_by:
        before = joined.column(OLD + order_by)
        newer = pc.or_kleene(before.is_null(), pc.greater(joined.column(ORDER_COL), before))
        newer = pc.fill_null(newer, False)
    else:
        newer = pa.chunked_array([pa.array([True] * joined.num_rows, pa.bool_())])
    replaces = pc.and_(exists, newer)
    update = pc.if_else(replaces, "update", pc.if_else(exists, "ignored", "insert"))
    if mode == LoadMode.CDC:
        delete = pc.if_else(replaces, "delete", "ignored")
        result = pc.if_else(pc.equal(joined.column(ACTION_COL), "delete"), delete, update)
    else:
        result = update
    return joined.append_column(RESULT_COL, result.cast(pa.string()))


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
    "classify",
    "count_results",
    "has_repeated_keys",
    "latest_per_key",
    "load_counts",
    "new_rows",
    "partition_runs",
    "replaced_rows",
    "same_as_previous",
    "stored_columns",
]
