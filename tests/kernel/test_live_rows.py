"""The live-row rule and the schema mapping of lakectl.kernel, on hand-made events: every clause
of the rule decides at least one row here, so dropping one fails a test."""

from __future__ import annotations

import pyarrow as pa

from lakectl.kernel.live_rows import DeleteSet, delete_events, insert_events, live_rows
from lakectl.kernel.schema_map import DEFAULT_KEY, TYPE_KEY, conform_batch, row_source
from lakectl.table.layout import OP_DELETE, OP_INSERT
from lakectl.table.validity import ValidWriteIds

VALID = ValidWriteIds(5, frozenset({3}))  # 4 and 5 valid, 3 aborted, 6 not yet


def _events(rows: list[tuple]) -> dict[str, pa.Array]:
    """(operation, originalTransaction, bucket, rowId, currentTransaction) rows as columns."""
    names = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction")
    types = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())
    return {
        n: pa.array([r[i] for r in rows], t)
        for i, (n, t) in enumerate(zip(names, types, strict=True))
    }


DELETES = _events(
    [
        (OP_DELETE, 1, 536870912, 0, 4),  # counts
        (OP_DELETE, 1, 536870912, 2, 3),  # aborted write id: does not count
        (OP_DELETE, 1, 536870912, 3, 6),  # above the high watermark: does not count
        (OP_DELETE, 2, 536870912, 1, 5),  # has a row (below): not a delete event
        (OP_INSERT, 2, 536870912, 0, 5),  # an insert: names nothing
        (OP_DELETE, None, 536870912, 4, 5),  # a column unset: does not count
        (OP_DELETE, 7, 536936448, 9, 5),  # counts (another bucket)
    ]
)
DELETE_HAS_ROW = pa.array([False, False, False, True, True, False, False])


def test_delete_events_are_set_valid_deletes_without_a_row():
    mask = delete_events(DELETES, DELETE_HAS_ROW, VALID)
    assert mask.to_pylist() == [True, False, False, False, False, False, True]


def test_the_delete_set_holds_exactly_the_identities_named():
    deleted = DeleteSet.of_events([(DELETES, DELETE_HAS_ROW)], VALID)
    assert len(deleted) == 2
    txn = pa.array([1, 1, 1, 1, 7, 7, 2], pa.int64())
    bucket = pa.array([536870912] * 4 + [536936448, 536870912, 536870912], pa.int32())
    row = pa.array([0, 1, 2, 3, 9, 9, 1], pa.int64())
    assert DeleteSet.of_events([(DELETES, DELETE_HAS_ROW)], VALID).deleted(
        txn, bucket, row
    ).tolist() == [True, False, False, False, True, False, False]
    assert DeleteSet().deleted(txn, bucket, row) is None


def test_live_rows_apply_every_clause():
    inserts = _events(
        [
            (OP_INSERT, 1, 536870912, 0, 1),  # deleted
            (OP_INSERT, 1, 536870912, 1, 1),  # live
            (OP_INSERT, 4, 536870912, 0, 4),  # live
            (OP_INSERT, 3, 536870912, 0, 3),  # aborted write id (a delta's)
            (OP_DELETE, 5, 536870912, 0, 5),  # a delete event
            (OP_INSERT, 5, 536870912, 1, 5),  # no row
            (OP_INSERT, 5, 536870912, None, 5),  # an event column unset
            (OP_INSERT, 6, 536870912, 0, 6),  # above the high watermark
        ]
    )
    present = pa.array([True, True, True, True, False, False, True, True])
    deleted = DeleteSet.of_events([(DELETES, DELETE_HAS_ROW)], VALID)
    delta = live_rows(inserts, present, VALID, deleted)
    assert delta is not None
    assert delta.to_pylist() == [False, True, True, False, False, False, False, False]
    base = live_rows(inserts, present, None, deleted)  # a base is taken whole
    assert base is not None
    assert base.to_pylist() == [False, True, True, True, False, False, False, True]
    everything = insert_events(inserts, present, None)
    assert everything.to_pylist() == [True, True, True, True, False, False, False, True]
    live = _events([(OP_INSERT, 1, 536870912, 1, 1)])
    assert live_rows(live, pa.array([True]), VALID, deleted) is None  # all live


def test_older_files_map_by_position_widen_and_fill_defaults():
    """A file written as (id int, name string) read as today's (id bigint, label string, added
    int default 7): renamed by position, widened, the added column at its default."""
    added = pa.field("added", pa.int32()).with_metadata({DEFAULT_KEY: b"7", TYPE_KEY: b"int"})
    today = pa.struct([pa.field("id", pa.int64()), pa.field("label", pa.string()), added])
    row = pa.StructArray.from_arrays(
        [pa.array([1, None], pa.int32()), pa.array(["a", None])],
        names=["_col0", "_col1"],
        mask=pa.array([False, True]),
    )
    events = _events([(OP_INSERT, 1, 536870912, 0, 1), (OP_DELETE, 1, 536870912, 0, 2)])
    batch = pa.RecordBatch.from_arrays([*events.values(), row], names=[*events, "row"])
    target = pa.schema([*(pa.field(n, a.type) for n, a in events.items()), ("row", today)])
    got = conform_batch(batch, pa.schema([*target, ("part", pa.string())]), ["x"])
    assert got.column("row").to_pylist() == [{"id": 1, "label": "a", "added": 7}, None]
    assert got.column("part").to_pylist() == ["x", "x"]
    assert (row_source(0, 2), row_source(1, 2), row_source(2, 2)) == (0, 1, None)


def test_the_delete_set_finds_ids_in_ascending_and_unordered_rows():
    deleted = DeleteSet([(pa.array([4] * 3), pa.array([0] * 3, pa.int32()), pa.array([2, 5, 9]))])
    txn, bucket = pa.array([4] * 8), pa.array([0] * 8, pa.int32())
    ascending = pa.array([0, 1, 2, 3, 5, 6, 7, 8])  # more rows than ids, 9 past the last
    assert deleted.deleted(txn, bucket, ascending).tolist() == [
        False, False, True, False, True, False, False, False,
    ]  # fmt: skip
    unordered = pa.array([9, 1, 2, 3, 4, 6, 7, 5])
    assert deleted.deleted(txn, bucket, unordered).tolist() == [
        True, False, True, False, False, False, False, True,
    ]  # fmt: skip
    assert deleted.deleted(txn, bucket, pa.array([0, 1, 3, 4, 6, 7, 8, 10])) is None
