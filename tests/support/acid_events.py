"""Event tables as lakectl's writers write them (the ACID columns, then ``row``), for tests that
write event files directly."""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa

from lakectl.arrow.types import event_schema
from lakectl.table.schema import Schema

BUCKET_0 = 536870912
"""The ``bucket`` field of events in bucket 0 (Hive's encoded bucket property)."""


def event_table(
    rows: pa.StructArray, data_schema: Schema, deleted: Collection[int] = ()
) -> pa.Table:
    """The events of write id 1 in bucket 0 for ``rows``, in order (``rowId`` = position):
    inserts, and at the positions in ``deleted`` delete events (whose ``row`` must be null)."""
    n = len(rows)
    return pa.Table.from_arrays(
        [
            pa.array([2 if i in deleted else 0 for i in range(n)], pa.int32()),
            pa.array([1] * n, pa.int64()),
            pa.array([BUCKET_0] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([1] * n, pa.int64()),
            rows,
        ],
        schema=event_schema(data_schema),
    )
