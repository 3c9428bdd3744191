"""A read's ``where`` condition as a pyarrow compute expression, and the literals of a
condition as Arrow scalars for stripe push-down.

The condition is bound once by the expression layer (:mod:`lakectl.expr`) and compiled by
:mod:`lakectl.expr.compile_arrow`, with Spark's results; :class:`Translator` gives stripe
statistics (:mod:`lakectl.arrow.pushdown`) the literals of a checked condition.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from lakectl.arrow.types import arrow_type
from lakectl.errors import UsageError
from lakectl.table.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
}


@functools.lru_cache(maxsize=64)
def arrow_filter(where: str, schema: Schema) -> pc.Expression:
    """``where`` (over ``schema``'s columns) as an Arrow filter expression, bound once by the
    expression layer (:mod:`lakectl.expr`); raises :class:`UsageError` naming a construct the
    Arrow engine does not evaluate with Spark's result."""
    from lakectl.expr import bind_where
    from lakectl.expr.compile_arrow import arrow_expression

    return arrow_expression(bind_where(where, schema), f"--where {where[:200]!r}")


def cast_text(text: str, target: pa.DataType) -> pa.Scalar:
    """``text`` as a scalar of ``target``, as Spark casts a string literal; a timestamp without
    an offset is UTC (lakectl's Spark session time zone)."""
    import pyarrow as pa

    value = pa.scalar(text)
    if pa.types.is_timestamp(target) and target.tz is not None:
        try:
            return value.cast(target)
        except pa.ArrowInvalid:
            return value.cast(pa.timestamp(target.unit)).cast(target)
    return value.cast(target)


class Translator:
    """The literals of checked sqlglot trees over ``schema``'s columns as Arrow scalars of the
    compared column's type (for stripe statistics); ``label`` names the text in errors."""

    def __init__(self, label: str, schema: Schema) -> None:
        self.label = label
        self.schema = schema

    def refuse(self, node: exp.Expression) -> UsageError:
        return UsageError(
            f"{self.label}: {node.sql(dialect='spark')!r} "
            f"({node.key.upper()}) is not supported by the Arrow reader",
            hint="read with --engine spark",
        )

    def literal_array(
        self, items: list[exp.Expression], typed: str
    ) -> tuple[pa.Array, bool] | None:
        """The non-NULL values of ``items`` as one array of the column's type, and whether a
        NULL is among them: what :meth:`literal` makes of each, converted in one cast (a
        literal at a time costs ~20 µs: seconds for the IN lists of a few statements). None
        when they are not all plain literals of one kind that all convert exactly (the
        caller then takes them one at a time)."""
        import pyarrow as pa

        target = arrow_type(typed)
        if pa.types.is_timestamp(target) and target.tz is not None:
            return None  # cast_text's own rules
        texts: list[str] = []
        has_null = False
        strings = None
        for item in items:
            node = _unwrapped(item)
            if isinstance(node, exp.Null):
                has_null = True
                continue
            if not isinstance(node, exp.Literal) or strings not in (None, node.is_string):
                return None
            strings = node.is_string
            texts.append(str(node.this))
        try:
            if not strings:
                texts = [str(Decimal(t)) for t in texts]
            return pa.array(texts, pa.string()).cast(target), has_null
        except (ArithmeticError, ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    def literal(self, node: exp.Expression, typed: str | None) -> Any:
        """A literal as a pyarrow scalar of the compared column's type (None for NULL)."""
        import pyarrow as pa

        negative = False
        while isinstance(node, exp.Paren | exp.Neg):
            if isinstance(node, exp.Neg):
                negative = not negative
            node = node.this
        if isinstance(node, exp.Null):
            return pa.scalar(None, arrow_type(typed)) if typed else pa.scalar(None)
        if isinstance(node, exp.Boolean):
            return pa.scalar(bool(node.this))
        if not isinstance(node, exp.Literal):
            raise self.refuse(node)
        text = node.this
        if node.is_string:
            if negative:
                raise self.refuse(node)
            if typed is None:
                return pa.scalar(text)
            try:
                return cast_text(text, arrow_type(typed))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise UsageError(f"{self.label}: {text!r} is not a {typed} value") from exc
        number = Decimal(("-" if negative else "") + text)
        if typed is not None:
            try:  # the column's type when the value fits it exactly
                return pa.scalar(str(number)).cast(arrow_type(typed))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        if number == number.to_integral_value() and "." not in text and "e" not in text.lower():
            return pa.scalar(int(number))
        return pa.scalar(float(number))


def _unwrapped(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def any_of(tests: list[pc.Expression]) -> pc.Expression:
    """The OR of ``tests`` as a balanced tree (as deep as the logarithm of their number)."""
    import pyarrow.compute as pc

    if not tests:
        return pc.scalar(False)
    while len(tests) > 1:
        pairs = [tests[i] | tests[i + 1] for i in range(0, len(tests) - 1, 2)]
        tests = pairs + tests[len(tests) - len(tests) % 2 :]
    return tests[0]


__all__ = ["Translator", "any_of", "arrow_filter", "cast_text"]
