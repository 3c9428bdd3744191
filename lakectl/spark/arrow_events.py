"""ACID event checks on Arrow data, shared by the pyarrow paths that run inside Spark tasks
(:mod:`lakectl.spark.bucket_merge`, :mod:`lakectl.spark.key_lookup`).

They apply the rules of :mod:`lakectl.spark.acid_read`: every event column must be set, and
only events of valid write ids count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lakectl.storage.fs import Storage

if TYPE_CHECKING:
    import pyarrow as pa

EVENT_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction")


def all_event_columns_set(events: pa.Table | pa.RecordBatch) -> pa.Array:
    """Rows whose event columns are all set (acid_read's guard filter)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pa.array(np.ones(events.num_rows, dtype=bool))
    for name in EVENT_COLUMNS:
        column = events.column(name)
        if column.null_count:
            keep = pc.and_(keep, column.is_valid())
    return keep


def of_valid_write_ids(
    events: pa.Table | pa.RecordBatch, high_watermark: int, exceptions: Iterable[int]
) -> pa.Array:
    """Rows whose ``currentTransaction`` is a valid write id: at most the high watermark and
    not one of the ``exceptions`` (open or aborted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    txn = events.column("currentTransaction")
    ok = pc.less_equal(txn, high_watermark)
    excluded = sorted(exceptions)
    if excluded:
        ok = pc.and_(ok, pc.invert(pc.is_in(txn, pa.array(excluded, pa.int64()))))
    return ok


@contextmanager
def orc_source(storage: Storage, path: str) -> Iterator[Any]:
    """What ``pyarrow.orc.ORCFile`` reads ``path`` from: the open local file, or the object's
    bytes fetched with one GET (random reads on an object store cost a request each)."""
    import pyarrow as pa

    if storage.scheme == "file":
        with storage.fs.open(path, "rb") as handle:
            yield handle
    else:
        yield pa.BufferReader(storage.fs.cat_file(path))
