"""Which ORC stripes a ``where`` condition can skip, from their min/max statistics.

A stripe is skipped only when its statistics prove that none of its rows satisfies the
condition: comparisons of a data column with a literal (``=``, ``<>``, ``<``, ``<=``, ``>``,
``>=``, ``BETWEEN``, ``IN``) joined by ``AND``/``OR``. Anything else, a column without exact
statistics, or a literal that does not compare with the column's values, keeps the stripe. The
condition is still applied to every row read, so a kept stripe never changes an answer; this
is only sound for rows whose values are final, i.e. insert events when no Type 7 statement
applies (a statement may change the value the condition tests), never for delete events.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from sqlglot import exp

from lakectl.arrow.where import Translator
from lakectl.errors import UsageError
from lakectl.table.orc_stats import ColumnStats
from lakectl.table.schema import Schema
from lakectl.updates.validate import check_where

# The column types whose ORC statistics are exact (see lakectl.table.orc_stats), and the
# Python type of their values there.
_KINDS: dict[str, type] = {
    "tinyint": int,
    "smallint": int,
    "int": int,
    "bigint": int,
    "date": dt.date,
    "string": str,
    "decimal": Decimal,
}

StripeTest = Callable[[Mapping[str, ColumnStats | None]], bool]
_MIRRORED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
}


def stripe_test(where: str, data_schema: Schema, schema: Schema) -> StripeTest | None:
    """A test that says whether a stripe may hold a row satisfying ``where`` (over ``schema``'s
    columns), given the statistics of its data columns (of ``data_schema``) by name; None when
    no part of the condition can exclude a stripe."""
    tree = check_where(where, schema)
    test = _Tests(Translator(f"--where {where!r}", schema), data_schema).node(tree)
    return test


def _kind(typed: str) -> str:
    name = typed.replace(" ", "").lower()
    return "decimal" if name.startswith("decimal") else name


def _is_ranged(typed: str) -> bool:
    return _kind(typed) in _KINDS


class _Tests:
    def __init__(self, translator: Translator, data_schema: Schema) -> None:
        self.translator = translator
        self.data = {c.name.lower(): c for c in data_schema.columns}

    def node(self, node: exp.Expression) -> StripeTest | None:
        """The test of ``node`` (None: it cannot exclude anything)."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            left, right = self.node(node.this), self.node(node.expression)
            if left is None or right is None:
                return left or right
            return _both(left, right)
        if isinstance(node, exp.Or):
            left, right = self.node(node.this), self.node(node.expression)
            if left is None or right is None:
                return None
            return _either(left, right)
        if isinstance(node, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            return self.comparison(node)
        if isinstance(node, exp.Between):
            column = self.column(node.this)
            low, high = (
                self.literal(node.args["low"], column),
                self.literal(node.args["high"], column),
            )
            if column is None or low is None or high is None:
                return None
            name = column
            return lambda stats: _may(stats, name, lambda lo, hi: lo <= high and hi >= low)
        if isinstance(node, exp.In) and not node.args.get("query"):
            column = self.column(node.this)
            values = self.literals(node.expressions, column)
            if column is None or values is None:
                return None
            name, ordered = column, sorted(values)
            return lambda stats: _may(stats, name, lambda lo, hi: _holds_one(ordered, lo, hi))
        return None

    def comparison(self, node: exp.Expression) -> StripeTest | None:
        left, right = node.this, node.expression
        flipped = self.column(left) is None
        column = self.column(right if flipped else left)
        value = self.literal(left if flipped else right, column)
        if column is None or value is None:
            return None
        kind: type[exp.Expression] = type(node)
        if flipped:  # literal OP column: the same test with the operator mirrored
            kind = _MIRRORED.get(kind, kind)
        ranges: dict[type[exp.Expression], Callable[[Any, Any], bool]] = {
            exp.EQ: lambda lo, hi: lo <= value <= hi,
            exp.NEQ: lambda lo, hi: not (lo == hi == value),
            exp.GT: lambda lo, hi: hi > value,
            exp.GTE: lambda lo, hi: hi >= value,
            exp.LT: lambda lo, hi: lo < value,
            exp.LTE: lambda lo, hi: lo <= value,
        }
        name, fits = column, ranges[kind]
        return lambda stats: _may(stats, name, fits)

    def column(self, node: exp.Expression) -> str | None:
        """The data column ``node`` names, when its statistics are exact (else None)."""
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column):
            return None
        column = self.data.get(node.name.lower())
        if column is None or not _is_ranged(column.type):
            return None
        return column.name

    def literals(self, nodes: list[exp.Expression], column: str | None) -> list[Any] | None:
        """The values of ``nodes`` as :meth:`literal` gives them, or None when one is not a
        literal of the column's own kind (converted in one cast when they allow it)."""
        if column is None:
            return None
        typed = self.data[column.lower()].type
        bulk = self.translator.literal_array(nodes, typed)
        if bulk is not None:
            array, has_null = bulk
            values = array.to_pylist()
            kind = _KINDS[_kind(typed)]
            return None if has_null or any(type(v) is not kind for v in values) else values
        values = [self.literal(v, column) for v in nodes]
        return None if any(v is None for v in values) else values

    def literal(self, node: exp.Expression, column: str | None) -> Any:
        """``node``'s value as the statistics hold them (int, date, str, Decimal), or None when
        it is not a literal of the column's own kind: NULL (a comparison with NULL keeps the
        stripe), or a value the filter compares in another type (say a fraction against an
        integer or decimal column, compared as doubles), where exact bounds could mislead."""
        if column is None:
            return None
        typed = self.data[column.lower()].type
        try:
            value = self.translator.literal(node, typed).as_py()
        except UsageError:
            return None
        return value if type(value) is _KINDS[_kind(typed)] else None


def _both(left: StripeTest, right: StripeTest) -> StripeTest:
    return lambda stats: left(stats) and right(stats)


def _either(left: StripeTest, right: StripeTest) -> StripeTest:
    return lambda stats: left(stats) or right(stats)


def _holds_one(ordered: list[Any], low: Any, high: Any) -> bool:
    """Whether the sorted ``ordered`` has a value in [low, high] (one binary search, so an IN
    list of thousands costs each stripe a few comparisons)."""
    at = bisect.bisect_left(ordered, low)
    return at < len(ordered) and ordered[at] <= high


def _may(
    stats: Mapping[str, ColumnStats | None], column: str, fits: Callable[[Any, Any], bool]
) -> bool:
    """Whether the stripe may hold a value of ``column`` that ``fits`` its [min, max] range."""
    found = stats.get(column)
    if found is None:
        return True
    if found.values == 0:
        return False  # only nulls: no comparison is true
    if not found.has_range:
        return True
    try:
        return bool(fits(found.minimum, found.maximum))
    except TypeError:  # a literal of another kind (say a float against ints): keep it
        return True


__all__ = ["StripeTest", "stripe_test"]
