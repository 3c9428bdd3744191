"""Times of ``-- time=`` directives and ``--as-of``: the Hive SCD rules (pure, no Spark)."""

from __future__ import annotations

import pytest

from lakectl.errors import BadInputError, UsageError
from lakectl.times import ParsedTime, format_millis, parse_time

SEPT_1_2014 = 1_409_529_600_000


@pytest.mark.parametrize(
    ("value", "millis"),
    [
        ("0", 0),
        ("-1", -1),
        ("+5", 5),
        ("1409529600000", SEPT_1_2014),
        ("  1409529600000  ", SEPT_1_2014),
        ("2014-09-01", SEPT_1_2014),
        ("2014-09-01T00:00", SEPT_1_2014),
        ("2014-09-01T00:00:00", SEPT_1_2014),
        ("2014-09-01T00:00:00.000", SEPT_1_2014),
        ("2014-09-01T00:00:00Z", SEPT_1_2014),
        ("2014-09-01T02:00:00+02:00", SEPT_1_2014),
        ("2014-08-31T19:00-05:00", SEPT_1_2014),
        ("2014-09-01T00:00:00.5", SEPT_1_2014 + 500),
        ("2014-09-01T00:00:00.123", SEPT_1_2014 + 123),
        ("2014-09-01T00:00:00.123999", SEPT_1_2014 + 123),  # truncated to millis
        ("1970-01-01", 0),
        ("1969-12-31T23:59:59.999", -1),
        ("1900-01-01", -2_208_988_800_000),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        # as people type them: a space for the T, short offsets, the word UTC
        ("2014-09-01 00:00", SEPT_1_2014),
        ("2014-09-01  00:00:00", SEPT_1_2014),
        ("2014-09-01 02:00 +02:00", SEPT_1_2014),
        ("2014-09-01T02:00+0200", SEPT_1_2014),
        ("2014-09-01T02:00+02", SEPT_1_2014),
        ("2014-09-01 00:00:00 UTC", SEPT_1_2014),
        ("2014-09-01t00:00z", SEPT_1_2014),
        ("2014-09-01 00:00:00,5", SEPT_1_2014 + 500),
    ],
)
def test_accepted_values(value: str, millis: int) -> None:
    assert parse_time(value) == ParsedTime(millis, None)


def test_no_offset_means_utc_unless_a_timezone_is_given() -> None:
    assert parse_time("2014-09-01").millis == SEPT_1_2014
    assert parse_time("2014-09-01", "UTC").millis == SEPT_1_2014
    # Paris is UTC+2 in summer: local midnight is 22:00 UTC the day before.
    assert parse_time("2014-09-01", "Europe/Paris").millis == SEPT_1_2014 - 2 * 3600 * 1000
    assert (
        parse_time("2014-01-01T12:00", "America/New_York").millis
        == parse_time("2014-01-01T17:00Z").millis
    )
    # An explicit offset wins over the timezone.
    assert parse_time("2014-09-01T00:00Z", "Europe/Paris").millis == SEPT_1_2014
    # Epoch millis are absolute.
    assert parse_time("0", "Asia/Tokyo").millis == 0


def test_unknown_timezone_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown timezone 'Mars/Olympus'"):
        parse_time("2014-09-01", "Mars/Olympus")


@pytest.mark.parametrize("value", ["20140901", "19991231", "20240229"])
def test_digits_that_look_like_a_date_warn(value: str) -> None:
    parsed = parse_time(value)
    assert parsed.millis == int(value)
    assert parsed.warning is not None
    assert "epoch milliseconds" in parsed.warning
    assert "1970" in parsed.warning
    assert f"{value[:4]}-{value[4:6]}-{value[6:]}" in parsed.warning


def test_the_seed_example_warning_is_exact() -> None:
    assert parse_time("20140901").warning == (
        "time '20140901' is read as epoch milliseconds (1970-01-01T05:35:40.901Z, in 1970); "
        "if you meant a date, write 2014-09-01"
    )


@pytest.mark.parametrize("value", ["12345678", "20141301", "20140231", "1409529600000", "-1", "0"])
def test_digits_that_are_not_a_date_do_not_warn(value: str) -> None:
    assert parse_time(value).warning is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "now",
        "2014-9-1",
        "2014/09/01",
        "2014-09-01T",
        "2014-09-01 10",
        "2014-09-01T1:00",
        "2014-09-01T00:00:00.",
        "2014-09-01Z",
        "2014-09-01T00:00+2",
        "2014-09-01T00:00+02:0",
        "2014-09-01 00:00 CET",
        "14-09-01",
        "1.5",
        "1e3",
        "0x10",
        "9223372036854775808",
    ],
)
def test_malformed_values_name_the_value_and_the_formats(value: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_time(value)
    assert repr(value) in info.value.message
    assert "yyyy-MM-dd" in info.value.message or "out of range" in info.value.message


@pytest.mark.parametrize(
    "value",
    [
        "2014-13-01",
        "2014-02-30",
        "2014-09-01T24:00",
        "2014-09-01T00:60",
        "2014-09-01T00:00+19:00",
        "2014-09-01 00:00 +1900",
        "2014-09-01 00:00 +18:30",
    ],
)
def test_impossible_dates_and_times_are_refused(value: str) -> None:
    with pytest.raises(BadInputError, match="malformed time"):
        parse_time(value)


def test_malformed_message_is_exact() -> None:
    with pytest.raises(BadInputError) as info:
        parse_time("yesterday")
    assert info.value.message == (
        "malformed time 'yesterday': expected epoch milliseconds (e.g. 1409529600000), "
        "yyyy-MM-dd, or yyyy-MM-dd HH:mm[:ss[.SSS]] (a T or a space before the time) with an "
        "optional Z, UTC or +hh:mm/-hh:mm offset"
    )


@pytest.mark.parametrize(
    ("millis", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (SEPT_1_2014, "2014-09-01T00:00:00Z"),
        (SEPT_1_2014 + 7, "2014-09-01T00:00:00.007Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00Z"),
    ],
)
def test_format_millis(millis: int, text: str) -> None:
    assert format_millis(millis) == text


def test_format_millis_out_of_calendar_range() -> None:
    assert format_millis(2**63 - 1) == "9223372036854775807 ms since the epoch"


@pytest.mark.parametrize("millis", [0, 1, -1, SEPT_1_2014 + 123, -2_208_988_800_001])
def test_format_then_parse_round_trips(millis: int) -> None:
    assert parse_time(format_millis(millis)).millis == millis
