"""Predicate analysis for pruning: what is understood narrows, everything else gives nothing.

The condition is the bound tree the filter uses (:func:`lakectl.expr.bind_where`), so a literal
is compared with a partition value exactly as the filter compares it."""

from __future__ import annotations

import pytest

from lakectl.errors import BadInputError, UsageError
from lakectl.expr import bind_where
from lakectl.planning.prune import (
    allows,
    analyze_where,
    assigned_columns,
    canonical_text,
    partition_may_match,
    where_reads_only_unassigned,
)
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_stored_statement

SCHEMA = parse_schema(
    "x int, y string, ds string, d date, flag boolean, f double, val string, big bigint, "
    "price int, qty int, id int"
)
TYPES = {"x": "int", "y": "string", "ds": "string", "d": "date", "flag": "boolean", "f": "double"}


def _analyze(where: str, types: dict[str, str] = TYPES) -> dict[str, set[str]]:
    return {k: set(v) for k, v in analyze_where(bind_where(where, SCHEMA), types).items()}


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("x = 30", {"x": {"30"}}),
        ("30 = x", {"x": {"30"}}),
        ("X = 30", {"x": {"30"}}),
        ("`x` = 30", {"x": {"30"}}),
        ("x == 30", {"x": {"30"}}),
        ("x = -5", {"x": {"-5"}}),
        ("x IN (6, 20, 030)", {"x": {"6", "20", "30"}}),
        ("x = 30 AND ds = '2024-01-01'", {"x": {"30"}, "ds": {"2024-01-01"}}),
        ("(x = 6 OR x = 20) AND y = 'b'", {"x": {"6", "20"}, "y": {"b"}}),
        ("x = 6 AND x = 20", {"x": set()}),
        ("x IN (6, 20) AND x IN (20, 30)", {"x": {"20"}}),
        ("(x = 6 AND y = 'a') OR (x = 20 AND y = 'b')", {"x": {"6", "20"}, "y": {"a", "b"}}),
        ("d = '2024-01-05'", {"d": {"2024-01-05"}}),
        ("d = DATE '2024-01-05'", {"d": {"2024-01-05"}}),
        ("flag = true", {"flag": {"true"}}),
        ("flag", {"flag": {"true"}}),
        ("x = 30 AND val LIKE 'a%'", {"x": {"30"}}),
        # literals as the filter converts them (lakectl.expr.bind)
        ("x = '6'", {"x": {"6"}}),
        ("x = ' 06 '", {"x": {"6"}}),
        ("x IN ('6', '020')", {"x": {"6", "20"}}),
        ("d = '2024-1-5'", {"d": {"2024-01-05"}}),
        ("flag = 'yes'", {"flag": {"true"}}),
        ("y = '02'", {"y": {"02"}}),
        # compared in a wider type: the partition's value equals the constant or nothing
        ("x = 6.0", {"x": {"6"}}),
        ("x = 6.5", {"x": set()}),
        ("x IN (6.0, 6.5, 7)", {"x": {"6", "7"}}),
        ("x = 6e0", {"x": {"6"}}),
        ("x = 6.5e0", {"x": set()}),
        ("x = 9999999999", {"x": {"9999999999"}}),
        ("d = CAST('2024-01-05 00:00:00' AS timestamp)", {"d": {"2024-01-05"}}),
        ("d = CAST('2024-01-05 10:00:00' AS timestamp)", {"d": set()}),
        ("x IN (6, NULL)", {"x": {"6"}}),  # NULL: unknown where 6 does not match
    ],
)
def test_understood_predicates(where, expected):
    assert _analyze(where) == expected


@pytest.mark.parametrize(
    "where",
    [
        "x = 6 OR y = 'a'",  # different columns: any row may match
        "NOT x = 6",
        "x <> 6",
        "x > 6",
        "x = NULL",
        "x IS NULL",
        "x <=> NULL",
        "NOT x IN (6, 7)",
        "f = 1.5",  # doubles are not prunable
        "coalesce(x, 6) = 6",
        "x + 1 = 7",
        "CAST(x AS string) = '06'",  # a string compare of the number's text
        "CAST(x AS tinyint) = 6",  # a narrowing cast may wrap around
        "CAST(y AS int) = 6",
        "big = 9007199254740993e0",  # several bigints are this double
        "NOT flag",
    ],
)
def test_not_understood_gives_no_constraint(where):
    assert _analyze(where, {**TYPES, "big": "bigint"}) == {}


@pytest.mark.parametrize(
    "where", ["x = 6 +", "x IN (SELECT 1)", "y = 6", "x = y", "x IN (6, '7')", ""]
)
def test_a_condition_the_filter_refuses_is_never_analyzed(where):
    with pytest.raises((BadInputError, UsageError)):
        bind_where(where, SCHEMA)


def test_no_condition_gives_no_constraint():
    assert analyze_where(None, TYPES) == {}


def test_allows_treats_null_as_failing_an_equality():
    constraints = analyze_where(bind_where("x IN (6, 20)", SCHEMA), TYPES)
    assert allows(constraints, "x", "6")
    assert not allows(constraints, "x", "7")
    assert not allows(constraints, "x", None)
    assert allows(constraints, "y", "anything")


def test_partition_may_match_reads_directory_values_canonically():
    constraints = analyze_where(bind_where("x = 7 AND d = '2024-01-05'", SCHEMA), TYPES)
    columns, types = ("x", "d"), {"x": "int", "d": "date"}
    assert partition_may_match(["007", "2024-01-05"], columns, types, constraints)
    assert not partition_may_match(["8", "2024-01-05"], columns, types, constraints)
    assert not partition_may_match([None, "2024-01-05"], columns, types, constraints)
    assert partition_may_match(["x7", "2024-01-05"], columns, types, constraints)  # undecided


@pytest.mark.parametrize(
    ("text", "type_", "expected"),
    [
        ("007", "int", "7"),
        ("-3", "bigint", "-3"),
        ("abc", "int", None),
        ("2024-01-05", "date", "2024-01-05"),
        ("2024-13-05", "date", None),
        ("TRUE", "boolean", "true"),
        ("a b", "string", "a b"),
        ("1.5", "double", None),
        (None, "string", None),
    ],
)
def test_canonical_text(text, type_, expected):
    assert canonical_text(text, type_) == expected


def _checked(*sqls: str) -> list:
    return [
        check_stored_statement(
            Statement(0, sql, sql.split()[0].lower(), "t", line=1, source="s.sql"), SCHEMA
        )
        for sql in sqls
    ]


def test_assigned_columns_of_type7_statements():
    assert assigned_columns([]) == set()
    assert assigned_columns(_checked("DELETE FROM t WHERE x = 1")) == set()
    assert assigned_columns(_checked("UPDATE t SET X = 5, y = 'a' WHERE x = 6")) == {"x", "y"}


def test_a_where_on_columns_no_statement_sets_can_filter_before_the_statements():
    statements = _checked(
        "UPDATE t SET price = price * 2 WHERE id = 1", "DELETE FROM t WHERE qty < 0"
    )

    def early(where: str, stmts: list) -> bool:
        return where_reads_only_unassigned(bind_where(where, SCHEMA), stmts)

    assert early("id = 1 AND qty > 3", statements)
    assert early("x > 0", [])
    assert not early("PRICE > 10", statements)  # case-insensitive
    assert not early("id = 1 OR coalesce(price, 0) > 1", statements)
