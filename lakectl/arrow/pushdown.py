"""Which ORC stripes a bound ``where`` condition can skip, from their min/max statistics.

The condition is the expression layer's typed tree (:mod:`lakectl.expr.tree`), after the
coercion rules every engine applies: a constant compared with a column is already a value of
the comparison's type, exactly as the filter compares it. A stripe is skipped only when its
statistics prove that none of its rows satisfies the condition: comparisons of a data column
with a constant (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IN``) joined by
``AND``/``OR``, where the column is compared in its own type or in a type it widens into
exactly (an int compared as a bigint or a decimal). Anything else, a column without exact
statistics, or a NULL constant, keeps the stripe. The condition is still applied to every row
read, so a kept stripe never changes an answer; this is only sound for rows whose values are
final, i.e. insert events when no Type 7 statement applies (a statement may change the value
the condition tests), never for delete events.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from lakectl.expr.tree import INTEGRAL, Call, Col, Lit, Node, as_decimal, decimal_parts
from lakectl.table.orc_stats import ColumnStats
from lakectl.table.schema import Schema

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
_MIRRORED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
_RANGES: dict[str, Callable[[Any, Any, Any], bool]] = {  # (min, max, constant)
    "eq": lambda lo, hi, v: lo <= v <= hi,
    "eq_null_safe": lambda lo, hi, v: lo <= v <= hi,
    "neq": lambda lo, hi, v: not (lo == hi == v),
    "gt": lambda lo, hi, v: hi > v,
    "ge": lambda lo, hi, v: hi >= v,
    "lt": lambda lo, hi, v: lo < v,
    "le": lambda lo, hi, v: lo <= v,
}


def stripe_test(where: Node, data_schema: Schema) -> StripeTest | None:
    """A test that says whether a stripe may hold a row satisfying the bound condition
    ``where``, given the statistics of its data columns (of ``data_schema``) by name; None when
    no part of the condition can exclude a stripe."""
    return _Tests(data_schema).node(where)


def _kind(typed: str) -> str:
    name = typed.replace(" ", "").lower()
    return "decimal" if name.startswith("decimal") else name


def _widens_exactly(source: str, target: str) -> bool:
    """Whether every value of ``source`` converts to ``target`` exactly and in order (so the
    bounds of a stripe compare with a constant of ``target`` as its values do)."""
    if source in INTEGRAL and target in INTEGRAL:
        return INTEGRAL.index(target) >= INTEGRAL.index(source)
    source_parts, target_parts = as_decimal(source), decimal_parts(target)
    if source_parts is None or target_parts is None:
        return False
    return (
        target_parts[1] >= source_parts[1]
        and target_parts[0] - target_parts[1] >= source_parts[0] - source_parts[1]
    )


class _Tests:
    def __init__(self, data_schema: Schema) -> None:
        self.data = {c.name.lower(): c for c in data_schema.columns}

    def node(self, node: Node) -> StripeTest | None:
        """The test of ``node`` (None: it cannot exclude anything)."""
        if not isinstance(node, Call):
            return None
        if node.op == "and":
            left, right = self.node(node.args[0]), self.node(node.args[1])
            if left is None or right is None:
                return left or right
            return _both(left, right)
        if node.op == "or":
            left, right = self.node(node.args[0]), self.node(node.args[1])
            if left is None or right is None:
                return None
            return _either(left, right)
        if node.op in _RANGES:
            return self.comparison(node)
        if node.op == "in":  # a NULL item never makes the result true
            column = self.column(node.args[0])
            values = [self.value(v, node.args[0].type) for v in node.param[0]]
            if column is None or any(v is None for v in values):
                return None
            name, ordered = column, sorted(values)
            return lambda stats: _may(stats, name, lambda lo, hi: _holds_one(ordered, lo, hi))
        return None

    def comparison(self, node: Call) -> StripeTest | None:
        left, right = node.args
        op = node.op
        if self.column(left) is None:  # constant OP column: the operator mirrored
            left, right, op = right, left, _MIRRORED.get(op, op)
        column = self.column(left)
        if column is None or not isinstance(right, Lit):
            return None
        value = self.value(right.value, right.type)
        if value is None:
            return None
        name, fits = column, _RANGES[op]
        return lambda stats: _may(stats, name, lambda lo, hi: fits(lo, hi, value))

    def column(self, node: Node) -> str | None:
        """The data column ``node`` is, compared in its own type or one it widens into
        exactly, when its statistics are exact (else None)."""
        compared_as = node.type
        if isinstance(node, Call) and node.op == "cast" and len(node.args) == 1:
            node = node.args[0]
            if not _widens_exactly(node.type, compared_as):
                return None
        if not isinstance(node, Col):
            return None
        column = self.data.get(node.name.lower())
        if column is None or column.type != node.type or _kind(column.type) not in _KINDS:
            return None
        return column.name

    def value(self, value: object, compared_as: str) -> Any:
        """A constant as the statistics' values compare with it (int, date, str, Decimal), or
        None (NULL: a comparison with NULL keeps the stripe)."""
        if value is None or isinstance(value, bool):
            return None
        kind = _KINDS.get(_kind(compared_as))
        if kind is None or type(value) is not kind:
            return None
        return value


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
    except TypeError:  # a constant of another kind: keep it
        return True


__all__ = ["StripeTest", "stripe_test"]
