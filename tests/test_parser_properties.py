"""Property tests of every parser of user input: random text gives a result or a LakectlError,
never another exception (a traceback for the user); and what lakectl prints parses back."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lakectl.errors import LakectlError
from lakectl.expr.check import check_where
from lakectl.ops.load import parse_op_values
from lakectl.table.properties import parse_duration, parse_size
from lakectl.table.schema import parse_schema
from lakectl.times import format_millis, parse_time
from lakectl.updates.statements import parse_updates_text

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCHEMA = parse_schema("id bigint, name string, amount decimal(10,2), day date, ok boolean")

# Text near each grammar (digits, units, separators, SQL words) finds more than uniform noise.
TIME_ALPHABET = string.digits + "-:T tZz+.,UTC"
SIZE_ALPHABET = string.digits + " .kKmMgGtTbB"
DURATION_ALPHABET = string.digits + " .dhmsDHMS"
SQL_WORDS = st.sampled_from(
    ["id", "name", "amount", "day", "ok", "=", "<>", "AND", "OR", "NOT", "(", ")", "'x'", "1",
     "IN", "LIKE", "'%a%'", "IS", "NULL", "BETWEEN", "CAST", "AS", "int", ",", ";", "--",
     "/*", "*/", "SELECT", "upper(", "rand()", "`", "''", "1e309", "9" * 30, "UPDATE", "t",
     "SET", "DELETE", "FROM", "WHERE", "\n", "-- time=", "2014-01-01"]
)  # fmt: skip


def text_from(alphabet: str) -> st.SearchStrategy[str]:
    return st.one_of(st.text(alphabet, max_size=40), st.text(max_size=40))


def sql_text() -> st.SearchStrategy[str]:
    return st.one_of(st.lists(SQL_WORDS, max_size=25).map(" ".join), st.text(max_size=80))


def returns_or_refuses(parse, text):  # type: ignore[no-untyped-def]
    try:
        return parse(text)
    except LakectlError:
        return None


@SETTINGS
@given(text_from(TIME_ALPHABET))
@example("2024-01-01 10:00")
@example("9" * 5000)
def test_times(text: str) -> None:
    returns_or_refuses(parse_time, text)
    returns_or_refuses(lambda t: parse_time(t, "Europe/Paris"), text)


@SETTINGS
@given(st.integers(min_value=-62135596800000, max_value=253402300799999))  # years 1 to 9999
def test_printed_times_parse_back(millis: int) -> None:
    assert parse_time(format_millis(millis)).millis == millis


@SETTINGS
@given(text_from(DURATION_ALPHABET))
@example("1d12h")
@example("1" * 400 + "d")
def test_durations(text: str) -> None:
    value = returns_or_refuses(parse_duration, text)
    assert value is None or value >= 0


@SETTINGS
@given(text_from(SIZE_ALPHABET))
@example("128MB")
def test_sizes(text: str) -> None:
    value = returns_or_refuses(parse_size, text)
    assert value is None or value >= 0


@SETTINGS
@given(sql_text())
@example("id bigint, name string default 'x'")
@example("a decimal(99999999999999999999,2)")
def test_schemas(text: str) -> None:
    returns_or_refuses(parse_schema, text)


@SETTINGS
@given(sql_text())
@example("id = 1 whatever")
@example("(" * 3000 + "1" + ")" * 3000)
def test_where_conditions(text: str) -> None:
    returns_or_refuses(lambda t: check_where(t, SCHEMA), text)


@SETTINGS
@given(st.one_of(st.text(string.ascii_letters + "=,", max_size=40), st.text(max_size=40)))
@example("I=insert,U=update,D=delete")
def test_op_values(text: str) -> None:
    mapping = returns_or_refuses(parse_op_values, text)
    assert mapping is None or set(mapping.values()) <= {"insert", "update", "delete"}


@SETTINGS
@given(sql_text())
@example("UPDATE t SET name = 'O''Brien' WHERE id = 1;")
@example("-- time=2014-01-01\nDELETE FROM t WHERE " + " OR ".join(["id = 1"] * 600) + ";")
def test_updates_files(text: str) -> None:
    returns_or_refuses(lambda t: parse_updates_text(t, "random.updates", schema=SCHEMA), text)
