"""Partition pruning never drops a row the filter keeps (pure, no Spark).

Random ``--where`` conditions over partition columns of every prunable type, written with the
literals users write (quoted numbers, blanks, fractions, exponents, dates without zeros,
timestamps, NULL), are bound once (:func:`lakectl.expr.bind_where`) and then both compiled to
the Arrow filter and analysed for pruning. For every partition value, some row of that
partition passing the filter must mean that pruning keeps the partition.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakectl.arrow.compile_expr import arrow_expression
from lakectl.errors import BadInputError, UsageError
from lakectl.expr import bind_where
from lakectl.planning.prune import analyze_where, partition_may_match
from lakectl.table.schema import parse_schema

SCHEMA = parse_schema("v int, p_int int, p_big bigint, p_str string, p_date date, p_bool boolean")
PARTITION_BY = ("p_int", "p_big", "p_str", "p_date", "p_bool")
TYPES = {c: SCHEMA[c].type for c in PARTITION_BY}
ARROW = pa.schema(
    [
        ("v", pa.int32()),
        ("p_int", pa.int32()),
        ("p_big", pa.int64()),
        ("p_str", pa.string()),
        ("p_date", pa.date32()),
        ("p_bool", pa.bool_()),
    ]
)

# Each partition column's values, with the text its directory spells (None: NULL).
VALUES: dict[str, list[tuple[Any, str | None]]] = {
    "p_int": [(None, None), (3, "3"), (-3, "-3"), (0, "0"), (2147483647, "2147483647")],
    "p_big": [(None, None), (3, "3"), (2**53, str(2**53)), (2**53 + 1, str(2**53 + 1))],
    "p_str": [(None, None), ("3", "3"), ("03", "03"), (" 3", " 3"), ("", ""), ("é", "é")],
    "p_date": [
        (None, None),
        (dt.date(2024, 1, 5), "2024-01-05"),
        (dt.date(2024, 1, 6), "2024-01-06"),
    ],
    "p_bool": [(None, None), (True, "true"), (False, "false")],
}
DATA_VALUES = (None, 0, 5)

NUMBERS = ["3", "-3", "0", "'3'", "' 3 '", "'03'", "3.0", "3.5", "3e0", "2147483648", "NULL"]
LITERALS: dict[str, list[str]] = {
    "p_int": [*NUMBERS, "CAST('3' AS bigint)", "2147483647"],
    "p_big": [*NUMBERS, str(2**53 + 1), "9007199254740992e0", "9007199254740993.0"],
    "p_str": ["'3'", "'03'", "' 3'", "''", "'é'", "'a'", "NULL"],
    "p_date": [
        "'2024-01-05'",
        "'2024-1-5'",
        "DATE '2024-01-06'",
        "'2024-01-05 10:00'",
        "CAST('2024-01-05 00:00:00' AS timestamp)",
        "CAST('2024-01-05 10:00:00' AS timestamp)",
        "NULL",
    ],
    "p_bool": ["true", "false", "'yes'", "'n'", "NULL"],
}
OPERATORS = ["=", "==", "<>", "<", "<=", ">", ">=", "<=>"]
# Expressions over partition columns that pruning does not read (they must keep partitions).
OPAQUE = [
    "v > 3",
    "v IS NULL",
    "p_bool",
    "NOT p_bool",
    "p_int + 1 = 4",
    "coalesce(p_int, 3) = 3",
    "CAST(p_int AS tinyint) = 3",
    "CAST(p_int AS string) = '3'",
    "CAST(p_str AS int) = 3",
    "upper(p_str) = 'É'",
    "p_int = p_big",
    "p_date > DATE '2024-01-05'",
]


@st.composite
def _atom(draw: Any) -> str:
    column = draw(st.sampled_from(PARTITION_BY))
    literal = st.sampled_from(LITERALS[column])
    kind = draw(st.sampled_from(["=", "=", "=", "flipped", "in", "in", "other", "between"]))
    if kind == "=":
        return f"{column} {draw(st.sampled_from(['=', '==']))} {draw(literal)}"
    if kind == "flipped":
        return f"{draw(literal)} {draw(st.sampled_from(OPERATORS))} {column}"
    if kind == "other":
        return f"{column} {draw(st.sampled_from(OPERATORS))} {draw(literal)}"
    if kind == "between":
        return f"{column} BETWEEN {draw(literal)} AND {draw(literal)}"
    items = draw(st.lists(literal, min_size=1, max_size=4))
    negated = draw(st.sampled_from(["", "", "NOT "]))
    return f"{column} {negated}IN ({', '.join(items)})"


CONDITIONS = st.recursive(
    st.one_of(_atom(), _atom(), _atom(), st.sampled_from(OPAQUE)),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "AND", "OR"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        inner.map(lambda c: f"NOT ({c})"),
    ),
    max_leaves=4,
)


def _rows() -> pa.Table:
    """One row per partition value combination and value of the data column."""
    combos = list(itertools.product(*(VALUES[c] for c in PARTITION_BY)))
    columns: dict[str, list[Any]] = {"v": [], **{c: [] for c in PARTITION_BY}}
    for combo in combos:
        for v in DATA_VALUES:
            columns["v"].append(v)
            for column, (value, _) in zip(PARTITION_BY, combo, strict=True):
                columns[column].append(value)
    return pa.Table.from_pydict(columns, schema=ARROW)


ROWS = _rows()
DIRECTORY = {
    tuple(value for value, _ in combo): tuple(text for _, text in combo)
    for combo in itertools.product(*(VALUES[c] for c in PARTITION_BY))
}


def _pruned_partitions_with_passing_rows(where: str) -> tuple[int, list[tuple[Any, ...]]]:
    """How many partitions pruning drops for ``where``, and those of them holding a row the
    filter keeps (there must be none); (0, []) when the condition is refused."""
    try:
        bound = bind_where(where, SCHEMA)
        passing = ROWS.filter(arrow_expression(bound, "--where"))
    except (BadInputError, UsageError, pa.ArrowInvalid):
        return 0, []
    constraints = analyze_where(bound, TYPES)
    kept = {
        values
        for values, texts in DIRECTORY.items()
        if partition_may_match(texts, PARTITION_BY, TYPES, constraints)
    }
    found = {tuple(row[c] for c in PARTITION_BY) for row in passing.to_pylist()}
    return len(DIRECTORY) - len(kept), sorted(found - kept, key=repr)


@settings(max_examples=250, derandomize=True, deadline=None, database=None)
@given(CONDITIONS)
def test_pruning_keeps_every_partition_with_a_row_the_filter_keeps(where):
    _, dropped = _pruned_partitions_with_passing_rows(where)
    assert not dropped, (where, dropped[:3])


@pytest.mark.parametrize(
    ("where", "pruned"),
    [
        ("p_int = ' 3 '", 4),  # the filter converts the literal: 3
        ("p_int = 3.0", 4),
        ("p_int = 3.5", 5),  # no int equals it
        ("p_int IN ('03', '-3')", 3),
        ("p_big = 9007199254740993", 3),
        ("p_big = 9007199254740992e0", 0),  # two bigints are this double
        ("p_str = '03'", 5),
        ("p_str = ''", 5),
        ("p_date = '2024-1-5'", 2),
        ("p_date = CAST('2024-01-05 10:00:00' AS timestamp)", 3),
        ("p_bool = 'yes' OR p_bool = 'n'", 1),
        ("p_bool", 2),
        ("p_int = 3 OR v > 3", 0),
    ],
)
def test_pruning_drops_what_the_filter_drops(where, pruned):
    dropped, passing = _pruned_partitions_with_passing_rows(where)
    per_value = len(DIRECTORY) // len(VALUES[_first_column(where)])
    assert (dropped, passing) == (pruned * per_value, [])


def _first_column(where: str) -> str:
    return next(c for c in PARTITION_BY if c in where)
