"""The pure parts of the fsspec ORC path (no JVM): shaping ORC stripes into Spark's event schema,
and splitting sorted write batches into one file per (partition, bucket)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakectl.arrow.acid_writer import unsliced as _unsliced
from lakectl.kernel.schema_map import conform_batch
from lakectl.spark.fsspec_orc import _runs


def event_target(*partitions: str) -> pa.Schema:
    """The Arrow schema Spark hands the reader for the event DDL (timestamps: us, UTC)."""
    row = StructType.fromJson(
        {
            "type": "struct",
            "fields": [
                {"name": n, "type": t, "nullable": True, "metadata": {}}
                for n, t in (("id", "long"), ("name", "string"), ("ts", "timestamp"))
            ],
        }
    )
    fields = [
        ("operation", "integer"),
        ("originalTransaction", "long"),
        ("bucket", "integer"),
        ("rowId", "long"),
        ("currentTransaction", "long"),
        ("row", row.jsonValue()),
        *((p, "string") for p in partitions),
    ]
    return to_arrow_schema(
        StructType.fromJson(
            {
                "type": "struct",
                "fields": [
                    {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields
                ],
            }
        ),
        timezone="UTC",
    )


def stripe(row_names: tuple[str, str, str] = ("id", "name", "ts")) -> pa.RecordBatch:
    row = pa.StructArray.from_arrays(
        [
            pa.array([1, 2], pa.int64()),
            pa.array(["a", None], pa.string()),
            pa.array([dt.datetime(2024, 1, 2, 3, 4, 5)] * 2, pa.timestamp("ns")),
        ],
        names=list(row_names),
        mask=pa.array([False, True]),
    )
    return pa.RecordBatch.from_arrays(
        [pa.array([0, 2], pa.int32()), pa.array([5, 5], pa.int64()), pa.array([536870912] * 2,
         pa.int32()), pa.array([0, 1], pa.int64()), pa.array([5, 7], pa.int64()), row],
        names=["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"],
    )  # fmt: skip


def test_a_stripe_takes_the_target_shape_with_partition_values():
    target = event_target("create_date", "store")
    out = conform_batch(stripe(), target, ["2024-01-02", None])
    assert out.schema == target
    assert out.column("row").to_pylist() == [
        {"id": 1, "name": "a", "ts": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)},
        None,  # a delete event's row is null and stays null
    ]
    assert out.column("create_date").to_pylist() == ["2024-01-02"] * 2
    assert out.column("store").to_pylist() == [None, None]


def test_hive_positional_row_names_are_matched_by_position():
    out = conform_batch(stripe(("_col0", "_col1", "_col2")), event_target(), [])
    assert out.column("row").to_pylist()[0]["id"] == 1


def test_sorted_batch_splits_into_runs_of_equal_group_values():
    batch = pa.RecordBatch.from_pydict(
        {"p": ["a", "a", None, None, "b"], "bucket": [0, 1, 1, 1, 1], "v": [1, 2, 3, 4, 5]}
    )
    runs = [(key, part.column("v").to_pylist()) for key, part in _runs(batch, ["p", "bucket"])]
    assert runs == [(("a", 0), [1]), (("a", 1), [2]), ((None, 1), [3, 4]), (("b", 1), [5])]
    assert list(_runs(batch.slice(0, 0), ["p"])) == []
    assert [k for k, _ in _runs(batch.slice(4), ["p"])] == [("b",)]


def test_a_run_with_null_rows_is_written_with_its_own_values():
    """New rows then delete events (null ``row``) in one sorted batch: the delete run is a slice
    whose struct has nulls, which pyarrow's ORC writer would write with the new rows' values."""
    import io

    import pyarrow.orc as orc

    row = pa.StructArray.from_arrays(
        [pa.array([1, 2, 1, 3]), pa.array(["new1", "new2", "old1", "old3"])],
        names=["id", "name"],
        mask=pa.array([False, False, True, True]),
    )
    batch = pa.RecordBatch.from_arrays([pa.array([0, 0, 1, 1]), row], names=["kind", "row"])
    written = {}
    for (kind,), rows in _runs(batch, ["kind"]):
        buffer = io.BytesIO()
        writer = orc.ORCWriter(buffer)
        writer.write(pa.Table.from_batches([_unsliced(rows)]))
        writer.close()
        written[kind] = orc.ORCFile(io.BytesIO(buffer.getvalue())).read().column("row").to_pylist()
    assert written == {0: [{"id": 1, "name": "new1"}, {"id": 2, "name": "new2"}], 1: [None, None]}


def test_the_event_writer_keeps_every_time_spark_stores(tmp_path) -> None:
    """Spark's tasks on S3 without hadoop-aws write events through pyarrow, and through pyorc
    for times pyarrow cannot hold: the instants come back, in ORC ``timestamp``."""
    import pyarrow.orc as orc
    import pyorc

    from lakectl.arrow.orc_io import read_file
    from lakectl.spark.fsspec_orc import _EventWriter
    from lakectl.storage.fs import storage_for

    times = [
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, dt.UTC),
        dt.datetime(1500, 6, 1, 12, 0, 0, 500000, dt.UTC),
        dt.datetime(1969, 12, 31, 23, 59, 58, 750000, dt.UTC),
    ]
    target = event_target("part")
    row = pa.StructArray.from_arrays(
        [pa.array([1, 2, 3], pa.int64()), pa.array(["a", "b", None]), pa.array(times)],
        fields=list(target.field("row").type),
    )
    batch = pa.RecordBatch.from_arrays(
        [pa.array([0] * 3, pa.int32()), pa.array([1] * 3, pa.int64()),
         pa.array([536870912] * 3, pa.int32()), pa.array([0, 1, 2], pa.int64()),
         pa.array([1] * 3, pa.int64()), row, pa.array(["x"] * 3)],
        schema=target,
    )  # fmt: skip
    storage, staging = storage_for(str(tmp_path / "staging"))
    (path,) = _EventWriter(storage, staging, ["part"], "snappy").write(iter([batch])).paths
    with open(path, "rb") as handle:
        assert str(pyorc.Reader(handle).schema.fields["row"].fields["ts"]) == "timestamp"
    with open(path, "rb") as handle:
        read = read_file(orc.ORCFile(handle), handle)
    assert read.column("row").combine_chunks().field("ts").to_pylist() == times
