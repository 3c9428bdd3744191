"""A bound expression (:mod:`lakectl.expr.tree`) as DuckDB SQL: DuckDB as a third opinion on
the Spark and Arrow back ends.

The translation starts from the *bound* tree, so every coercion the binder chose is already an
explicit cast and every constant a typed literal (``CAST('1.01' AS DECIMAL(10,2))``): DuckDB
checks the evaluation, not lakectl's typing rules.

Only operations whose DuckDB semantics are those of docs/guide/expressions.md are translated;
:func:`duckdb_sql` raises :class:`Outside` for the rest, naming the difference:

- in the subset: comparisons (DuckDB also orders NaN above every number and equates NaN with
  NaN and -0.0 with 0.0), AND/OR/NOT, IS NULL, ``<=>``, IN (three-valued with NULL items),
  BETWEEN (bound as two comparisons), LIKE/ILIKE (with Spark's ``\\`` escape), integer and
  decimal ``+ - *`` (both raise on integer overflow), ``/`` and ``%`` (with the documented
  "by zero is NULL" rule written as ``NULLIF``: DuckDB gives infinity or an error), unary
  minus, CASE, COALESCE, greatest/least, exact casts (widening numbers, dates and timestamps,
  integers, decimals, dates and booleans to text), upper, lower, reverse, length, trim,
  ``||``/concat, concat_ws, replace, lpad/rpad, locate from position 1, substring from a
  position >= 1, abs, sqrt, pow, floor/ceil/round of decimals and integers, year, month, day,
  date arithmetic and datediff;
- outside: see the ``Outside`` reasons below (each a documented DuckDB difference).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from lakectl.arrow.compile_expr import exact_cast
from lakectl.expr.tree import FLOATING, INTEGRAL, Call, Col, Lit, Node, decimal_parts

_TYPES = {
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "float": "REAL",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
}
_COMPARE = {"eq": "=", "neq": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_SAME_NAME = {"upper", "lower", "reverse", "coalesce", "greatest", "least", "abs", "sqrt", "pow"}


class Outside(Exception):
    """The expression uses an operation whose DuckDB semantics differ from lakectl's rule."""


def duck_type(type_name: str) -> str:
    """lakectl's type name in DuckDB."""
    parts = decimal_parts(type_name)
    if parts is not None:
        return f"DECIMAL({parts[0]},{parts[1]})"
    return _TYPES[type_name]


def duckdb_sql(node: Node) -> str:
    """``node`` as a DuckDB expression over the table's columns (quoted names), or
    :class:`Outside` naming why DuckDB would not give lakectl's result."""
    if isinstance(node, Col):
        return '"' + node.name.replace('"', '""') + '"'
    if isinstance(node, Lit):
        return duck_literal(node)
    assert isinstance(node, Call)
    args = [duckdb_sql(a) for a in node.args]
    op = node.op
    typed = lambda sql: f"CAST({sql} AS {duck_type(node.type)})"  # noqa: E731
    if op in _COMPARE:
        return f"({args[0]} {_COMPARE[op]} {args[1]})"
    if op == "eq_null_safe":
        return f"({args[0]} IS NOT DISTINCT FROM {args[1]})"
    if op in ("and", "or"):
        return f"({args[0]} {op.upper()} {args[1]})"
    if op == "not":
        return f"(NOT {args[0]})"
    if op == "is_null":
        return f"({args[0]} IS NULL)"
    if op == "in":
        return _in(node, args[0])
    if op == "like":
        pattern, insensitive = node.param
        keyword = "ILIKE" if insensitive else "LIKE"
        return f"({args[0]} {keyword} {_text(pattern)} ESCAPE '\\')"
    if op in ("add", "sub", "mul"):
        if node.param == "rounded":
            raise Outside("decimal results beyond 38 digits: DuckDB refuses, Spark rounds")
        symbol = {"add": "+", "sub": "-", "mul": "*"}[op]
        return typed(f"({args[0]} {symbol} {args[1]})")
    if op == "div":  # the documented rule (NULL) written out: DuckDB gives +-inf or NaN
        return f"({args[0]} / NULLIF({args[1]}, 0))"
    if op == "mod":  # by zero: the documented NULL (DuckDB raises)
        if node.type in INTEGRAL and _is_minus_one(node.args[1]):
            raise Outside("x % -1: DuckDB raises an overflow for the smallest integer, Spark 0")
        return typed(f"({args[0]} % NULLIF({args[1]}, 0))")
    if op == "neg":
        return typed(f"(- {args[0]})")
    if op == "cast":
        return _cast(node, args[0])
    if op == "case":
        pairs = zip(args[:-1:2], args[1:-1:2], strict=True)
        whens = " ".join(f"WHEN {c} THEN {v}" for c, v in pairs)
        return f"(CASE {whens} ELSE {args[-1]} END)"
    if op in _SAME_NAME:
        if op in ("greatest", "least") and node.type in FLOATING:
            raise Outside("greatest/least of floating-point numbers: the Arrow engine refuses")
        return typed(f"{op}({', '.join(args)})")
    if op == "length":
        return typed(f"length({args[0]})")
    if op == "trim":
        position, removed = node.param
        function = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        return f"{function}({args[0]}, {_text(removed)})"
    if op == "concat":  # DuckDB's concat() skips NULLs; || returns NULL as Spark's concat
        return "(" + " || ".join(args) + ")"
    if op == "concat_ws":
        return f"concat_ws({_text(str(node.param))}, {', '.join(args)})"
    if op == "replace":
        search, replacement = node.param
        return f"replace({args[0]}, {_text(search)}, {_text(replacement)})"
    if op == "pad":
        width, fill, left = node.param
        if fill == "":
            raise Outside("padding with '': Spark returns the text cut to the width")
        return f"{'lpad' if left else 'rpad'}({args[0]}, {int(width)}, {_text(fill)})"
    if op == "locate":
        substr, position = node.param
        if position != 1 or substr == "":
            raise Outside("locate from another position or of '': DuckDB's strpos has neither")
        return typed(f"strpos({args[0]}, {_text(substr)})")
    if op == "substring":
        return _substring(node, args)
    if op in ("floor", "ceil", "round"):
        return _rounding(node, args[0])
    if op in ("year", "month", "day"):
        return typed(f"{op}({args[0]})")
    if op == "date_add":
        return f"({args[0]} + {args[1]})"
    if op == "datediff":
        return typed(f"({args[0]} - {args[1]})")
    if op == "sign":
        raise Outside("sign(NaN): DuckDB gives 0, Spark NaN")
    if op == "initcap":
        raise Outside("initcap: DuckDB has no such function")
    raise Outside(f"{op}: not translated")


def duck_literal(node: Lit) -> str:
    """A typed constant: ``CAST(<text> AS <type>)`` (NULL of its type; untyped NULL as is)."""
    value = node.value
    if node.type == "null":
        return "NULL"
    if value is None:
        return f"CAST(NULL AS {duck_type(node.type)})"
    if node.type == "boolean":
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        text = "NaN" if math.isnan(value) else repr(value).replace("inf", "Infinity")
    elif isinstance(value, datetime):
        text = value.isoformat(sep=" ")
    elif isinstance(value, (date, Decimal, int)):
        text = value.isoformat() if isinstance(value, date) else str(value)
    else:
        text = str(value)
    return f"CAST({_text(text)} AS {duck_type(node.type)})"


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _is_minus_one(node: Node) -> bool:
    return not isinstance(node, Lit) or node.value == -1


def _in(node: Call, subject: str) -> str:
    values, has_null, _ = node.param
    items = [duck_literal(Lit(node.args[0].type, v)) for v in values]
    if has_null:
        items.append("NULL")
    return f"({subject} IN ({', '.join(items)}))"


def _cast(node: Call, arg: str) -> str:
    source, target = node.args[0].type, node.type
    if (source, target) == ("double", "float"):
        raise Outside("double to float: DuckDB raises beyond the float range, Spark infinity")
    if not exact_cast(source, target):
        raise Outside(f"cast from {source} to {target}: DuckDB rounds or raises where Spark not")
    return f"CAST({arg} AS {duck_type(target)})"


def _substring(node: Call, args: Sequence[str]) -> str:
    bounds = [a.value if isinstance(a, Lit) else None for a in node.args[1:]]
    if not all(isinstance(b, int) for b in bounds):
        raise Outside("substring with a computed position or length")
    position = int(str(bounds[0]))
    if position < 1 or (len(bounds) > 1 and int(str(bounds[1])) < 0):
        raise Outside("substring from position <= 0 or of a negative length: Spark's own rules")
    return f"substring({', '.join(args)})"


def _rounding(node: Call, arg: str) -> str:
    source = node.args[0].type
    if source in FLOATING:
        raise Outside(
            f"{node.op} of a floating-point number: Spark rounds NaN and infinity to a bigint"
        )
    if node.op == "round":
        return f"CAST(round({arg}, {int(node.param)}) AS {duck_type(node.type)})"
    return f"CAST({node.op}({arg}) AS {duck_type(node.type)})"


# What evaluating an expression gave: its value on every row, or ("fails", is it an overflow).
Outcome = list[Any] | tuple[str, bool]


class DuckTable:
    """A pyarrow table copied into an in-memory DuckDB database (session time zone UTC;
    timestamps as UTC wall-clock times), to evaluate expressions over its rows."""

    def __init__(self, table: Any) -> None:
        import duckdb
        import pyarrow as pa

        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.register("source", table.append_column("__row", pa.array(range(table.num_rows))))
        columns = ", ".join(
            f'CAST("{f.name}" AS TIMESTAMP) AS "{f.name}"'
            if str(f.type).startswith("timestamp")
            else f'"{f.name}"'
            for f in table.schema
        )
        self.con.execute(f"CREATE TABLE t AS SELECT __row, {columns} FROM source")
        self.con.unregister("source")

    def close(self) -> None:
        self.con.close()

    def values(
        self, conditions: dict[str, Node], *, optimize: bool = False
    ) -> dict[str, list[Any]]:
        """Each expression's value on every row, in the table's order, in one query.

        Without ``optimize`` DuckDB evaluates the expressions as written: its optimizer
        moves constants across comparisons (``a <= a + b`` to ``0 <= b``), which drops an
        integer overflow the expression has."""
        self.con.execute("PRAGMA enable_optimizer" if optimize else "PRAGMA disable_optimizer")
        selected = ", ".join(f'{duckdb_sql(node)} AS "{name}"' for name, node in conditions.items())
        rows = self.con.execute(f"SELECT {selected} FROM t ORDER BY __row").fetchall()
        return {name: [row[i] for row in rows] for i, name in enumerate(conditions)}

    def outcomes(self, conditions: dict[str, Node], *, optimize: bool) -> dict[str, Outcome]:
        """:meth:`values`, one query for all, or each alone where one of them fails."""
        import duckdb

        if not conditions:
            return {}
        try:
            return dict(self.values(conditions, optimize=optimize))
        except duckdb.Error:
            pass
        out: dict[str, Outcome] = {}
        for name, node in conditions.items():
            try:
                out[name] = self.values({name: node}, optimize=optimize)[name]
            except duckdb.Error as exc:
                out[name] = ("fails", "overflow" in str(exc).lower())
        return out


def duckdb_opinions(table: DuckTable, conditions: dict[str, Node]) -> dict[str, list[Outcome]]:
    """For each condition inside the translated subset (the others are left out): the
    outcomes DuckDB accepts on ``table``: evaluated as written and, where that fails, with its
    optimizer. Both count because SQL leaves open whether an operand whose value does not
    matter is evaluated (Spark and Arrow fold ``TRUE OR x`` to TRUE and never meet the
    overflow in ``x``; DuckDB as written does)."""
    inside: dict[str, Node] = {}
    for name, node in conditions.items():
        try:
            duckdb_sql(node)
        except Outside:
            continue
        inside[name] = node
    opinions = {name: [o] for name, o in table.outcomes(inside, optimize=False).items()}
    failed = {name: inside[name] for name, o in opinions.items() if isinstance(o[0], tuple)}
    for name, outcome in table.outcomes(failed, optimize=True).items():
        if outcome not in opinions[name]:
            opinions[name].append(outcome)
    return opinions


__all__ = [
    "DuckTable",
    "Outcome",
    "Outside",
    "duck_literal",
    "duck_type",
    "duckdb_opinions",
    "duckdb_sql",
]
