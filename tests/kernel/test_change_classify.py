"""The decision of a load's changes (lakectl.kernel.change_classify), case by case: the latest
change per key, and insert / update / delete / ignored against the stored rows."""

from __future__ import annotations

import pyarrow as pa

from lakectl.kernel import change_classify as cc
from lakectl.table.log import LoadMode

POS, OP, ORDER = cc.POSITION_COL, cc.ACTION_COL, cc.ORDER_COL


def _batch(rows: list[tuple[int, str, int | None, str]]) -> pa.Table:
    """(key, action, order value, payload) per change, in source order."""
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[3] for r in rows], pa.string()),
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            POS: pa.array(range(len(rows)), pa.int64()),
            OP: pa.array([r[1] for r in rows], pa.string()),
            ORDER: pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def _stored(rows: list[tuple[int, int | None, int]]) -> pa.Table:
    """(key, order value, rowId) per stored live row."""
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "originalTransaction": pa.array([1] * len(rows), pa.int64()),
            "bucket": pa.array([536870912] * len(rows), pa.int32()),
            "rowId": pa.array([r[2] for r in rows], pa.int64()),
            "ts": pa.array([r[1] for r in rows], pa.int64()),
        }
    )


def _decide(
    batch: pa.Table,
    stored: pa.Table,
    *,
    mode: LoadMode = LoadMode.CDC,
    order_by: str | None = "ts",
    partition_by: tuple[str, ...] = (),
    asked: list[list[int]] | None = None,
) -> cc.DecidedChanges:
    """``batch``'s changes decided against ``stored``; the keys the rule asks for are added
    to ``asked``."""
    decisions = batch.select(["id", *([ORDER] if order_by else [])])
    if mode is LoadMode.CDC:
        deletes = pa.array(cc.delete_actions(batch.column(OP)))
        decisions = decisions.append_column(cc.DELETES_COL, deletes)

    def stored_for(keys: pa.Table) -> pa.Table:
        if asked is not None:
            asked.append(keys.column("id").to_pylist())
        return stored

    return cc.decide_changes(
        decisions, stored_for, ["id"], partition_by, mode=mode, order_by=order_by
    )


def _written(batch: pa.Table, decided: cc.DecidedChanges) -> list[str]:
    return batch.column("v").filter(pa.array(decided.writes)).to_pylist()


def test_the_latest_change_per_key_is_the_greatest_order_value_a_null_one_first_then_position():
    batch = _batch(
        [
            (1, "insert", 5, "a"),
            (1, "update", 7, "b"),  # greatest order
            (1, "update", 7, "c"),  # same order, later position: wins
            (1, "update", 6, "d"),
            (2, "update", 9, "e"),
            (2, "update", None, "f"),  # a null order value counts as the latest
            (3, "insert", 1, "g"),
        ]
    )
    latest = batch.take(cc.latest_rows(batch, ["id"], has_order=True))
    assert latest.column("v").to_pylist() == ["c", "f", "g"]
    by_position = batch.take(cc.latest_rows(batch, ["id"], has_order=False))
    assert by_position.column("v").to_pylist() == ["d", "f", "g"]


def test_cdc_changes_are_decided_against_the_stored_rows_by_order_value():
    batch = _batch(
        [
            (1, "update", 10, "newer"),  # stored ts 5: update
            (2, "update", 3, "late"),  # stored ts 5: ignored
            (3, "update", 5, "tie"),  # stored ts 5: not newer, ignored
            (4, "delete", 9, ""),  # stored: deleted
            (5, "delete", 9, ""),  # never stored: ignored
            (6, "insert", 1, "new"),  # insert
            (7, "update", None, "null order"),  # stored ts 5: ignored
            (8, "update", 1, "stored null"),  # stored ts null: update
            (6, "update", 0, "older twin"),  # superseded in the batch
        ]
    )
    stored = _stored([(1, 5, 10), (2, 5, 20), (3, 5, 30), (4, 5, 40), (7, 5, 70), (8, None, 80)])
    asked: list[list[int]] = []
    decided = _decide(batch, stored, asked=asked)
    assert asked == [[1, 2, 3, 4, 5, 6, 7, 8]]  # the latest changes' keys, once each, in order
    assert _written(batch, decided) == ["newer", "new", "stored null"]
    assert decided.counts == {
        "inserted": 1,
        "updated": 2,
        "deleted": 1,
        "ignored": 4,
        "superseded_in_batch": 1,
    }
    assert decided.replaced.column_names == ["originalTransaction", "bucket", "rowId"]
    assert sorted(decided.replaced.column("rowId").to_pylist()) == [10, 40, 80]


def test_upsert_without_an_order_replaces_every_stored_key_and_deletes_are_not_special():
    batch = _batch([(1, "delete", None, "x"), (2, "insert", None, "y")])
    decided = _decide(batch, _stored([(1, 9, 1)]), mode=LoadMode.UPSERT, order_by=None)
    assert _written(batch, decided) == ["x", "y"]
    assert decided.replaced.column("rowId").to_pylist() == [1]
    assert decided.counts["updated"] == 1 and decided.counts["inserted"] == 1


def test_a_key_moved_to_another_partition_deletes_in_the_old_one_and_inserts_in_the_new():
    batch = _batch([(1, "update", 2, "moved")]).append_column("day", pa.array(["d2"]))
    stored = _stored([(1, 1, 5)]).append_column("day", pa.array(["d1"]))
    decided = _decide(batch, stored, partition_by=("day",))
    assert _written(batch, decided) == ["moved"]
    assert decided.replaced.to_pylist() == [
        {"day": "d1", "originalTransaction": 1, "bucket": 536870912, "rowId": 5}
    ]


def test_partition_runs_split_by_values_keeping_row_order_and_null_as_its_own_partition():
    table = pa.table({"p": ["b", None, "a", "b", None], "x": [1, 2, 3, 4, 5]})
    runs = [
        (t.column("p")[0].as_py(), t.column("x").to_pylist())
        for t in cc.partition_runs(table, ["p"])
    ]
    assert runs == [("a", [3]), ("b", [1, 4]), (None, [2, 5])]


def test_changes_are_matched_alike_by_the_binary_search_and_by_the_join():
    # Integer keys in key order take the binary search; the same keys as text take the join.
    batch = _batch([(k, "update", 9, f"v{k}") for k in (7, 1, 4, 9, 2)])
    stored = _stored([(4, 5, 40), (9, 5, 90), (4, 5, 41), (3, 5, 30)])  # 4 stored twice
    latest = batch.take(cc.latest_rows(batch, ["id"], has_order=True))
    by_search = cc.matched_stored(latest, stored, ["id"])

    def as_text(table: pa.Table) -> pa.Table:
        return table.set_column(0, "id", table.column("id").cast(pa.string()))

    by_join = cc.matched_stored(as_text(latest), as_text(stored), ["id"])
    pairs = sorted(zip(*by_search, strict=True))
    assert pairs == sorted(zip(*by_join, strict=True))
    keys = latest.column("id").to_pylist()
    rows = stored.column("rowId").to_pylist()
    assert [(keys[c], rows[s] if s >= 0 else None) for c, s in pairs] == [
        (1, None),
        (2, None),
        (4, 40),
        (4, 41),
        (7, None),
        (9, 90),
    ]
    decided = _decide(batch, stored)
    assert _written(batch, decided) == ["v7", "v1", "v4", "v9", "v2"]
    assert sorted(decided.replaced.column("rowId").to_pylist()) == [40, 41, 90]
