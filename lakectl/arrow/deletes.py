"""The row identities a partition's delete events name, and the test of insert events against
them, batch by batch (no join: the insert events stream past a small sorted index).

An identity is (originalTransaction, bucket, rowId). The index keeps, per (originalTransaction,
bucket), the sorted rowIds deleted; an insert batch is tested with a binary search per row.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


class DeletedRows:
    """Sorted rowIds deleted, by (originalTransaction, bucket)."""

    def __init__(self, identities: Iterable[tuple[pa.Array, pa.Array, pa.Array]]) -> None:
        """``identities``: (originalTransaction, bucket, rowId) columns of delete events (all
        set), in any number of parts."""
        import numpy as np

        parts = [[np.asarray(c.to_numpy(zero_copy_only=False)) for c in p] for p in identities]
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

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def deleted(self, txn: pa.Array, bucket: pa.Array, row: pa.Array) -> np.ndarray | None:
        """Which events of the identity columns ``txn``, ``bucket``, ``row`` (all set) are
        deleted, as a boolean mask; None when none is."""
        import numpy as np

        if not self.rows or not len(row):
            return None
        txns = txn.to_numpy(zero_copy_only=False)
        buckets = bucket.to_numpy(zero_copy_only=False)
        rows = row.to_numpy(zero_copy_only=False)
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


def _members(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray | None:
    """Which ``values`` are in ``sorted_ids`` (a boolean mask; None when none is)."""
    import numpy as np

    at = np.searchsorted(sorted_ids, values)
    at[at == len(sorted_ids)] = 0
    hits = sorted_ids[at] == values
    return hits if hits.any() else None


__all__ = ["DeletedRows"]
