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
from lakectl.expr.tree import FLOATING, INTEGRAL, INTEGRAL_BITS, Call, Col, Lit, Node

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
    if _NATURAL.get(type(value)) == node.type:  # F.lit types it so already: no cast needed
        return F.lit(value)
    return F.lit(value).cast(node.type)


# The Spark type F.lit gives a Python value of each class (ints: of int's range only).
_NATURAL = {str: "string", bool: "boolean"}


_LIMITS = {"int": 2**31, "bigint": 2**63}


def _unless_out_of_range(value: Column, fits: Callable[[Column], Column], type_name: str) -> Column:
    """``value`` as ``type_name`` where ``fits`` is true of it (or it is NULL), else the overflow
    error; tested in a lambda that reads ``value`` once, so that nested arithmetic does not
    copy its operands."""
    from pyspark.sql import functions as F

    def checked(x: Column) -> Column:
        return F.when(x.isNull() | fits(x), x.cast(type_name)).otherwise(
            F.raise_error(F.lit(OVERFLOW)).cast(type_name)
        )

    return F.transform(F.array(value), checked).getItem(0)


def _checked(op: str) -> Callable[[Call, list[Column]], Column]:
    """``+``, ``-`` or ``*``: exact for decimals and doubles; for integers computed exactly
    (as decimal(38,0): no product of two bigints needs more digits) and checked against the
    type's range, raising the overflow error."""

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


def _fit(node: Call, args: list[Column]) -> Column:
    """A number stored into a narrower integer type: a fraction is dropped (toward zero); a
    value outside the type's range, NaN or an infinity is the overflow error."""
    from decimal import Decimal

    from pyspark.sql import functions as F

    source, limit = node.args[0].type, 2 ** (INTEGRAL_BITS[node.type] - 1)
    if source in INTEGRAL:
        low, high = F.lit(-limit), F.lit(limit - 1)
        return _unless_out_of_range(args[0], lambda x: x.between(low, high), node.type)
    if source in FLOATING:  # NaN is above every number: it fails the upper bound
        above = float(-limit - 1) if limit <= 2**52 else None  # -2**63 - 1 is no double
        return _unless_out_of_range(
            args[0],
            lambda x: (
                (x >= F.lit(float(-limit)) if above is None else x > F.lit(above))
                & (x < F.lit(float(limit)))
            ),
            node.type,
        )
    bounds = [F.lit(str(Decimal(v))).cast("decimal(20,0)") for v in (-limit - 1, limit)]
    return _unless_out_of_range(args[0], lambda x: (x > bounds[0]) & (x < bounds[1]), node.type)


def _in_range(value: Column, type_name: str) -> Column:
    """An exact integer (decimal) ``value`` as ``type_name``, raising the overflow error
    where it does not fit."""
    from pyspark.sql import functions as F

    limit = _LIMITS[type_name]
    return _unless_out_of_range(
        value, lambda x: x.between(F.lit(-limit), F.lit(limit - 1)), type_name
    )


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
    kind = node.args[0].type
    if not values:
        found = F.lit(False)
    elif kind in INTEGRAL or kind == "string":
        found = _isin_plain(subject, list(values))
    else:
        found = subject.isin(*[_literal(Lit(kind, v)) for v in values])
    if has_null:
        return F.when(found, F.lit(True)).otherwise(F.lit(None).cast("boolean"))
    return found


def _isin_plain(subject: Column, values: list[object]) -> Column:
    """``subject IN (values)`` for Python ints or strings of ``subject``'s type: Spark types
    them int, bigint or string and widens them to the subject's type exactly. In one call
    into the JVM (a Column per item costs a call or two each: seconds for 30,000 items)."""
    from pyspark import SparkContext

    java = getattr(subject, "_jc", None)
    context = SparkContext._active_spark_context
    if java is None or context is None:  # Spark Connect: Columns are built without the JVM
        return subject.isin(values)
    sequence = context._jvm.PythonUtils.toSeq(values)  # type: ignore[union-attr]
    return type(subject)(java.isin(sequence))  # type: ignore[call-arg]


def _like(node: Call, args: list[Column]) -> Column:
    """LIKE/ILIKE; with two or more ``%``, as the linear regular expression of
    :mod:`lakectl.expr.like` (Spark's own LIKE backtracks: cubic in the value's length for
    ``%a%a%b``). ILIKE lower-cases both sides, as Spark does."""
    from pyspark.sql import functions as F

    from lakectl.expr.like import linear_regex, parse_like

    pattern, insensitive = node.param
    value = args[0]
    if insensitive:
        value, pattern = F.lower(value), pattern.lower()
    parsed = parse_like(pattern)
    if parsed.wildcards >= 2:
        return value.rlike(linear_regex(parsed))
    return value.like(pattern)


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
    "fit": _fit,
    "hash": _fn("hash"),
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

# The operations a bound tree may hold that Spark can evaluate.
SPARK_OPERATIONS = frozenset(_CALLS)

__all__ = ["SPARK_OPERATIONS", "spark_column"]
