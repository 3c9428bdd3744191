"""The expression rules, without Spark: binding refusals, conversions, Arrow's results."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest
from expr_tables import SCHEMA, arrow_table

from lakectl.arrow.where import arrow_filter
from lakectl.errors import BadInputError, LakectlError, UsageError
from lakectl.expr.convert import ConversionError, convert_text, default_value
from lakectl.ops.dml import DmlRequest, statement_text
from lakectl.table.schema import Column, parse_schema


def rows(where: str) -> list[int]:
    return arrow_table().filter(arrow_filter(where, SCHEMA)).column("id").to_pylist()


@pytest.mark.parametrize(
    ("where", "fragment", "hint"),
    [
        ("s = 2", "cannot compare or combine string with int", "quote the literal: s = '2'"),
        ("n = true", "bigint with boolean", "compare booleans with true or false"),
        ("s = n", "string with bigint", "CAST"),
        ("store_id = S01", "unknown column 'store_id'", "quote it"),
        ("s = S01", "unknown column 'S01'", "quote it: 'S01'"),
        ("id IN (1, '2', 3.0)", "mixes numbers and strings", "the same way"),
        ("dt = '20240105'", "'20240105' is not a date value", None),
        ("dt = '2024-W01-1'", "is not a date value", None),
        ("n = '1_000'", "is not a bigint value", None),
        ("n = '١٢'", "is not a bigint value", None),
    ],
)
def test_refused_with_the_reason_and_the_way_out(where: str, fragment: str, hint: str) -> None:
    with pytest.raises(LakectlError) as caught:
        arrow_filter(where, SCHEMA)
    assert fragment in str(caught.value)
    if hint is not None:
        assert hint in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("s = '2'", [3]),
        ("d > 100", [1, 2, 4]),  # NaN is above every number
        ("d = 'NaN'", [1]),  # NaN equals NaN
        ("d IN (101, 'NaN')", None),  # refused: mixed kinds
        ("dec = '1.005'", []),  # compared exactly, never rounded
        ("d = -0.0", [3, 5]),  # -0.0 equals 0.0
        ("d IN (0.0)", [3, 5]),
        ("d <> 0", [1, 2, 4, 6]),
        ("coalesce(d, 0) <> d", []),
        ("f = 3.4e38", []),  # the float widens to double: 3.3999999521443642e38
        ("f > 3.3e38", [1, 6]),
        ("n = 2.0", [5]),
        ("n > 1.5 AND n < 2.5", [5]),
        ("n = 9223372036854775808", []),
        ("id IN (1, 2, 3.0)", [1, 2, 3]),
        ("'1' = 1", [1, 2, 3, 4, 5, 6]),
        ("upper(s) = 'X''Y'", [4]),
        ("length(s) = 2", [1, 2]),
        ("n + 1 > 2", [2, 5]),
        ("coalesce(n, 0) = 0", [3, 6]),
        ("s LIKE '%2'", [1, 2, 3]),
        ("CASE WHEN id > 2 THEN 'a' ELSE 'b' END = 'a'", [3, 4, 5, 6]),
        ("abs(n) = 5", [4]),
        ("ts = '2024-01-05 10:00:00 +02:00'", [1]),
        ("dt = '2024-1-5'", [1, 5]),
        ("dt < ts", [1, 4]),  # the date widens to midnight UTC
        ("id NOT IN (1, NULL)", []),
        ("id IN (1, NULL)", [1]),
        ("n % 0 IS NULL", [1, 2, 3, 4, 5, 6]),
        ("dec = 1.01", [1]),
        ("b", [1, 4]),
        ("sm + 1 > 32767", [4]),  # smallint arithmetic widens to int
        ("-sm > 32767", [3]),  # so do unary minus and abs: -(-32768) is the int 32768
        ("abs(sm) = 32768", [3]),
        ("-(-2147483648) = 2147483648", [1, 2, 3, 4, 5, 6]),  # a constant typed by its value
    ],
)
def test_arrow_results(where: str, expected: list[int] | None) -> None:
    if expected is None:
        with pytest.raises(LakectlError):
            rows(where)
    else:
        assert rows(where) == expected


def test_integer_overflow_is_an_error_not_null() -> None:
    import pyarrow as pa

    with pytest.raises(pa.ArrowInvalid, match="overflow"):
        rows("n * 1000000000000 > 0")


@pytest.mark.parametrize("op", ["abs", "-"])
def test_unary_integer_overflow_is_an_error_not_a_wrapped_value(op: str) -> None:
    import pyarrow as pa

    smallest = "CASE WHEN n = 0 THEN -9223372036854775808 ELSE n END"  # row 6
    assert rows(f"{smallest} < 0") == [4, 6]
    with pytest.raises(pa.ArrowInvalid, match="overflow"):
        rows(f"{op}({smallest}) > 0")


def test_a_large_in_list_is_one_set_lookup() -> None:
    where = "id IN (" + ", ".join(str(i) for i in range(30_000)) + ")"
    condition = arrow_filter(where, SCHEMA)
    assert str(condition).count("is_in") == 1
    assert rows(where) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    ("text", "type_name", "value"),
    [
        (" 12 ", "int", 12),
        ("yes", "boolean", True),
        ("2024-1-5", "date", dt.date(2024, 1, 5)),
        ("2024-01-05 10:00:00 +02:00", "timestamp", dt.datetime(2024, 1, 5, 8)),
        ("1.005", "decimal(10,2)", Decimal("1.01")),
        ("-Infinity", "double", -math.inf),
    ],
)
def test_text_converts_as_in_set(text: str, type_name: str, value: object) -> None:
    assert convert_text(text, type_name) == value


@pytest.mark.parametrize(
    ("text", "type_name"),
    [("20240105", "date"), ("1_000", "int"), ("١٢", "int"), ("2024-W01-1", "date"), ("1.5", "int")],
)
def test_text_that_is_no_value_is_refused(text: str, type_name: str) -> None:
    with pytest.raises(ConversionError):
        convert_text(text, type_name)


@pytest.mark.parametrize("text", ["'20240105'", "'1_000'", "'2024-W01-1'", "'١'"])
def test_defaults_that_are_no_value_are_refused(text: str) -> None:
    column = parse_schema(f"a date default {text}").columns[0]
    with pytest.raises(UsageError, match="is not a date value"):
        default_value(column)


def test_a_default_is_a_constant_not_a_function() -> None:
    with pytest.raises(UsageError, match="not a constant") as caught:
        parse_schema("a timestamp default current_timestamp()")
    assert "quote" in (caught.value.hint or "")
    assert default_value(Column("a", "date", True, "2024-1-5")) == dt.date(2024, 1, 5)


@pytest.mark.parametrize(
    "assignments",
    [
        "s = 'x' WHERE id = 1 --",
        "s = 'x' WHERE id = 1",
        "s = 'x'; DELETE FROM t",
        "s = 'x' -- WHERE id = 2",
    ],
)
def test_set_is_a_list_of_assignments_only(assignments: str) -> None:
    with pytest.raises(UsageError, match="assignments only"):
        statement_text("t", DmlRequest("update", where="id = 2", assignments=assignments))


@pytest.mark.parametrize("where", ["id = 1; DELETE FROM t", "id = 1) OR (1 = 1"])
def test_where_is_one_condition(where: str) -> None:
    with pytest.raises(LakectlError):
        statement_text("t", DmlRequest("delete", where=where))


def test_the_statement_is_built_from_the_two_trees() -> None:
    request = DmlRequest("update", where="id = 2", assignments="s = 'a;b', n = n + 1")
    assert statement_text("t", request) == "UPDATE t SET s = 'a;b', n = n + 1 WHERE id = 2"


def test_set_of_a_number_to_a_string_column_is_refused() -> None:
    from lakectl.updates.statements import parse_updates_text

    with pytest.raises(BadInputError, match="cannot set column 's'") as caught:
        parse_updates_text("UPDATE t SET s = 1e3;", schema=SCHEMA)  # a double's text differs
    assert "quote the literal" in (caught.value.hint or "")
