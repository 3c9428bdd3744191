"""A small table with a history of appends, upserts and deletes written by the Arrow engine's
ACID writer (:mod:`lakectl.arrow.acid_writer`), without Spark: for tests of the fast tier that
need deltas and delete deltas to work on.

Every write is one committed transaction; the helper keeps each live row's identity
(originalTransaction, bucket, rowId) to write the delete events that replace or remove it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import lakectl
from lakectl.arrow.acid_writer import PartitionChanges, write_changes
from lakectl.arrow.types import arrow_schema
from lakectl.table.layout import delta_dir_name
from lakectl.table.log import Operation

SCHEMA = "id bigint, name string, qty int, day string"
BUCKET_0 = 1 << 29  # bucket 0 in Hive's bucket codec (V1)


class History:
    """The table at ``root`` and what it holds: ``rows[id] = (name, qty, day)``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.table = lakectl.create_table(
            str(root), schema=SCHEMA, primary_key="id", partition_by="day"
        )
        self.rows: dict[int, tuple[str, int, str]] = {}
        self.identity: dict[int, tuple[int, int, int]] = {}
        self.versions: dict[int, list[tuple[Any, ...]]] = {}

    def write(self, upserts: dict[int, tuple[str, int, str]], deletes: list[int]) -> int:
        """One transaction: rows replaced or added, rows deleted; returns its version."""
        store = self.table.context.table(self.table.location)
        state = store.read_state()
        meta = state.metadata
        with store.transaction(Operation.CDC, read=state) as txn:
            version = txn.version
            by_day: dict[str, tuple[list[int], list[int]]] = {}
            for key in sorted(upserts):
                by_day.setdefault(upserts[key][2], ([], []))[0].append(key)
            for key in sorted({*deletes, *(k for k in upserts if k in self.rows)}):
                by_day.setdefault(self.rows[key][2], ([], []))[1].append(key)
            changes = []
            for day, (new, gone) in sorted(by_day.items()):
                values = {
                    "id": new,
                    "name": [upserts[k][0] for k in new],
                    "qty": [upserts[k][1] for k in new],
                }
                # Columns added since (``alter``) are left NULL.
                names = meta.data_schema.names
                inserts = pa.table(
                    {c: values.get(c, [None] * len(new)) for c in names},
                    schema=arrow_schema(meta.data_schema),
                )
                ids = [self.identity[k] for k in gone]
                removed = pa.table(
                    {
                        "originalTransaction": pa.array([i[0] for i in ids], pa.int64()),
                        "bucket": pa.array([i[1] for i in ids], pa.int32()),
                        "rowId": pa.array([i[2] for i in ids], pa.int64()),
                    }
                )
                changes.append(PartitionChanges((day,), inserts or None, removed or None))
                for row_id, key in enumerate(new):
                    self.identity[key] = (version, BUCKET_0, row_id)
            written = write_changes(
                store.storage,
                store.root,
                meta,
                version,
                changes,
                delta_dir=delta_dir_name(version),
                delete_dir=delta_dir_name(version, delete=True),
            )
            txn.added += written.directories
            txn.commit(counts={"inserted": written.inserts, "deleted": written.deletes})
        for key in deletes:
            self.rows.pop(key)
        self.rows.update(upserts)
        self.versions[version] = self.expected()
        return version

    def expected(self) -> list[tuple[Any, ...]]:
        """The rows now, as (id, name, qty, day), sorted."""
        return sorted((k, *v) for k, v in self.rows.items())


def build_history(root: Path) -> History:
    """Four transactions over three partitions: an append, an upsert, a delete, an append."""
    history = History(root)
    history.write({i: (f"n{i}", i % 5, f"d{i % 3}") for i in range(30)}, [])
    history.write({i: (f"m{i}", 7, f"d{i % 3}") for i in range(20, 36)}, [])
    history.write({}, [k for k, v in history.rows.items() if v[1] == 0])
    history.write({i: (f"e{i}", 2, f"d{i % 3}") for i in range(40, 46)}, [1, 2])
    return history
