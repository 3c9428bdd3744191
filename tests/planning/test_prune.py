"""Predicate analysis for pruning: what is understood narrows, everything else gives nothing."""

from __future__ import annotations

import pytest

from lakectl.planning.prune import (
    allows,
    analyze_where,
    assigned_columns,
    canonical_text,
    where_reads_only_unassigned,
)

TYPES = {"x": "int", "y": "string", "ds": "string", "d": "date", "flag": "boolean", "f": "double"}


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
        ("x = 30 AND val LIKE 'a%'", {"x": {"30"}}),
    ],
)
def test_understood_predicates(where, expected):
    got = analyze_where(where, TYPES)
    assert {k: set(v) for k, v in got.items()} == expected


@pytest.mark.parametrize(
    "where",
    [
        "x = 6 OR y = 'a'",  # different columns: any row may match
        "NOT x = 6",
        "x <> 6",
        "x > 6",
        "x = '6'",  # Spark casts: ' 6' and '06' equal 6 too
        "y = 6",  # a number against a string column: Spark casts the string
        "x = 6.5",
        "x = NULL",
        "x IS NULL",
        "x IN (6, '7')",
        "x IN (SELECT 1)",
        "t.x = 6",
        "d = '2024-1-5'",
        "f = 1.5",  # doubles are not prunable
        "x = y",
        "x = 6 +",  # not even SQL
        "coalesce(x, 6) = 6",
        "",
    ],
)
def test_not_understood_gives_no_constraint(where):
    assert analyze_where(where, TYPES) == {}


def test_allows_treats_null_as_failing_an_equality():
    constraints = analyze_where("x IN (6, 20)", TYPES)
    assert allows(constraints, "x", "6")
    assert not allows(constraints, "x", "7")
    assert not allows(constraints, "x", None)
    assert allows(constraints, "y", "anything")


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


def test_assigned_columns_of_type7_statements():
    assert assigned_columns([]) == set()
    assert assigned_columns(["DELETE FROM t WHERE x = 1"]) == set()
    assert assigned_columns(["UPDATE t SET X = 5, y = 'a' WHERE x = 6"]) == {"x", "y"}
    assert assigned_columns(["SELECT 1"]) is None
    assert assigned_columns(["UPDATE t SET"]) is None


def test_a_where_on_columns_no_statement_sets_can_filter_before_the_statements():
    statements = ["UPDATE t SET price = price * 2 WHERE id = 1", "DELETE FROM t WHERE qty < 0"]
    assert where_reads_only_unassigned("id = 1 AND qty > 3", statements)
    assert where_reads_only_unassigned("anything > 0", [])
    assert not where_reads_only_unassigned("PRICE > 10", statements)  # case-insensitive
    assert not where_reads_only_unassigned("id = 1 OR coalesce(price, 0) > 1", statements)
    assert not where_reads_only_unassigned("id = = 1", statements)  # unparsable: filter after
    assert not where_reads_only_unassigned("id = 1", ["MERGE INTO t"])  # statement not understood
