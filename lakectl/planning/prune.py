"""What a bound ``--where`` condition says about partition and list-bucketing columns (pure, no
Spark).

The condition arrives as the expression layer's typed tree (:mod:`lakectl.expr.tree`), after
the coercion rules every engine applies (:mod:`lakectl.expr.bind`): a literal compared with a
column has already been converted to the comparison's type, exactly as the filter compares it.
The analysis only understands ``column = constant``, ``column IN (constants)``, a boolean
column on its own, ``AND`` and ``OR``, over columns whose values have one canonical text
(integers, strings, dates, booleans); a column widened for the comparison (an int compared as
a bigint, a decimal or a double, a date as a timestamp) counts when the widening is exact.
Everything else contributes no constraint. A constraint only ever removes files whose rows the
whole condition rejects (the reader still applies all of it), so what is not understood only
costs reading more.

Values are compared in their canonical text: what Spark's ``CAST(value AS STRING)`` gives, which
is also how list-bucketing directories and the log's mapping spell them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from lakectl.expr.tree import INTEGRAL, Call, Col, Lit, Node, decimal_parts, walk

if TYPE_CHECKING:
    from lakectl.expr.check import CheckedStatement

INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
PRUNABLE_TYPES = INTEGRAL_TYPES | {"string", "date", "boolean"}
_INTEGER = re.compile(r"^-?\d+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Integers a double holds exactly, and no other integer rounds to.
_EXACT_IN_DOUBLE = 2**53

# Column (lower-cased name) -> the canonical values the predicate allows for it.
Constraints = dict[str, frozenset[str]]


def canonical_literal(value: object, compared_as: str, column_type: str) -> frozenset[str] | None:
    """The canonical texts of the values of a column of ``column_type`` that equal the constant
    ``value`` of type ``compared_as`` (the type the bound comparison compares in): one text, or
    none at all (``int_col = 2.5``); ``None`` when that is not decided here (NULL, a type this
    module does not read, a cast that is not exact)."""
    if value is None or column_type not in PRUNABLE_TYPES:
        return None
    if column_type in INTEGRAL_TYPES:
        return _integral_texts(value, compared_as, column_type)
    if column_type == "date":
        if compared_as == "date" and isinstance(value, dt.date):
            return frozenset({value.isoformat()})
        if compared_as == "timestamp" and isinstance(value, dt.datetime):  # a date at midnight
            midnight = value.time() == dt.time()
            return frozenset({value.date().isoformat()} if midnight else ())
        return None
    if compared_as != column_type:
        return None
    if column_type == "boolean":
        return frozenset({"true" if value else "false"})
    return frozenset({value}) if isinstance(value, str) else None


def _integral_texts(value: object, compared_as: str, column_type: str) -> frozenset[str] | None:
    if isinstance(value, bool):
        return None
    if compared_as in INTEGRAL_TYPES and isinstance(value, int):
        # only a widening cast keeps every value (a narrower type may wrap around)
        widening = INTEGRAL.index(compared_as) >= INTEGRAL.index(column_type)
        return frozenset({str(value)}) if widening else None
    if decimal_parts(compared_as) is not None and isinstance(value, Decimal):
        # a value outside the decimal's range becomes NULL there: equal to nothing
        integral = value == value.to_integral_value()
        return frozenset({str(int(value))} if integral else ())
    if compared_as == "double" and isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return frozenset()
        if abs(value) >= _EXACT_IN_DOUBLE:
            return None  # several large integers round to the same double
        return frozenset({str(int(value))} if value.is_integer() else ())
    return None


def canonical_text(text: str | None, column_type: str) -> str | None:
    """The canonical text of a value read from a directory name (``None``: not decidable)."""
    if text is None or column_type not in PRUNABLE_TYPES:
        return None
    if column_type in INTEGRAL_TYPES:
        return str(int(text)) if _INTEGER.match(text.strip()) else None
    if column_type == "date":
        try:
            return dt.date.fromisoformat(text).isoformat() if _DATE.match(text) else None
        except ValueError:
            return None
    if column_type == "boolean":
        return text.lower() if text.lower() in ("true", "false") else None
    return text


def _column(node: Node, types: Mapping[str, str]) -> tuple[str, str] | None:
    """``(lower-cased name, type)`` of the prunable column ``node`` is, possibly widened by a
    cast for the comparison; None for anything else."""
    if isinstance(node, Call) and node.op == "cast" and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, Col):
        name = node.name.lower()
        if types.get(name) == node.type:
            return name, node.type
    return None


def _and(left: Constraints, right: Constraints) -> Constraints:
    out = dict(left)
    for col, values in right.items():
        out[col] = out[col] & values if col in out else values
    return out


def _or(left: Constraints, right: Constraints) -> Constraints:
    return {col: left[col] | right[col] for col in left.keys() & right.keys()}


def _allowed(texts: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The union of the canonical texts equal to each of a set of constants, or None when one
    of them is not decided."""
    out: set[str] = set()
    for found in texts:
        if found is None:
            return None
        out |= found
    return frozenset(out)


def _constraints(node: Node, types: Mapping[str, str]) -> Constraints:
    if isinstance(node, Col):  # a boolean column as the condition
        column = _column(node, types)
        return {column[0]: frozenset({"true"})} if column and column[1] == "boolean" else {}
    if not isinstance(node, Call):
        return {}
    if node.op == "and":
        return _and(_constraints(node.args[0], types), _constraints(node.args[1], types))
    if node.op == "or":
        return _or(_constraints(node.args[0], types), _constraints(node.args[1], types))
    if node.op == "eq":
        for col_node, lit_node in (node.args, reversed(node.args)):
            column = _column(col_node, types)
            if column is not None and isinstance(lit_node, Lit):
                allowed = _allowed([canonical_literal(lit_node.value, lit_node.type, column[1])])
                return {} if allowed is None else {column[0]: allowed}
        return {}
    if node.op == "in":  # NULL among the items: the result is NULL, never true, for the rest
        column = _column(node.args[0], types)
        if column is None:
            return {}
        values = node.param[0]
        compared_as = node.args[0].type
        allowed = _allowed(canonical_literal(v, compared_as, column[1]) for v in values)
        return {} if allowed is None else {column[0]: allowed}
    return {}


def analyze_where(where: Node | None, types: Mapping[str, str]) -> Constraints:
    """Constraints the bound condition ``where`` puts on the columns of ``types`` (name ->
    type; names match case-insensitively)."""
    if where is None:
        return {}
    lowered = {name.lower(): t for name, t in types.items() if t in PRUNABLE_TYPES}
    return _constraints(where, lowered)


def allows(constraints: Constraints, column: str, value: str | None) -> bool:
    """Can a row whose ``column`` holds ``value`` (canonical text, ``None``: NULL) pass?"""
    allowed = constraints.get(column.lower())
    if allowed is None:
        return True
    return value is not None and value in allowed


def partition_may_match(
    values: Sequence[str | None],
    columns: Sequence[str],
    types: Mapping[str, str],
    constraints: Constraints,
) -> bool:
    """Can a row of the partition whose directory spells ``values`` (``None``: NULL) for the
    partition ``columns`` (of ``types``) pass the condition ``constraints`` came from?"""
    for col, raw in zip(columns, values, strict=True):
        allowed = constraints.get(col.lower())
        if allowed is None:
            continue
        if raw is None:  # NULL partition value: `col = constant` / IN is never true
            return False
        value = canonical_text(raw, types[col])
        if value is not None and value not in allowed:
            return False
    return True


def assigned_columns(statements: Iterable[CheckedStatement]) -> set[str]:
    """Lower-cased names of the columns checked Type 7 statements may change."""
    return {name.lower() for stmt in statements for name, _ in stmt.assignments}


def columns_read(where: Node) -> set[str]:
    """Lower-cased names of the columns the bound condition ``where`` reads."""
    return {node.name.lower() for node in walk(where) if isinstance(node, Col)}


def where_reads_only_unassigned(where: Node, statements: Iterable[CheckedStatement]) -> bool:
    """Does the bound condition ``where`` read only columns no statement of ``statements``
    assigns? Then it selects the same rows before the statements are applied as after
    (statements change each row on its own), so a read may filter first."""
    return not columns_read(where) & assigned_columns(statements)
