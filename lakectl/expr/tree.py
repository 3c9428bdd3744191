"""The canonical typed expression tree every engine compiles.

A bound expression (:mod:`lakectl.expr.bind`) is made of three node kinds: a column of the
table (:class:`Col`), a constant already converted to its type (:class:`Lit`) and an operation
(:class:`Call`) whose arguments have exactly the types the operation needs (the binder inserts
every conversion as an explicit ``cast``). Back ends therefore never coerce: they map each
operation to their own function.

Types are lakectl's canonical Spark type names (``int``, ``decimal(10,2)``, ``timestamp``, ...)
plus ``null`` for an untyped NULL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

INTEGRAL = ("tinyint", "smallint", "int", "bigint")
FLOATING = ("float", "double")
INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}
INTEGRAL_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


@dataclass(frozen=True)
class Node:
    """A typed expression node."""

    type: str


@dataclass(frozen=True)
class Col(Node):
    """A column of the table, by its schema name."""

    name: str


@dataclass(frozen=True)
class Lit(Node):
    """A constant of ``type`` (Python value: int, float, Decimal, str, bool, date, datetime in
    UTC without tzinfo, or None); ``origin`` identifies the parsed node it was written as (0
    when the binder made it), for back ends that render parsed trees."""

    value: object
    origin: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Call(Node):
    """An operation over typed arguments; ``param`` holds what is not an expression (a LIKE
    pattern, the values of an IN list, the scale of round, ...)."""

    op: str
    args: tuple[Node, ...]
    param: Any = None


def decimal_parts(type_name: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a decimal type, else None."""
    match = _DECIMAL.fullmatch(type_name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def is_numeric(type_name: str) -> bool:
    """Integral, floating or decimal."""
    return type_name in INTEGRAL or type_name in FLOATING or type_name.startswith("decimal(")


def as_decimal(type_name: str) -> tuple[int, int] | None:
    """The decimal type holding every value of an integral or decimal type."""
    if type_name in INTEGRAL_DIGITS:
        return INTEGRAL_DIGITS[type_name], 0
    return decimal_parts(type_name)


def decimal_type(precision: int, scale: int) -> str:
    """``decimal(p,s)`` text."""
    return f"decimal({precision},{scale})"


def walk(node: Node) -> list[Node]:
    """``node`` and its descendants, parents first, each once (a bound tree may share a
    subtree, as NULLIF shares its first argument)."""
    out: list[Node] = []
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        out.append(current)
        if isinstance(current, Call):
            stack.extend(reversed(current.args))
    return out


__all__ = [
    "FLOATING",
    "INTEGRAL",
    "Call",
    "Col",
    "Lit",
    "Node",
    "as_decimal",
    "decimal_parts",
    "decimal_type",
    "is_numeric",
    "walk",
]
