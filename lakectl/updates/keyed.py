"""Recognizing point statements, so that runs of them compile to hash lookups (pure, no Spark).

Corrections to a dimension table are mostly point statements keyed by one column::

    UPDATE t SET name = 'Fixed', city = NULL WHERE id = 42;
    DELETE FROM t WHERE id IN (7, 9);

Compiled one by one, 100 of them become a 100-branch CASE per column that every row walks through.
A run of them on the same key column instead compiles to one ``key IN (...)`` test (a hash set in
Spark) per written column and a lookup in a literal map for the rows that match, so the cost per
row barely depends on the number of statements.

The forms are read from the bound tree (:mod:`lakectl.expr.bind`): a key compared with a constant
the binder converted to the key column's type (``id = '5'`` is ``id = 5``); a comparison the
binder had to widen the column for (``small = 2147483648``, ``id = 5.0``) is not a point test.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakectl.expr.check import CheckedStatement
from lakectl.expr.tree import INTEGRAL, Call, Col, Lit, Node
from lakectl.table.schema import Schema

# Key types whose values are equal in Spark exactly when they are equal in Python.
_KEY_TYPES = (*INTEGRAL, "string")


@dataclass(frozen=True)
class KeyedStatement:
    """A statement whose WHERE is ``key = constant`` or ``key IN (constants)`` and whose SET
    values are constants. ``keys`` are Python values of the key column's type (NULLs dropped:
    they match nothing); ``values`` maps each set column (schema name) to its bound constant."""

    kind: str
    key: str
    keys: tuple[int | str, ...]
    values: tuple[tuple[str, Lit], ...]


def keyed_form(stmt: CheckedStatement, schema: Schema) -> KeyedStatement | None:
    """The point form of ``stmt`` (checked against ``schema``), or ``None`` when it is not a
    point statement."""
    if stmt.condition is None:
        return None
    match = _key_condition(stmt.condition)
    if match is None:
        return None
    column, keys = match
    if column.type not in _KEY_TYPES or schema.find(column.name) is None:
        return None
    if any(name.lower() == column.name.lower() for name, _ in stmt.values):
        return None  # SET key = ...: the lookup would have to see the new key
    values = tuple((name, value) for name, value in stmt.values if isinstance(value, Lit))
    if len(values) != len(stmt.values):
        return None
    return KeyedStatement(stmt.kind, column.name, keys, values)


def _key_condition(where: Node) -> tuple[Col, tuple[int | str, ...]] | None:
    """The column and the non-NULL constants of ``col = constant`` (either side) or
    ``col IN (constants)``."""
    if not isinstance(where, Call):
        return None
    if where.op == "eq":
        left, right = where.args
        if isinstance(right, Col):
            left, right = right, left
        if isinstance(left, Col) and isinstance(right, Lit):
            keys = () if right.value is None else (right.value,)
            return left, keys  # type: ignore[return-value]
        return None
    if where.op == "in" and isinstance(where.args[0], Col):
        values, _, _ = where.param
        return where.args[0], tuple(values)
    return None


__all__ = ["KeyedStatement", "keyed_form"]
