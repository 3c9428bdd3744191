"""The change events Spark's writers (delete, update, restore, materialize) hand to the Arrow
engine's ORC event writer in tasks (:mod:`lakectl.spark.event_write`), and the tables that
writer refuses, which Spark's own ORC writer still writes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import functions as F

import lakectl
from lakectl.ops.create import build_metadata
from lakectl.spark import event_write as ew
from lakectl.table.schema import parse_schema

META = build_metadata(parse_schema("id bigint, v string, p string"), ("id",), ("p",), 0)


def test_change_events_give_new_rows_and_delete_events_of_the_stored_rows(spark) -> None:
    """An update that moves a row gives its new values in the new partition and a delete event
    in the old one; a delete gives only the delete event; an insert only the new row."""
    frame = spark.createDataFrame(
        [
            (1, "new", "b", "a", 4, 536870912, 7, "update"),
            (2, "gone", "a", "a", 4, 536936448, 8, "delete"),
            (3, "added", "c", None, None, None, None, "insert"),
        ],
        "id bigint, v string, p string, old_p string, ot bigint, b int, r bigint, change string",
    )
    old = {"p": "old_p", "originalTransaction": "ot", "bucket": "b", "rowId": "r"}
    events = ew.change_events(
        frame,
        META,
        insert=F.col("change") != "delete",
        delete=F.col("change") != "insert",
        old=lambda c: F.col(old[c]),
    )
    assert events.schema == ew.events_struct(frame.schema, META)
    ids = [ew.ID_COLS[c] for c in ("originalTransaction", "bucket", "rowId")]
    rows = sorted(
        tuple(r) for r in events.select(ew.KIND_COL, "id", "v", "p", *ids, ew.LABEL_COL).collect()
    )
    assert rows == [
        (ew.KIND_INSERT, 1, "new", "b", None, None, None, None),
        (ew.KIND_INSERT, 3, "added", "c", None, None, None, None),
        (ew.KIND_DELETE, None, None, "a", 4, 536870912, 7, None),
        (ew.KIND_DELETE, None, None, "a", 4, 536936448, 8, None),
    ]


def test_a_timestamp_ntz_table_changed_by_spark_reads_back(spark, tmp_path: Path) -> None:
    """Spark's update of a table with a ``timestamp_ntz`` column (new rows and delete events,
    written by the shared event writer as Spark stores such columns) reads back as written."""
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, at timestamp_ntz, p string", partition_by="p"
    )
    times = [dt.datetime(2024, 1, d, 12, 30) for d in (1, 2, 3)]
    rows = [(i, times[i], "x" if i else "y") for i in range(3)]
    table.load(spark.createDataFrame(rows, "id bigint, at timestamp_ntz, p string"))
    assert table.update_rows("id = id + 10", "id > 0", engine="spark").updated == 2
    read = sorted(tuple(r) for r in table.scan().to_spark().select("id", "at", "p").collect())
    assert read == [(0, times[0], "y"), (11, times[1], "x"), (12, times[2], "x")]


def test_delete_events_of_a_timestamp_partition_go_beside_its_rows(spark, tmp_path: Path) -> None:
    """Spark's load names the partition directory; the event writer in Spark's tasks names
    the delete events' directory the same way, so the delete takes effect."""
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, at timestamp", partition_by="at"
    )
    at = dt.datetime(2024, 1, 2, 0, 0, 0, 500)
    table.load(spark.createDataFrame([(1, at), (2, at)], "id bigint, at timestamp"))
    assert table.delete("id = 2", engine="spark").deleted == 1
    partition = tmp_path / "t" / "at=2024-01-02 00%3A00%3A00.0005"
    assert sorted(p.name for p in partition.iterdir()) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
    ]
    assert [tuple(r) for r in table.scan().to_spark().collect()] == [(1, at)]


def test_a_large_write_without_partitions_or_buckets_is_spread_over_the_tasks(
    spark, tmp_path: Path
) -> None:
    """With neither partitions nor buckets, new rows go to several tasks, each writing its own
    bucket file (identities unique, each file's rows carrying its bucket); the delete events
    of one stored bucket stay together in that bucket's file."""
    import pyarrow.orc as orc

    from lakectl.storage.fs import storage_for
    from lakectl.table.layout import decode_bucket, encode_bucket

    meta = build_metadata(parse_schema("id bigint, v string"), ("id",), (), 0)
    rows = [(i, f"v{i}", "insert", None, None, None) for i in range(60)]
    rows += [(None, None, "delete", 1, encode_bucket(b), r) for b in (0, 5) for r in range(4)]
    frame = spark.createDataFrame(
        rows, "id bigint, v string, change string, ot bigint, b int, r bigint"
    )
    old = {"originalTransaction": "ot", "bucket": "b", "rowId": "r"}
    events = ew.change_events(
        frame,
        meta,
        insert=F.col("change") == "insert",
        delete=F.col("change") == "delete",
        old=lambda c: F.col(old[c]),
    )
    storage, root = storage_for(str(tmp_path))
    delta, gone = "delta_0000003_0000003_0000", "delete_delta_0000003_0000003_0000"
    written = ew.write_events(
        events, meta, storage, root, 3, tasks=3, delta_dir=delta, delete_dir=gone
    )
    assert (written.inserts, written.deletes) == (60, 8)
    new_files = sorted((tmp_path / delta).glob("bucket_*"))
    assert len(new_files) > 1
    ids: list[tuple[int, int]] = []
    values: list[int] = []
    for path in new_files:
        events_read = orc.read_table(path).to_pylist()
        number = int(path.name.split("_")[1])
        assert {decode_bucket(e["bucket"]) for e in events_read} == {number}
        ids += [(number, e["rowId"]) for e in events_read]
        values += [e["row"]["id"] for e in events_read]
    assert sorted(values) == list(range(60))
    assert len(set(ids)) == 60
    deletes = {p.name: orc.read_table(p).to_pylist() for p in (tmp_path / gone).glob("bucket_*")}
    assert sorted(deletes) == ["bucket_00000", "bucket_00005"]
    assert all(len(found) == 4 for found in deletes.values())
