"""A read's ``where`` condition as a pyarrow compute expression.

The condition is checked first as every ``--where`` is
(:func:`~lakectl.updates.validate.check_where`); then the constructs Arrow evaluates with
Spark's meaning are translated: comparisons of columns and literals (a literal takes the
column's type, as Spark casts it), ``AND``/``OR``/``NOT``, ``IS [NOT] NULL``, ``IN`` and
``BETWEEN`` over literals, ``[I]LIKE`` of a string column and a pattern. Anything else is refused with an error naming it, never guessed.
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
    """Checked sqlglot trees over ``schema``'s columns as Arrow expressions; ``label`` names
    the text they come from in errors."""

    def __init__(self, label: str, schema: Schema) -> None:
        self.label = label
        self.schema = schema

    def refuse(self, node: exp.Expression) -> UsageError:
        return UsageError(
            f"{self.label}: {node.sql(dialect='spark')!r} "
            f"({node.key.upper()}) is not supported by the Arrow reader",
            hint="it evaluates comparisons of columns with literals, AND, OR, NOT, IS NULL, IN, "
            "BETWEEN and LIKE (statements: SET to a literal or a column of the same type); read "
            "with the Spark engine for the rest",
        )

    def condition(self, node: exp.Expression) -> pc.Expression:
        import pyarrow.compute as pc

        if isinstance(node, exp.Paren):
            return self.condition(node.this)
        if isinstance(node, exp.And):
            return self.condition(node.this) & self.condition(node.expression)
        if isinstance(node, exp.Or):
            return self.condition(node.this) | self.condition(node.expression)
        if isinstance(node, exp.Not):
            return ~self.condition(node.this)
        if isinstance(node, exp.Boolean):
            return pc.scalar(bool(node.this))
        if isinstance(node, exp.Column):
            if self.schema[node.name].type != "boolean":
                raise self.refuse(node)
            return pc.field(self.column_name(node))
        comparison = _COMPARISONS.get(type(node))
        if comparison is not None:
            left, right = node.this, node.expression
            typed = self.column_type(left) or self.column_type(right)
            return getattr(pc, comparison)(self.value(left, typed), self.value(right, typed))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return self.value(node.this, None).is_null()
        if isinstance(node, exp.In) and not node.args.get("query"):
            typed = self.column_type(node.this)
            if typed is None:
                raise self.refuse(node)
            return self.membership(node, typed)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.like(node)
        if isinstance(node, exp.Between):
            typed = self.column_type(node.this)
            subject = self.value(node.this, typed)
            low, high = self.value(node.args["low"], typed), self.value(node.args["high"], typed)
            return pc.greater_equal(subject, low) & pc.less_equal(subject, high)
        raise self.refuse(node)

    def like(self, node: exp.Like | exp.ILike) -> pc.Expression:
        """``column [I]LIKE 'pattern'`` on a string column. Arrow matches with RE2, in time
        linear in the value's length; its reading of ``%``, ``_`` and ``\\`` escapes is Spark's
        for every pattern the checks accept. ILIKE lower-cases both sides, as Spark does."""
        import pyarrow.compute as pc

        pattern = node.expression
        if self.column_type(node.this) not in ("string", None) or not (
            isinstance(pattern, exp.Literal) and pattern.is_string
        ):
            raise self.refuse(node)
        subject = self.value(node.this, None)
        if isinstance(node, exp.ILike):
            matched = pc.match_like(pc.utf8_lower(subject), str(pattern.this).lower())
        else:
            matched = pc.match_like(subject, str(pattern.this))
        return pc.invert(matched) if node.args.get("negate") else matched

    def membership(self, node: exp.In, typed: str) -> pc.Expression:
        """``subject IN (items)`` with SQL's three-valued result: true when an item equals the
        subject; otherwise NULL when the subject or an item is NULL (so ``NOT IN`` keeps
        nothing there either), else false.

        Literals of the subject's type are looked up in one hash set, whatever their number (an
        OR of thousands of equalities is a tree as deep as the list, which overflows Arrow's
        stack); a literal that only compares as another type (``1.5`` against an integer
        column) is looked up with the subject cast to that type, as the equality would; other
        items (columns) are equalities."""
        import pyarrow as pa
        import pyarrow.compute as pc

        subject = self.value(node.this, typed)
        bulk = self.literal_array(node.expressions, typed)
        if bulk is not None:
            values, has_null = bulk
            found = pc.is_in(subject, value_set=values, skip_nulls=True)
            return _three_valued(subject, found, has_null)
        target = arrow_type(typed)
        by_type: dict[pa.DataType, list[Any]] = {}
        others: list[pc.Expression] = []
        has_null = False
        for item in node.expressions:
            if isinstance(_unwrapped(item), exp.Column):
                others.append(pc.equal(subject, self.value(item, typed)))
                continue
            scalar = self.literal(item, typed)
            if not scalar.is_valid:
                has_null = True
                continue
            by_type.setdefault(scalar.type, []).append(scalar.as_py())
        tests = list(others)
        for value_type, values in by_type.items():
            if value_type != target and len(values) == 1:
                tests.append(pc.equal(subject, pc.scalar(pa.scalar(values[0], value_type))))
                continue
            looked_up = subject if value_type == target else subject.cast(value_type, safe=False)
            value_set = pa.array(values, value_type)
            tests.append(pc.is_in(looked_up, value_set=value_set, skip_nulls=True))
        return _three_valued(subject, any_of(tests), has_null)

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

    def column_name(self, node: exp.Expression) -> str:
        assert isinstance(node, exp.Column)
        return self.schema[node.name].name

    def column_type(self, node: exp.Expression) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            return self.schema[node.name].type
        return None

    def value(self, node: exp.Expression, typed: str | None) -> pc.Expression:
        import pyarrow.compute as pc

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            return pc.field(self.column_name(node))
        return pc.scalar(self.literal(node, typed))

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


def _three_valued(subject: pc.Expression, found: pc.Expression, has_null: bool) -> pc.Expression:
    """SQL's IN from ``found`` (true where a non-NULL item equals the subject, else false):
    NULL for a NULL subject, and where nothing is found in a list holding NULL."""
    import pyarrow as pa
    import pyarrow.compute as pc

    unknown = pc.scalar(pa.scalar(None, pa.bool_()))
    if has_null:  # never false: true where found, else unknown
        return pc.if_else(found, pc.scalar(True), unknown)
    return pc.if_else(pc.is_null(subject), unknown, found)


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
