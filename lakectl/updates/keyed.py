"""Recognizing point statements, so that runs of them compile to hash lookups (pure, no Spark).

Corrections to a dimension table are mostly point statements keyed by one column::

    UPDATE t SET name = 'Fixed', city = NULL WHERE id = 42;
    DELETE FROM t WHERE id IN (7, 9);

Compiled one by one, 100 of them become a 100-branch CASE per column that every row walks through.
A run of them on the same key column instead compiles to one ``key IN (...)`` test (a hash set in
Spark) per written column and a lookup in a literal map for the rows that match, so the cost per
row barely depends on the number of statements.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from lakectl.table.schema import Schema
from lakectl.updates.validate import CheckedStatement, constant_value, integer_literal

_INTEGRAL_RANGES = {"tinyint": 2**7, "smallint": 2**15, "int": 2**31, "bigint": 2**63}


@dataclass(frozen=True)
class KeyedStatement:
    """A statement whose WHERE is ``key = literal`` or ``key IN (literals)`` and whose SET values
    are constants. ``keys`` are Python values of the key column's type (NULLs dropped: they
    match nothing); ``values`` maps each set column (schema name) to its constant expression."""

    kind: str
    key: str
    keys: tuple[int | str, ...]
    values: tuple[tuple[str, exp.Expression], ...]


def keyed_form(stmt: CheckedStatement, schema: Schema) -> KeyedStatement | None:
    """The point form of ``stmt``, or ``None`` when it is not a point statement."""
    if stmt.where is None:
        return None
    match = _key_condition(stmt.where)
    if match is None:
        return None
    column_node, literals = match
    column = schema.find(column_node.name)
    if column is None:
        return None
    keys: list[int | str] = []
    for literal in literals:
        if isinstance(literal, exp.Null):
            continue
        key = _key_value(literal, column.type)
        if key is None:
            return None
        keys.append(key)
    if any(name.lower() == column.name.lower() for name, _ in stmt.assignments):
        return None  # SET key = ...: the lookup would have to see the new key
    if any(constant_value(value) is None for _, value in stmt.assignments):
        return None
    return KeyedStatement(stmt.kind, column.name, tuple(keys), stmt.assignments)


def _key_condition(where: exp.Expression) -> tuple[exp.Column, list[exp.Expression]] | None:
    while isinstance(where, exp.Paren):
        where = where.this
    if isinstance(where, exp.EQ):
        left, right = where.this, where.expression
        if isinstance(right, exp.Column):
            left, right = right, left
        if isinstance(left, exp.Column):
            return left, [right]
        return None
    if isinstance(where, exp.In) and isinstance(where.this, exp.Column):
        return where.this, list(where.expressions)
    return None


def _key_value(literal: exp.Expression, key_type: str) -> int | str | None:
    """The literal as a value of the key column, when equality on it means Python equality."""
    if key_type in _INTEGRAL_RANGES:
        value = integer_literal(literal)
        limit = _INTEGRAL_RANGES[key_type]
        if value is None or not -limit <= value < limit:
            return None
        return value
    if key_type == "string" and isinstance(literal, exp.Literal) and literal.is_string:
        return str(literal.this)
    return None
