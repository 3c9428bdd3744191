"""Small lakectl tables written without a JVM, for tests of the Arrow engine's writers: rows
appended by the Arrow event writer (:func:`lakectl.arrow.acid_writer.write_changes`) in one
transaction each, as a load commits them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from lakectl.arrow.acid_writer import PartitionChanges, write_transaction_changes
from lakectl.arrow.types import arrow_schema
from lakectl.storage.fs import storage_for
from lakectl.table.log import Operation
from lakectl.table.store import TableStore


def table_store(path: Path | str) -> TableStore:
    """The store of the table at ``path``."""
    storage, root = storage_for(str(path))
    return TableStore(storage, root)


def append_rows(path: Path | str, rows: list[dict[str, Any]]) -> int:
    """Append ``rows`` (dicts by column name) as one commit; returns its write id."""
    store = table_store(path)
    state = store.read_state()
    meta = state.metadata
    data = arrow_schema(meta.data_schema)
    parts: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        parts.setdefault(tuple(row[c] for c in meta.partition_by), []).append(row)
    order = sorted(parts, key=lambda v: tuple((x is None, str(x)) for x in v))
    changes = [
        PartitionChanges(values, inserts=pa.Table.from_pylist(parts[values], schema=data))
        for values in order
    ]
    with store.transaction(Operation.APPEND, read=state) as txn:
        write_transaction_changes(txn, meta, changes)
        txn.commit(counts={"inserted": len(rows)})
    return txn.version
