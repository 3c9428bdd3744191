"""The functions Spark's load tasks run (:mod:`lakectl.spark.load_tasks`), called in process on
Arrow batches as Spark hands them over: no JVM."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from lakectl.kernel import change_classify as cc
from lakectl.ops.create import build_metadata
from lakectl.spark import event_write as ew
from lakectl.spark import load_tasks as lt
from lakectl.storage.fs import storage_for
from lakectl.table.layout import encode_bucket
from lakectl.table.log import LoadMode
from lakectl.table.schema import parse_schema

META = build_metadata(parse_schema("id bigint, v string, ts double, p string"), ("id",), ("p",), 0)
BATCH = StructType(
    [
        StructField("id", LongType()),
        StructField("v", StringType()),
        StructField("ts", DoubleType()),
        StructField("p", StringType()),
        StructField(cc.POSITION_COL, LongType()),
        StructField(cc.ACTION_COL, StringType()),
        StructField(cc.ORDER_COL, DoubleType()),
    ]
)
DELTA, DELETE_DELTA = "delta_0000007_0000007_0000", "delete_delta_0000007_0000007_0000"


def _task_input() -> pa.Table:
    """A cdc batch (key 1 moves from partition a to b, 2 is deleted, 3 inserted twice, 4's
    change is older than the stored row) with the stored rows of its keys, as step 1 gets it."""
    batch = pa.table(
        {
            "id": [1, 2, 3, 3, 4],
            "v": ["x", "y", "z1", "z2", "w"],
            "ts": [5.0, 5.0, 1.0, 1.0, 0.5],
            "p": ["b", "a", "a", "a", "a"],
            cc.POSITION_COL: [0, 1, 2, 3, 4],
            cc.ACTION_COL: ["update", "delete", "insert", "insert", "update"],
            cc.ORDER_COL: [5.0, 5.0, 1.0, 1.0, 0.5],
            lt.STORED_TAG: [False] * 5,
        }
    )
    stored = pa.table(
        {
            "id": [1, 2, 4],
            lt.OLD + "p": ["a", "a", "a"],
            lt.OLD + "originalTransaction": [1, 1, 1],
            lt.OLD + "bucket": pa.array([encode_bucket(0)] * 3, pa.int32()),
            lt.OLD + "rowId": [0, 1, 2],
            lt.OLD + "ts": [1.0, 1.0, 1.0],
            lt.STORED_TAG: [True] * 3,
        }
    )
    return pa.concat_tables([batch, stored], promote_options="default")


def _decided(rows: pa.Table | None = None) -> pa.Table:
    names = cc.stored_columns(["id"], ["p"], "ts")
    task = lt.DecideTask(
        META, BATCH.names, names, LoadMode.CDC, "ts", ew.events_struct(BATCH, META)
    )
    given = _task_input() if rows is None else rows
    return pa.Table.from_batches(list(task(iter(given.to_batches(max_chunksize=3)))))


def _write(events: pa.Table, staging: Path) -> tuple[list[str], dict[str, int]]:
    """The directories one write task wrote and the tallies it passed on."""
    storage, root = storage_for(str(staging))
    task = ew.WriteTask(META, storage, root, 7, DELTA, DELETE_DELTA)
    out = pa.Table.from_batches(list(task(iter(events.to_batches())))).to_pylist()
    tallies = {row["label"]: row["tally"] for row in out if row["label"] is not None}
    return sorted(row["dir"] for row in out if row["dir"] is not None), tallies


def test_a_cdc_batch_becomes_the_events_and_counts_of_each_partition(tmp_path: Path) -> None:
    dirs, tallies = _write(_decided(), tmp_path)
    assert tallies == {
        "inserted": 1,
        "updated": 1,
        "deleted": 1,
        "ignored": 1,
        "superseded_in_batch": 1,
    }
    assert dirs == [f"p=a/{DELETE_DELTA}", f"p=a/{DELTA}", f"p=b/{DELTA}"]
    new_a = orc.read_table(tmp_path / "p=a" / DELTA / "bucket_00000").to_pylist()
    assert [(e["originalTransaction"], e["rowId"], e["row"]) for e in new_a] == [
        (7, 0, {"id": 3, "v": "z2", "ts": 1.0})
    ]
    new_b = orc.read_table(tmp_path / "p=b" / DELTA / "bucket_00000").to_pylist()
    assert [e["row"] for e in new_b] == [{"id": 1, "v": "x", "ts": 5.0}]
    gone = orc.read_table(tmp_path / "p=a" / DELETE_DELTA / "bucket_00000").to_pylist()
    assert [(e["originalTransaction"], e["rowId"], e["row"]) for e in gone] == [
        (1, 0, None),
        (1, 1, None),
    ]


def test_an_update_moved_to_another_partition_is_counted_once_over_two_tasks(
    tmp_path: Path,
) -> None:
    events = _decided()
    old_partition = pc.equal(events.column("p"), "a")
    first_dirs, first = _write(events.filter(pc.fill_null(old_partition, True)), tmp_path / "one")
    second_dirs, second = _write(
        events.filter(pc.fill_null(pc.invert(old_partition), False)), tmp_path / "two"
    )
    totals = {r: first.get(r, 0) + second.get(r, 0) for r in cc.LOAD_COUNTS}
    assert totals == {
        "inserted": 1,
        "updated": 1,
        "deleted": 1,
        "ignored": 1,
        "superseded_in_batch": 1,
    }
    assert first_dirs == [f"p=a/{DELETE_DELTA}", f"p=a/{DELTA}"]
    assert second_dirs == [f"p=b/{DELTA}"]


def test_a_task_decides_by_source_position_whatever_order_the_shuffle_hands_over() -> None:
    """Key 3's two changes tie on their order value: the later one in the source wins, also
    when the task gets the rows in another order."""
    rows = _task_input()
    reversed_rows = rows.take(pa.array(range(rows.num_rows - 1, -1, -1)))
    events = _decided(reversed_rows)
    assert sorted(map(repr, events.to_pylist())) == sorted(map(repr, _decided().to_pylist()))
    new_3 = events.filter(pc.equal(events.column("id"), 3))
    assert new_3.column("v").to_pylist() == ["z2"]
