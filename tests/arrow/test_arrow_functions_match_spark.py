"""The functions and casts the statement checks admit compute in the Arrow engine what Spark
computes: upper, lower and initcap (Java's case mappings), locate, round/floor/ceil of doubles and floats
(half up, from the decimal the value prints as), integers rounded to tens, casts from and to text
(timestamps with fractions, offsets and zones), casts of dates and timestamps to numbers, and
decimal arithmetic beyond 38 digits, on edge values (NULL, negatives, .5 cases, empty strings,
unicode, numbers and dates written in odd ways). Every expression is one column of one Spark
query over one small DataFrame."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from lakectl.arrow.compile_expr import arrow_expression
from lakectl.expr.bind import Binder
from lakectl.expr.parse import parse_condition
from lakectl.spark.compile_expr import spark_column
from lakectl.table.schema import parse_schema

SCHEMA = parse_schema(
    "s string, d double, f float, n int, b bigint, ts timestamp, dec decimal(6,3), flag boolean, "
    "big decimal(38,10), day date"
)
UTC = dt.UTC
TEXTS = [
    None,
    "",
    "hello world",
    "hELLO  wORLD",
    " lead and trail ",
    "o'brien-smith",
    "élan vital",
    "ǆemal ǉubljana",
    "straße",
    "ΣΑΣ ΟΔΟΣ",
    "İstanbul",
    "a\tb c",
    "x_y z",
    "123abc",
    "ﬁne day",
    "ΟΣ ΣΑΣ",
    "١٢.٥",
    " 12 ",
    "-12.7",
    "+5",
    "1e3",
    ".5",
    "1.",
    "2147483648",
    "NaN",
    "-Infinity",
    "inf",
    "1d",
    "true",
    " YES ",
    "n",
    "2024-1-5",
    "2024-01-05 10:00",
    "2024-01-05T10",
    "2024-02-30",
    "20240105",
    "2024",
    "2024-03",
    "١٢",
    "1_000",
    "12345678.125",
    "-0",
    "0.005",
    "-",
    "127",
    " ",
    "\t2024-01-05 10:00:00\n",
    "2024-01-05 ",
    "2024-01-05T",
    "2024-01-05 10",
    "2024-1-5 1:2:3",
    "2024-01-05 10:00:00.1",
    "2024-01-05 10:00:00.12",
    "2024-01-05T10:00:00.123",
    "2024-01-05 10:00:00.1234",
    "2024-01-05 10:00:00.12345",
    "2024-01-05 10:00:00.123456",
    "2024-01-05 10:00:00.1234567",
    "2024-01-05 10:00:00.12345678",
    "2024-01-05 10:00:00.123456789",
    "2024-01-05 10:00:00.",
    "2024-01-05T10:00:00Z",
    "2024-01-05 10:00:00+02:00",
    "2024-01-05 10:00:00 +02:00",
    "2024-01-05T10:00:00.5-08:00",
    "2024-01-05T10:00:00+0200",
    "2024-01-05T10:00:00+02",
    "2024-01-05 10:00:00 +2:00",
    "2024-01-05 10:00:00 +02:00:30",
    "2024-01-05T10:00:00+18:00",
    "2024-01-05T10:00:00+19:00",
    "2024-01-05T10:00:00 UTC",
    "2024-01-05 10:00:00 GMT+2",
    "2024-01-05 10:00:00UTC+01:00",
    "2024-07-05 10:00:00 Europe/Paris",
    "2024-01-05 10:00:00 PST",
    "2024-01-05 10:00:00 Nowhere/City",
    "2024-01-05 10:00:00 +02:00 x",
    "2024-01-05\t10:00:00",
    "2024-01-05 10:00 +02:00",
    "2024-01-05 25:00:00",
    "2024-01-05 10:60:00",
    "2024-01-05 10:00:60",
    "+2024-01-05",
    "-0001-01-01 10:00:00",
    "12345-01-05",
    "1234567-01-01",
    "T10:00:00",
    "10:00",
    "1.0000000596046447753906251",
    "1.000000059604644775390625",
    "3.4028235677973366e38",
]
DOUBLES = [
    None,
    2.5,
    -2.5,
    0.5,
    1.5,
    -0.5,
    1e20,
    math.nan,
    math.inf,
    -math.inf,
    0.125,
    2.675,
    1.005,
    -0.0,
    123.456,
    1e-5,
    0.001,
    9999999.0,
    1e7,
    9.3e18,
    -9.3e18,
    4.35,
    1.45,
    0.1 + 0.2,
    -1234.5678,
    5e-324,
]
FLOATS = [
    None,
    1.5,
    -2.5,
    3.4e38,
    0.1,
    2.675,
    1e-5,
    1e7,
    math.nan,
    math.inf,
    0.125,
    16777217.0,
    1.4e-45,
]
INTS = [None, 15, -25, 2**31 - 1, -(2**31), 5, -5, 0, 44, 45, -45]
LONGS = [None, 2**63 - 1, -(2**63), -150, 250, 49, -51]
TIMES = [
    None,
    dt.datetime(2024, 1, 5, 10, tzinfo=UTC),
    dt.datetime(2024, 1, 5, 10, 0, 0, 500000, tzinfo=UTC),
    dt.datetime(1, 1, 3, tzinfo=UTC),
    dt.datetime(2024, 1, 5, 10, 0, 0, 123456, tzinfo=UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    dt.datetime(1970, 1, 1, tzinfo=UTC),
    dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC),
]
DECIMALS = [
    None,
    Decimal("1.005"),
    Decimal("-2.5"),
    Decimal("999.999"),
    Decimal("0.000"),
    Decimal("-0.5"),
]
BIG_DECIMALS = [  # products and sums beyond 38 digits
    None,
    Decimal("1234567890123456789012345678.1234567891"),
    Decimal("9999999999999999999999999999.9999999999"),
    Decimal("-9999999999999999999999999999.9999999999"),
    Decimal("12345.6789012345"),
    Decimal("-0.0000005000"),
    Decimal("0.0000000015"),
    Decimal("99999999999999999999.9999995000"),
    Decimal("1.0000005000"),
]
BOOLEANS = [None, True, False]
DAYS = [None, dt.date(2024, 1, 5), dt.date(1969, 12, 31)]
COLUMNS = {
    "s": TEXTS,
    "d": DOUBLES,
    "f": FLOATS,
    "n": INTS,
    "b": LONGS,
    "ts": TIMES,
    "dec": DECIMALS,
    "flag": BOOLEANS,
    "big": BIG_DECIMALS,
    "day": DAYS,
}
ROWS = max(len(values) for values in COLUMNS.values())

EXPRESSIONS = [
    "upper(s)",
    "lower(s)",
    "initcap(s)",
    "locate('o', s)",
    "locate('', s)",
    "locate('l', s, 4)",
    "locate('l', s, 0)",
    "locate('é', s)",
    "instr(s, 'a')",
    "round(d)",
    "round(d, 1)",
    "round(d, 2)",
    "round(d, -1)",
    "floor(d)",
    "ceil(d)",
    "round(f)",
    "round(f, 1)",
    "floor(f)",
    "ceil(f)",
    "round(n, -1)",
    "round(b, -2)",
    "round(n)",
    "CAST(s AS int)",
    "CAST(s AS bigint)",
    "CAST(s AS smallint)",
    "CAST(s AS tinyint)",
    "CAST(s AS double)",
    "CAST(s AS float)",
    "CAST(s AS decimal(10,2))",
    "CAST(s AS boolean)",
    "datediff(CAST(s AS date), CAST('1970-01-01' AS date))",
    "CAST(d AS string)",
    "CAST(f AS string)",
    "CAST(ts AS string)",
    "CAST(n AS string)",
    "d % 2.5",
    "d % 0",
    "f % 1.5",
    "dec % 0.7",
    "dec % 0",
    "greatest(d, 1.5, f)",
    "least(d, 1.5, f)",
    "greatest(d, NULL)",
    "substring(s, n)",
    "substring(s, n, 3)",
    "substring(s, 2, n)",
    "lpad(s, 12, 'xy')",
    "rpad(s, 12, 'ab')",
    "lpad(s, 3, '')",
    "CAST(n AS tinyint)",
    "CAST(b AS int)",
    "CAST(d AS int)",
    "CAST(d AS bigint)",
    "CAST(d AS smallint)",
    "CAST(f AS int)",
    "CAST(dec AS int)",
    "CAST(d AS decimal(10,2))",
    "CAST(f AS decimal(10,2))",
    "CAST(dec AS decimal(3,1))",
    "CAST(b AS decimal(5,1))",
    "CAST(d AS boolean)",
    "CAST(n AS boolean)",
    "CAST(dec AS boolean)",
    "CAST(flag AS int)",
    "CAST(flag AS double)",
    # text to timestamp (as numbers: Python shows no year before 1 or after 9999)
    "CAST(CAST(s AS timestamp) AS bigint)",
    "CAST(CAST(s AS timestamp) AS double)",
    "CAST(s AS timestamp) IS NULL",
    "CAST(ts AS bigint)",
    "CAST(ts AS int)",
    "CAST(ts AS smallint)",
    "CAST(ts AS double)",
    "CAST(ts AS float)",
    "CAST(ts AS decimal(20,3))",
    "CAST(ts AS decimal(6,1))",
    "CAST(ts AS boolean)",
    "CAST(day AS int)",
    "CAST(day AS double)",
    "CAST(day AS decimal(10,2))",
    "CAST(day AS boolean)",
    "CAST(CAST(n AS timestamp) AS bigint)",
    "CAST(CAST(b AS timestamp) AS double)",
    "CAST(CAST(d AS timestamp) AS double)",
    "CAST(CAST(f AS timestamp) AS double)",
    "CAST(CAST(dec AS timestamp) AS double)",
    "CAST(CAST(big AS timestamp) AS double)",
    "CAST(CAST(flag AS timestamp) AS double)",
    "CAST(flag AS decimal(5,2))",
    "CAST(flag AS decimal(1,1))",
    "CAST(dec AS float)",
    "CAST(big AS float)",
    "CAST(CAST(s AS decimal(38,30)) AS float)",
    "big * big",
    "big * dec",
    "big * 1.5",
    "big + big",
    "big - dec",
    "big + 0.00000000001",
    "big % dec",
]


def _column(values: list[Any]) -> list[Any]:
    """``values`` cycled to the table's length (every column sees NULL once at least)."""
    return [values[i % len(values)] for i in range(ROWS)]


def _arrow_table() -> pa.Table:
    from lakectl.arrow.types import arrow_schema

    data = {name: _column(values) for name, values in COLUMNS.items()}
    return pa.Table.from_pydict(data, schema=arrow_schema(SCHEMA))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def results(spark) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:  # type: ignore[no-untyped-def]
    """Every expression computed by Spark (one query) and by Arrow."""
    binder = Binder(SCHEMA, "test")
    nodes = {f"c{i}": binder.bind(parse_condition(e, "test")) for i, e in enumerate(EXPRESSIONS)}
    table = _arrow_table()
    ordered = spark.createDataFrame(_spark_rows(), _ddl()).orderBy("row")
    spark_rows = ordered.select(*[spark_column(n).alias(k) for k, n in nodes.items()]).collect()
    by_spark = {k: [r[k] for r in spark_rows] for k in nodes}
    projection = {k: arrow_expression(n, "test") for k, n in nodes.items()}
    arrow = ds.dataset(table).to_table(columns=projection)
    by_arrow = {k: arrow.column(k).to_pylist() for k in nodes}
    return by_spark, by_arrow


def _ddl() -> str:
    return "row int, " + ", ".join(f"{c.name} {c.type}" for c in SCHEMA.columns)


def _spark_rows() -> list[tuple[Any, ...]]:
    columns = [_column(values) for values in COLUMNS.values()]
    return [(i, *row) for i, row in enumerate(zip(*columns, strict=True))]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_arrow_computes_what_spark_computes(results, expression):
    by_spark, by_arrow = results
    key = f"c{EXPRESSIONS.index(expression)}"
    inputs = [dict(zip(("row", *COLUMNS), row, strict=True)) for row in _spark_rows()]
    differ = [
        (inputs[i], by_spark[key][i], by_arrow[key][i])
        for i in range(ROWS)
        if not _same(by_spark[key][i], by_arrow[key][i])
    ]
    assert not differ, differ[:3]
