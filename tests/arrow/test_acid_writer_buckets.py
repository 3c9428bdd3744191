"""New rows of a bucketed table written by the Arrow writer go to the bucket file Spark's writer
gives them: ``pmod(hash(key), buckets)``, a key that holds a partition column hashed with the
partition's value."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc

import lakectl
from lakectl.arrow.acid_writer import (
    PartitionChanges,
    unsupported_reason,
    write_transaction_changes,
)
from lakectl.arrow.types import arrow_schema
from lakectl.table.layout import decode_bucket
from lakectl.table.log import Operation

SCHEMA = "id bigint, code string, amount decimal(20,2), day date, region string"
KEY = "id,code,region"
BUCKETS = 8
REGIONS = ("east", "west", "north")


def _create(path: Path) -> lakectl.Table:
    return lakectl.create_table(
        str(path), schema=SCHEMA, primary_key=KEY, partition_by="region", buckets=BUCKETS
    )


def _rows(region: str | None) -> list[dict[str, Any]]:
    codes = ["", "é", "日本", "abcd", "abcde", "x" * 17, "k", "ÿ\x80"]
    return [
        {
            "id": i * 7919 - 80_000,
            "code": codes[i % len(codes)],
            "amount": Decimal(i * 131) / 4,
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "region": region,
        }
        for i in range(1, 25)
    ]


def _store(table: lakectl.Table) -> Any:
    return table.context.table(table.location)


def _write_with_arrow(table: lakectl.Table) -> None:
    store = _store(table)
    state = store.read_state()
    meta = state.metadata
    data = arrow_schema(meta.data_schema)
    changes = [
        PartitionChanges((region,), inserts=pa.Table.from_pylist(_rows(region), schema=data))
        for region in REGIONS
    ]
    with store.transaction(Operation.APPEND, read=state) as txn:
        written = write_transaction_changes(txn, meta, changes)
        txn.commit(counts={"inserted": written.inserts, "deleted": written.deletes})


def _bucket_files(table: lakectl.Table) -> dict[tuple[Any, ...], str]:
    """Each stored row's key -> its bucket file (partition directory / bucket_N); checks that
    the file name and the row's bucket field agree."""
    root = Path(_store(table).root)
    found: dict[tuple[Any, ...], str] = {}
    for path in sorted(root.glob("region=*/delta_*/bucket_*")):
        events = orc.ORCFile(str(path)).read().flatten()
        number = int(path.name.split("_")[1])
        assert {decode_bucket(b) for b in events.column("bucket").to_pylist()} == {number}
        ids, codes = events.column("row.id").to_pylist(), events.column("row.code").to_pylist()
        for key in zip(ids, codes, strict=True):
            found[(*key, path.parent.parent.name)] = path.name
    return found


def test_a_bucketed_table_is_written(tmp_path: Path) -> None:
    table = _create(tmp_path / "arrow")
    assert unsupported_reason(_store(table).read_state().metadata) is None
    _write_with_arrow(table)
    files = _bucket_files(table)
    assert len(files) == 3 * 24 and len(set(files.values())) > 1
    table.refresh()
    assert table.scan(engine="arrow").to_arrow().num_rows == 3 * 24


def test_each_key_goes_to_the_bucket_file_spark_gives_it(tmp_path: Path, spark: Any) -> None:
    by_arrow = _create(tmp_path / "arrow")
    _write_with_arrow(by_arrow)
    by_spark = _create(tmp_path / "spark")
    frame = spark.createDataFrame([row for r in REGIONS for row in _rows(r)], SCHEMA)
    lakectl.open_table(_store(by_spark).root, spark=spark).load(frame, mode="append")
    spark_files = _bucket_files(by_spark)
    assert len(spark_files) == 3 * 24 and len(set(spark_files.values())) > 1
    assert _bucket_files(by_arrow) == spark_files
