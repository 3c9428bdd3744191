"""The Arrow engine's ACID writer: new rows and delete events written with pyarrow read back as
the table's rows, through the Arrow reader and (one test) through Spark's data source."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

import lakectl
from lakectl.arrow.acid_writer import (
    PartitionChanges,
    partition_dir,
    partition_text,
    unsupported_reason,
    write_transaction_changes,
)
from lakectl.arrow.types import arrow_schema
from lakectl.table.log import Operation
from lakectl.table.orc_files import read_footer

SCHEMA = "id bigint, name string, amount decimal(10,2), day date, region string"


def _table(tmp_path: Path) -> lakectl.Table:
    return lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="region"
    )


def _rows(meta, ids: list[int], region: str | None) -> pa.Table:
    data = meta.data_schema
    return pa.table(
        {
            "id": ids,
            "name": [f"n{i}" if i % 3 else None for i in ids],
            "amount": [Decimal(i) / 4 for i in ids],
            "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids],
        },
        schema=arrow_schema(data),
    )


def _store(table: lakectl.Table):
    return table.context.table(table.location)


def _commit(table: lakectl.Table, operation: Operation, changes: list[PartitionChanges]):
    store = _store(table)
    state = store.read_state()
    meta = state.metadata
    with store.transaction(operation, read=state) as txn:
        written = write_transaction_changes(txn, meta, changes)
        txn.commit(counts={"inserted": written.inserts, "deleted": written.deletes})
    return written


def _identities(table: lakectl.Table, rel_dir: str) -> pa.Table:
    path = Path(_store(table).root) / rel_dir / "bucket_00000"
    return (
        orc.ORCFile(str(path))
        .read(columns=["originalTransaction", "bucket", "rowId", "row"])
        .flatten()
    )


def test_inserts_and_deletes_read_back(tmp_path):
    table = _table(tmp_path)
    meta = _store(table).read_state().metadata
    written = _commit(
        table,
        Operation.APPEND,
        [
            PartitionChanges(("east",), inserts=_rows(meta, [1, 2, 3, 4], "east")),
            PartitionChanges((None,), inserts=_rows(meta, [5, 6], None)),
        ],
    )
    assert written.inserts == 6 and written.deletes == 0
    assert written.directories == [
        "region=__HIVE_DEFAULT_PARTITION__/delta_0000001_0000001_0000",
        "region=east/delta_0000001_0000001_0000",
    ]
    footer = read_footer(
        _store(table).storage, f"{_store(table).root}/{written.directories[1]}/bucket_00000"
    )
    assert footer.user_metadata["hive.acid.version"] == b"2"
    assert (
        Path(_store(table).root) / written.directories[1] / "_orc_acid_version"
    ).read_text() == "2"
    # Delete ids 2 and 4 (east) by their identities, and 5 (the NULL partition).
    east = _identities(table, written.directories[1])
    null = _identities(table, written.directories[0])
    pick = lambda t, ids: t.filter(pa.compute.is_in(t.column("row.id"), pa.array(ids))).select(  # noqa: E731
        ["originalTransaction", "bucket", "rowId"]
    )
    second = _commit(
        table,
        Operation.DELETE,
        [
            PartitionChanges(("east",), deletes=pick(east, [4, 2])),
            PartitionChanges((None,), deletes=pick(null, [5])),
        ],
    )
    assert second.deletes == 3
    table.refresh()
    got = table.scan(engine="arrow").to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [1, 3, 6]
    assert got.column("region").to_pylist() == ["east", "east", None]
    assert got.column("amount").to_pylist() == [Decimal("0.25"), Decimal("0.75"), Decimal("1.50")]
    assert table.scan(version=1, engine="arrow").to_arrow().num_rows == 6


def test_partition_values_are_named_as_spark_names_them(tmp_path):
    meta = _store(_table(tmp_path)).read_state().metadata
    assert partition_dir(meta, ("a/b%c",)) == "region=a%2Fb%25c"
    assert partition_dir(meta, (None,)) == "region=__HIVE_DEFAULT_PARTITION__"
    assert [partition_text(v) for v in (True, 1e20, 0.1, -0.0, Decimal("1.50"), 7)] == [
        "true",
        "1.0E20",
        "0.1",
        "-0.0",
        "1.50",
        "7",
    ]
    utc = dt.UTC
    times = (dt.datetime(2024, 1, 2, 0, 0, 0, 500, utc), dt.datetime(2024, 1, 1, 13, 30))
    assert [partition_text(v) for v in times] == ["2024-01-02 00:00:00.0005", "2024-01-01 13:30:00"]


def test_a_table_partitioned_by_a_timestamp_is_changed_in_place(tmp_path):
    """Its partition directories carry the UTC time without an offset, as Spark names them;
    the partition reader reads that text back, and a delete event goes beside the rows."""
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, at timestamp", partition_by="at"
    )
    at = dt.datetime(2024, 1, 2, 0, 0, 0, 500, dt.UTC)
    source = tmp_path / "rows.parquet"
    pq.write_table(
        pa.table({"id": [1, 2], "at": pa.array([at, at], pa.timestamp("us", tz="UTC"))}), source
    )
    table.load(str(source), mode="append", engine="arrow")
    assert table.delete("id = 2", engine="arrow").deleted == 1
    partition = tmp_path / "t" / "at=2024-01-02 00%3A00%3A00.0005"
    assert sorted(p.name for p in partition.iterdir()) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
    ]
    assert table.scan(engine="arrow").to_arrow().to_pylist() == [{"id": 1, "at": at}]


def test_timestamp_ntz_columns_are_stored_as_sparks_orc_writer_stores_them(tmp_path):
    """Spark stores a ``timestamp_ntz`` column as an ORC bigint of microseconds, typed by the
    column's ``spark.sql.catalyst.type`` attribute; the writer does the same, and the rows
    (times at the ends of the range too) read back."""
    import pyorc

    stamped = lakectl.create_table(str(tmp_path / "s"), schema="id bigint, at timestamp_ntz")
    meta = _store(stamped).read_state().metadata
    assert unsupported_reason(meta) is None
    times = [dt.datetime(1, 1, 1), dt.datetime(1500, 6, 1, 12), dt.datetime(9999, 12, 31, 23, 59)]
    rows = pa.table({"id": [1, 2, 3], "at": times}, schema=arrow_schema(meta.data_schema))
    written = _commit(stamped, Operation.UPSERT, [PartitionChanges((), rows)])
    (path,) = (tmp_path / "s" / written.directories[0]).glob("bucket_*")
    with path.open("rb") as f:
        row = pyorc.Reader(f).schema.fields["row"]
    at = row.fields["at"]
    assert (at.kind, at.attributes) == (
        pyorc.TypeKind.LONG,
        {"spark.sql.catalyst.type": "timestamp_ntz"},
    )
    read = stamped.refresh().scan(engine="arrow").to_arrow().sort_by("id")
    assert read.column("at").to_pylist() == times


def test_spark_reads_what_the_arrow_writer_wrote(tmp_path, spark):
    table = _table(tmp_path)
    meta = _store(table).read_state().metadata
    written = _commit(
        table,
        Operation.APPEND,
        [PartitionChanges(("east",), inserts=_rows(meta, list(range(1, 41)), "east"))],
    )
    east = _identities(table, written.directories[0])
    deleted = east.filter(pa.compute.less(east.column("row.id"), 11)).select(
        ["originalTransaction", "bucket", "rowId"]
    )
    _commit(table, Operation.DELETE, [PartitionChanges(("east",), deletes=deleted)])
    spark_table = lakectl.open_table(_store(table).root, spark=spark)
    rows = spark_table.scan().to_spark().orderBy("id").collect()
    assert [r["id"] for r in rows] == list(range(11, 41))
    assert rows[0]["amount"] == Decimal("2.75") and rows[0]["day"] == dt.date(2024, 1, 12)
