"""The JVM-free reader on evolved tables: event files written before columns were added or
widened read the defaults and the wider types, and ``to_arrow`` equals ``to_spark``."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa

import lakectl
from lakectl.arrow.types import event_schema
from lakectl.kernel.schema_map import conform_batch
from lakectl.table.schema import parse_schema

EVENTS = [
    ("operation", pa.int32()),
    ("originalTransaction", pa.int64()),
    ("bucket", pa.int32()),
    ("rowId", pa.int64()),
    ("currentTransaction", pa.int64()),
]


def _old_file_batch(rows: list[tuple[int, int] | None]) -> pa.RecordBatch:
    """A stripe of a file written when the row was ``id bigint, qty int``."""
    row_type = pa.struct([("id", pa.int64()), ("qty", pa.int32())])
    n = len(rows)
    columns = [pa.array([0] * n, t) for _, t in EVENTS]
    row = pa.array([None if r is None else {"id": r[0], "qty": r[1]} for r in rows], row_type)
    return pa.RecordBatch.from_arrays([*columns, row], names=[n for n, _ in EVENTS] + ["row"])


def test_an_older_file_reads_defaults_and_wider_types():
    current = parse_schema(
        "id bigint, qty bigint, discount decimal(5,2) default 1.25, since date default "
        "2024-02-29, note string, flag boolean default true"
    )
    batch = conform_batch(
        _old_file_batch([(1, 5), (2, 2**31 - 1), None]), event_schema(current), []
    )
    rows = batch.column("row").to_pylist()
    expected = {"discount": Decimal("1.25"), "since": dt.date(2024, 2, 29), "note": None}
    assert rows[0] == {"id": 1, "qty": 5, **expected, "flag": True}
    assert rows[1]["qty"] == 2**31 - 1 and batch.schema.field("row").type[1].type == pa.int64()
    assert rows[2] is None  # a delete event's null row stays null


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in rows), key=repr)


def test_to_arrow_equals_to_spark_on_an_evolved_table(tmp_path, spark):
    schema = "id bigint, qty smallint, price float, day string"
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=schema, primary_key="id", partition_by="day"
    )
    table.load(spark.createDataFrame([(i, i, i / 4, f"d{i % 2}") for i in range(8)], schema))
    table.alter(
        ["since date default 2024-02-29", "label string default 'a, b'", "amount decimal(6,1)"],
        widen=["qty int", "price double"],
    )
    table.delete("id = 3")
    later = "id bigint, qty int, price double, since date, label string, amount decimal(6,1), day string"
    table.load(
        spark.createDataFrame(
            [
                (20, 70000, 0.5, None, "z", Decimal("12.5"), "d0"),
                (2, 1, 1.0, None, None, None, "d0"),
            ],
            later,
        )
    )
    table.update_rows("label = 'changed'", "id = 4")
    spark_rows = _sorted([r.asDict() for r in table.scan().to_spark().collect()])
    arrow = table.scan().to_arrow()
    assert arrow.column_names == table.scan().to_spark().columns
    assert _sorted(arrow.to_pylist()) == spark_rows
    assert len(spark_rows) == 8  # ids 0-7 without 3, and 20
    by_id = {r["id"]: r for r in arrow.to_pylist()}
    assert by_id[5]["since"] == dt.date(2024, 2, 29) and by_id[5]["label"] == "a, b"
    assert by_id[4]["label"] == "changed" and by_id[2]["since"] is None
    assert by_id[20]["qty"] == 70000 and by_id[5]["amount"] is None
    old = table.scan(version=1).to_arrow()
    assert old.column_names == ["id", "qty", "price", "day"]
    assert old.schema.field("qty").type == pa.int16()
    assert _sorted(old.to_pylist()) == _sorted(
        [r.asDict() for r in table.scan(version=1).to_spark().collect()]
    )
