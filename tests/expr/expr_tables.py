"""A small table with every scalar column type and awkward values, for both engines."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from lakectl.table.schema import parse_schema

SCHEMA = parse_schema(
    "id int, s string, n bigint, d double, dec decimal(10,2), dt date, ts timestamp, "
    "b boolean, f float, sm smallint"
)
ROWS: list[tuple[Any, ...]] = [
    (
        1,
        "02",
        1,
        math.nan,
        Decimal("1.01"),
        dt.date(2024, 1, 5),
        dt.datetime(2024, 1, 5, 8),
        True,
        3.4e38,
        1,
    ),
    (2, " 2", 2**40, 101.0, None, dt.date(2024, 1, 6), dt.datetime(2024, 1, 5, 10), False, 1.0, 2),
    (3, "2", None, -0.0, Decimal("2.50"), None, None, None, 2.0, -32768),
    (
        4,
        "x'y",
        -5,
        math.inf,
        Decimal("-3.00"),
        dt.date(1, 1, 1),
        dt.datetime(2024, 1, 6),
        True,
        None,
        32767,
    ),
    (
        5,
        None,
        2,
        0.0,
        Decimal("1.00"),
        dt.date(2024, 1, 5),
        dt.datetime(1970, 1, 1),
        False,
        -math.inf,
        0,
    ),
    (
        6,
        "",
        0,
        -math.inf,
        Decimal("99999999.99"),
        dt.date(9999, 12, 31),
        dt.datetime(2024, 1, 5),
        None,
        math.nan,
        None,
    ),
]


def arrow_table() -> Any:
    """:data:`ROWS` as a pyarrow Table of :data:`SCHEMA`."""
    import pyarrow as pa

    from lakectl.arrow.types import arrow_schema

    schema = arrow_schema(SCHEMA)
    columns = list(zip(*ROWS, strict=True))
    arrays = []
    for field, values in zip(schema, columns, strict=True):
        if pa.types.is_timestamp(field.type):
            values = tuple(None if v is None else v.replace(tzinfo=dt.UTC) for v in values)
        arrays.append(pa.array(values, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def spark_frame(spark: Any) -> Any:
    """:data:`ROWS` as a Spark DataFrame of :data:`SCHEMA` (session time zone UTC)."""
    rows = [
        tuple(v.replace(tzinfo=dt.UTC) if isinstance(v, dt.datetime) else v for v in row)
        for row in ROWS
    ]
    return spark.createDataFrame(rows, SCHEMA.to_ddl())
