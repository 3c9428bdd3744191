"""What a ``--where`` predicate says about partition and list-bucketing columns (pure, no Spark).

The analysis is deliberately conservative: it only understands ``col = literal``,
``col IN (literals)``, ``AND``, ``OR`` and parentheses, over columns of a few types whose values
have one canonical text (integers, strings, dates, booleans). Everything else contributes no
constraint. A constraint only ever removes files whose rows the full predicate would reject
anyway (the reader still applies the whole ``--where``), so misunderstanding nothing here is
what keeps pruning correct; understanding little only costs reading more.

Values are compared in their canonical text: what Spark's ``CAST(value AS STRING)`` gives, which
is also how list-bucketing directories and the log's mapping spell them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
PRUNABLE_TYPES = INTEGRAL_TYPES | {"string", "date", "boolean"}
_INTEGER = re.compile(r"^-?\d+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Column (lower-cased name) -> the canonical values the predicate allows for it.
Constraints = dict[str, frozenset[str]]


def canonical_literal(node: Any, column_type: str) -> str | None:
    """The canonical text of a sqlglot literal compared with a column of ``column_type``.

    ``None`` when the comparison is not one this module can decide exactly (a string literal
    against an integer column, which Spark would cast; NULL; an expression; another type).
    """
    from sqlglot import exp

    negative = False
    if isinstance(node, exp.Neg):
        node, negative = node.this, True
    if isinstance(node, exp.Paren):
        return None if negative else canonical_literal(node.this, column_type)
    if column_type in INTEGRAL_TYPES:
        if isinstance(node, exp.Literal) and not node.is_string and _INTEGER.match(node.this):
            return str(-int(node.this) if negative else int(node.this))
        return None
    if negative:
        return None
    if column_type == "string":
        return node.this if isinstance(node, exp.Literal) and node.is_string else None
    if column_type == "date":
        if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DATE:
            node = node.this
        if isinstance(node, exp.Literal) and node.is_string and _DATE.match(node.this):
            try:
                return dt.date.fromisoformat(node.this).isoformat()
            except ValueError:
                return None
        return None
    if column_type == "boolean" and isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
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


def _column_name(node: Any) -> str | None:
    from sqlglot import exp

    if isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier):
        return str(node.this.this).lower()
    return None


def _and(left: Constraints, right: Constraints) -> Constraints:
    out = dict(left)
    for col, values in right.items():
        out[col] = out[col] & values if col in out else values
    return out


def _or(left: Constraints, right: Constraints) -> Constraints:
    return {col: left[col] | right[col] for col in left.keys() & right.keys()}


def _constraints(node: Any, types: Mapping[str, str]) -> Constraints:
    from sqlglot import exp

    if isinstance(node, exp.Paren):
        return _constraints(node.this, types)
    if isinstance(node, exp.And):
        return _and(_constraints(node.this, types), _constraints(node.expression, types))
    if isinstance(node, exp.Or):
        return _or(_constraints(node.this, types), _constraints(node.expression, types))
    if isinstance(node, exp.EQ):
        for col_node, lit_node in ((node.this, node.expression), (node.expression, node.this)):
            col = _column_name(col_node)
            if col is not None and col in types:
                value = canonical_literal(lit_node, types[col])
                if value is not None:
                    return {col: frozenset({value})}
        return {}
    if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("unnest"):
        col = _column_name(node.this)
        if col is None or col not in types or not node.expressions:
            return {}
        values = [canonical_literal(e, types[col]) for e in node.expressions]
        if any(v is None for v in values):
            return {}
        return {col: frozenset(v for v in values if v is not None)}
    return {}


def analyze_where(where: str | None, types: Mapping[str, str]) -> Constraints:
    """Constraints the predicate ``where`` puts on the columns of ``types`` (name -> type).

    Column names match case-insensitively (as Spark does); unparsable text gives no constraint.
    """
    if not where:
        return {}
    from sqlglot.errors import SqlglotError

    from lakectl.expr.parse import parse_expression

    lowered = {name.lower(): t for name, t in types.items() if t in PRUNABLE_TYPES}
    try:
        tree = parse_expression(where)
    except (SqlglotError, ValueError):
        return {}
    return _constraints(tree, lowered)


def allows(constraints: Constraints, column: str, value: str | None) -> bool:
    """Can a row whose ``column`` holds ``value`` (canonical text, ``None``: NULL) pass?"""
    allowed = constraints.get(column.lower())
    if allowed is None:
        return True
    return value is not None and value in allowed


def assigned_columns(statements: Iterable[str]) -> set[str] | None:
    """Columns that Type 7 statements (``UPDATE ... SET col = ...`` / ``DELETE``) may change.

    ``None`` when a statement is not understood: then no stored value may be trusted for pruning.
    """
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from lakectl.expr.parse import parse_expression

    out: set[str] = set()
    for sql in statements:
        try:
            tree = parse_expression(sql)
        except (SqlglotError, ValueError):
            return None
        if isinstance(tree, exp.Delete):
            continue
        if not isinstance(tree, exp.Update) or not tree.expressions:
            return None
        for assignment in tree.expressions:
            target = assignment.this if isinstance(assignment, exp.EQ) else None
            name = target.name.lower() if isinstance(target, exp.Column) else None
            if name is None:
                return None
            out.add(name)
    return out


def where_reads_only_unassigned(where: str, statements: Iterable[str]) -> bool:
    """Does the predicate ``where`` read only columns no statement of ``statements`` assigns?

    Then it selects the same rows before the statements are applied as after (statements
    change each row on its own), so a read may filter first. ``False`` when either cannot be
    parsed.
    """
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from lakectl.expr.parse import parse_expression

    assigned = assigned_columns(statements)
    if assigned is None:
        return False
    try:
        tree = parse_expression(where)
    except (SqlglotError, ValueError):
        return False
    read = {column.name.lower() for column in tree.find_all(exp.Column)}
    return not read & assigned
