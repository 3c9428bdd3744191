"""The typed tree as a Spark ``Column``, built with Column functions only: no user text ever
reaches Spark's SQL parser. Every conversion is explicit in the tree, so Spark's own implicit
coercions never apply; integer overflow raises an error instead of wrapping.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from lakectl.errors import OVERFLOW
from lakectl.expr.tree import INTEGRAL, Call, Col, Lit, Node

if TYPE_CHECKING:
    from pyspark.sql import Column


def spark_column(node: Node) -> Column:
    """``node`` as a Spark Column over the table's columns (by name)."""
    return _column(node, {})


def _column(node: Node, done: dict[int, Column]) -> Column:
    """:func:`spark_column`, building a subtree the tree shares once."""
    from pyspark.sql import functions as F

    known = done.get(id(node))
    if known is not None:
        return known
    if isinstance(node, Col):
        return F.col(f"`{node.name.replace('`', '``')}`")
    if isinstance(node, Lit):
        return _literal(node)
    assert isinstance(node, Call)
    build = _CALLS.get(node.op)
    if build is None:
        raise AssertionError(f"no Spark form for {node.op}")
    result = build(node, [_column(a, done) for a in node.args])
    done[id(node)] = result
    return result


def _literal(node: Lit) -> Column:
    from pyspark.sql import functions as F

    value = node.value
    if value is None or node.type == "null":
        return F.lit(None) if node.type == "null" else F.lit(None).cast(node.type)
    if isinstance(value, datetime):
        return F.lit(value.isoformat(sep=" ")).cast("timestamp")
    if isinstance(value, date):
        return F.lit(value.isoformat()).cast("date")
    if isinstance(value, Decimal):
        return F.lit(str(value)).cast(node.type)
    return F.lit(value).cast(node.type)


_LIMITS = {"int": 2**31, "bigint": 2**63}


def _checked(op: str) -> Callable[[Call, list[Column]], Column]:
    """``+``, ``-`` or ``*``: exact for decimals and doubles; for integers computed exactly
    (as decimal(38,0): no product of two bigints needs more digits) and checked against the
    type's range in a lambda that reads the result once (so that nested arithmetic does not
    copy its operands), raising the overflow error outside it."""

    def build(node: Call, args: list[Column]) -> Column:
        a, b = args
        if node.type not in INTEGRAL:
            result = {"add": a + b, "sub": a - b, "mul": a * b}[op]
            return result.cast(node.type)
        exact = [x.cast("decimal(38,0)") for x in (a, b)]
        value = {"add": exact[0] + exact[1], "sub": exact[0] - exact[1]}.get(op)
        if value is None:
            value = exact[0] * exact[1]
        return _in_range(value, node.type)

    return build


def _in_range(value: Column, type_name: str) -> Column:
    """An exact integer (decimal) ``value`` as ``type_name``, raising the overflow error
    where it does not fit (in a lambda that reads it once)."""
    from pyspark.sql import functions as F

    limit = _LIMITS[type_name]

    def checked(x: Column) -> Column:
        fits = x.isNull() | x.between(F.lit(-limit), F.lit(limit - 1))
        return F.when(fits, x.cast(type_name)).otherwise(
            F.raise_error(F.lit(OVERFLOW)).cast(type_name)
        )

    return F.transform(F.array(value), checked).getItem(0)


def _neg(node: Call, args: list[Column]) -> Column:
    """``-x``; of an integer, checked (``-(-2147483648)`` does not fit an int)."""
    if node.type in INTEGRAL:
        return _in_range(-args[0].cast("decimal(38,0)"), node.type)
    return (-args[0]).cast(node.type)


def _abs(node: Call, args: list[Column]) -> Column:
    """``abs(x)``; of an integer, checked as :func:`_neg`."""
    from pyspark.sql import functions as F

    if node.type in INTEGRAL:
        return _in_range(F.abs(args[0].cast("decimal(38,0)")), node.type)
    return F.abs(args[0]).cast(node.type)


def _case(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    pairs = list(zip(args[:-1:2], args[1:-1:2], strict=True))
    result = F.when(pairs[0][0], pairs[0][1])
    for condition, value in pairs[1:]:
        result = result.when(condition, value)
    return result.otherwise(args[-1])


def _in(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    values, has_null, _ = node.param
    subject = args[0]
    items = [_literal(Lit(node.args[0].type, v)) for v in values]
    found = subject.isin(*items) if items else F.lit(False)
    if has_null:
        return F.when(found, F.lit(True)).otherwise(F.lit(None).cast("boolean"))
    return found


def _like(node: Call, args: list[Column]) -> Column:
    pattern, insensitive = node.param
    return args[0].ilike(pattern) if insensitive else args[0].like(pattern)


def _trim(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    position, removed = node.param
    fn = {"LEADING": F.ltrim, "TRAILING": F.rtrim}.get(position, F.trim)
    return fn(args[0], F.lit(removed))


def _mod(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    a, b = args
    return F.when(b == 0, F.lit(None).cast(node.type)).otherwise(a % b).cast(node.type)


def _div(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    a, b = args
    return F.when(b == 0, F.lit(None).cast("double")).otherwise(a / b)


def _pad(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    width, fill, left = node.param
    return (F.lpad if left else F.rpad)(args[0], width, fill)


def _locate(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    substr, position = node.param
    return F.locate(substr, args[0], position)


def _substring(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    length = args[2] if len(args) > 2 else F.lit(2**31 - 1)
    return F.substring(args[0], args[1], length)


def _replace(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    search, replacement = node.param
    return F.replace(args[0], F.lit(search), F.lit(replacement))


def _fn(name: str) -> Callable[[Call, list[Column]], Column]:
    def build(node: Call, args: list[Column]) -> Column:
        from pyspark.sql import functions as F

        return getattr(F, name)(*args).cast(node.type)

    return build


def _op(symbol: str) -> Callable[[Call, list[Column]], Column]:
    def build(node: Call, args: list[Column]) -> Column:
        a, b = args
        result: Column = {
            "eq": a == b,
            "neq": a != b,
            "lt": a < b,
            "le": a <= b,
            "gt": a > b,
            "ge": a >= b,
            "eq_null_safe": a.eqNullSafe(b),
            "and": a & b,
            "or": a | b,
        }[symbol]
        return result

    return build


def _concat_ws(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    return F.concat_ws(str(node.param), *args)


def _round(node: Call, args: list[Column]) -> Column:
    from pyspark.sql import functions as F

    return F.round(args[0], int(node.param)).cast(node.type)


_CALLS: dict[str, Callable[[Call, list[Column]], Column]] = {
    **{op: _op(op) for op in ("eq", "neq", "lt", "le", "gt", "ge", "eq_null_safe", "and", "or")},
    "not": lambda n, a: ~a[0],
    "is_null": lambda n, a: a[0].isNull(),
    "in": _in,
    "like": _like,
    "add": _checked("add"),
    "sub": _checked("sub"),
    "mul": _checked("mul"),
    "div": _div,
    "mod": _mod,
    "neg": _neg,
    "cast": lambda n, a: a[0].cast(n.type),
    "case": _case,
    "coalesce": _fn("coalesce"),
    "greatest": _fn("greatest"),
    "least": _fn("least"),
    "upper": _fn("upper"),
    "lower": _fn("lower"),
    "initcap": _fn("initcap"),
    "reverse": _fn("reverse"),
    "length": _fn("length"),
    "trim": _trim,
    "concat": _fn("concat"),
    "concat_ws": _concat_ws,
    "replace": _replace,
    "pad": _pad,
    "locate": _locate,
    "substring": _substring,
    "abs": _abs,
    "sign": _fn("signum"),
    "sqrt": _fn("sqrt"),
    "pow": _fn("pow"),
    "floor": _fn("floor"),
    "ceil": _fn("ceil"),
    "round": _round,
    "year": _fn("year"),
    "month": _fn("month"),
    "day": _fn("dayofmonth"),
    "date_add": _fn("date_add"),
    "datediff": _fn("datediff"),
}

__all__ = ["spark_column"]
