"""LIKE patterns: the linear form means what Spark's own LIKE means, on any pattern and value.

Three opinions are compared with the pure matcher of :mod:`lakectl.expr.like`: Spark's own
translation of a pattern into a regular expression (``StringUtils.escapeLikeRegex``, rewritten
here for Python's ``re``), DuckDB's LIKE, and the linear regular expression that Spark is given
(run by Python's backtracking ``re``, which has the same atomic groups as Java's). No Spark here:
``tests/spark/test_statement_like.py`` runs the compiled expressions on Spark.
"""

from __future__ import annotations

import re

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakectl.errors import BadInputError
from lakectl.expr.like import like_problem, linear_regex, matches, parse_like
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

# Characters that matter to LIKE and to regular expressions, a newline, and beyond ASCII.
VALUE_CHARS = "ab%_\\.*\n\u00e9\U0001f600"
PATTERN_PIECES = ["a", "b", "%", "_", "\\%", "\\_", "\\\\", ".", "*", "\u00e9", "\U0001f600"]

SCHEMA = parse_schema("s string")
values = st.text(alphabet=VALUE_CHARS, max_size=12)
patterns = st.lists(st.sampled_from(PATTERN_PIECES), max_size=8).map("".join)


def spark_translation(pattern: str) -> re.Pattern[str]:
    """What Spark matches a value against for ``value LIKE pattern`` (escape ``\\``)."""
    out, chars = ["(?s)"], iter(pattern)
    for char in chars:
        if char == "\\":
            out.append(re.escape(next(chars)))
        elif char == "_":
            out.append(".")
        elif char == "%":
            out.append(".*")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out))


def python_form(java_regex: str) -> str:
    """The linear regex in Python's syntax: ``\\z`` is ``\\Z``, ``\\x{H}`` is ``\\UHHHHHHHH``."""
    text = re.sub(r"\\x\{([0-9A-F]+)\}", lambda m: f"\\U{int(m.group(1), 16):08X}", java_regex)
    return text.replace("\\z", "\\Z")


@settings(max_examples=600, deadline=None)
@given(pattern=patterns, value=values)
def test_the_linear_form_matches_what_spark_matches(pattern: str, value: str) -> None:
    parsed = parse_like(pattern)
    expected = spark_translation(pattern).fullmatch(value) is not None
    assert matches(value, parsed) == expected
    assert (re.search(python_form(linear_regex(parsed)), value) is not None) == expected


@settings(max_examples=300, deadline=None)
@given(pattern=patterns, value=values.map(lambda v: v.replace("\n", "")))
def test_the_linear_form_matches_duckdb(pattern: str, value: str) -> None:
    # DuckDB's _ does not match a newline (Spark's does): values without one.
    with duckdb.connect() as con:  # its own connection: no unfinished result left behind
        [(duck,)] = con.execute("SELECT ? LIKE ? ESCAPE '\\'", [value, pattern]).fetchall()
    assert matches(value, parse_like(pattern)) == duck


def test_segments_and_wildcards() -> None:
    parsed = parse_like("a\\%_%%b\\\\")
    assert parsed.segments == (("a", "%", None), (), ("b", "\\"))
    assert parsed.wildcards == 2
    assert linear_regex(parse_like("%a%a%b")) == "(?s)\\A(?>.*?a)(?>.*?a).*b\\z"
    assert linear_regex(parse_like("x.y")) == "(?s)\\Ax\\x{2E}y\\z"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("a\\", "may not end with the escape character"), ("a\\\\\\", "may not end")],
)
def test_patterns_spark_refuses_are_named(pattern: str, problem: str) -> None:
    assert problem in (like_problem(pattern) or "")


def test_a_pattern_spark_would_refuse_is_refused_at_install() -> None:
    schema = parse_schema("s string")
    with pytest.raises(BadInputError, match=r"f\.updates:1:28: a LIKE pattern may not end"):
        parse_updates_text("DELETE FROM t WHERE s LIKE 'a\\\\';", "f.updates", None, schema)


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, value=values, ignore_case=st.booleans())
def test_arrow_matches_what_spark_matches(pattern: str, value: str, ignore_case: bool) -> None:
    """The Arrow engine's LIKE (pyarrow's match_like, RE2) on the patterns statements accept."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from lakectl.arrow.where import arrow_filter

    operator = "ILIKE" if ignore_case else "LIKE"
    quoted = pattern.replace("\\", "\\\\")
    rows = pa.table({"s": pa.array([value, None], pa.string())})
    found = []
    for negate in ("", "NOT "):
        condition = arrow_filter(f"s {negate}{operator} '{quoted}'", SCHEMA)
        found.append(ds.dataset(rows).to_table(columns={"m": condition}).column("m").to_pylist())
    if ignore_case:
        pattern, value = pattern.lower(), value.lower()
    expected = spark_translation(pattern).fullmatch(value) is not None
    assert found == [[expected, None], [not expected, None]]
