"""Spark's casts and decimal arithmetic computed value by value (no JVM): the values below are
what Spark 4 (non-ANSI, UTC) gives for the same inputs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from lakectl.errors import BadInputError
from lakectl.expr import spark_values
from lakectl.expr.bind import Binder
from lakectl.expr.parse import parse_condition
from lakectl.table.schema import parse_schema

JAN_5 = 1704412800_000000  # 2024-01-05 00:00:00 UTC in microseconds
HOUR = 3600_000000


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("2024-01-05", JAN_5),
        (" 2024-01-05 10:00:00 ", JAN_5 + 10 * HOUR),
        ("2024-01-05T10:00:00.123", JAN_5 + 10 * HOUR + 123000),
        ("2024-01-05 10:00:00.123456789", JAN_5 + 10 * HOUR + 123456),
        ("2024-01-05 10:00:00.", JAN_5 + 10 * HOUR),
        ("2024-01-05T10:00:00Z", JAN_5 + 10 * HOUR),
        ("2024-01-05 10:00:00+02:00", JAN_5 + 8 * HOUR),
        ("2024-01-05 10:00:00 +2:00", JAN_5 + 8 * HOUR),
        ("2024-01-05T10:00:00+0200", JAN_5 + 8 * HOUR),
        ("2024-01-05T10:00:00-08:00", JAN_5 + 18 * HOUR),
        ("2024-01-05 10:00:00 +02:00:30", JAN_5 + 8 * HOUR - 30_000000),
        ("2024-01-05T10:00:00+18:00", JAN_5 - 8 * HOUR),
        ("2024-01-05T10:00:00 UTC", JAN_5 + 10 * HOUR),
        ("2024-01-05 10:00:00 GMT+2", JAN_5 + 8 * HOUR),
        ("2024-01-05 10:00:00UTC+01:00", JAN_5 + 9 * HOUR),
        ("2024-01-05 10:00:00 Europe/Paris", JAN_5 + 9 * HOUR),
        ("2024-1-5 1:2:3", JAN_5 + HOUR + 2 * 60_000000 + 3_000000),
        ("2024-01-05 10", JAN_5 + 10 * HOUR),
        ("2024", JAN_5 - 4 * 24 * HOUR),
        ("+2024-01-05", JAN_5),
        ("-0001-01-01", -62198755200_000000),
        ("12345-01-01", 327403382400_000000),
    ],
)
def test_text_becomes_the_timestamp_spark_reads(text, micros):
    assert spark_values.text_to_timestamp(text) == micros


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "abc",
        "2024-02-30",
        "2024-01-05T",
        "2024-01-05\t10:00:00",
        "2024-01-05 25:00:00",
        "2024-01-05 10:60:00",
        "2024-01-05 10:00:60",
        "2024-01-05 10:00 +02:00",
        "2024-01-05T10:00:00+19:00",
        "2024-01-05 10:00:00 Nowhere/City",
        "1234567-01-01",
    ],
)
def test_text_that_is_no_timestamp_is_null(text):
    assert spark_values.text_to_timestamp(text) is None


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("5881580-07-11", 2**31 - 1),
        ("5881580-07-12", None),  # past the int range of Spark's days
        ("6000000", None),
        ("-5877641-06-23", -(2**31)),
        ("-5877641-06-22", None),
    ],
)
def test_dates_past_sparks_range_of_days_are_null(text, days):
    assert spark_values.text_to_date(text) == days


def test_timestamps_become_seconds():
    to = {t: spark_values.cast_function("timestamp", t) for t in ("bigint", "int", "double")}
    before_1970 = -500000  # 1969-12-31 23:59:59.5
    assert [to["bigint"](before_1970), to["double"](before_1970)] == [-1, -0.5]
    assert to["int"](253370000000_000000) is None
    assert spark_values.cast_function("date", "int")(19727) is None


def test_decimals_beyond_38_digits_round_half_up():
    product = spark_values.decimal_arithmetic(
        "mul", Decimal("12345.6789012345"), Decimal("1.0000005000"), (38, 6)
    )
    assert product == Decimal("12345.685074")  # 12345.685074073...
    half = spark_values.decimal_arithmetic("add", Decimal("0.0000005"), Decimal(0), (38, 6))
    assert half == Decimal("0.000001")
    big = Decimal("9" * 28 + ".9999999999")
    assert spark_values.decimal_arithmetic("mul", big, big, (38, 6)) is None


def test_floats_round_once_from_the_decimal():
    # as a double the text is exactly half way between two floats, and would round down
    assert spark_values.text_to_floating("1.0000000596046447753906251", True) == 1.0000001192092896
    assert (
        spark_values.decimal_to_float32(Decimal("3.4028235677973366e38")) == 3.4028234663852886e38
    )


def test_numbers_cannot_become_dates():
    binder = Binder(parse_schema("n int"), "t")
    with pytest.raises(BadInputError, match="from int to date"):
        binder.bind(parse_condition("CAST(n AS date) IS NULL", "t"))
