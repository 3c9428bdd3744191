"""The typed tree as a pyarrow compute expression with Spark's results.

Where Arrow's kernels differ from Spark they are wrapped: NaN equals NaN and is larger than
every number; -0.0 equals 0.0 (also in IN lists); division and modulo by zero give NULL;
integer arithmetic uses the checked kernels (an overflow is an error); IN lists of any length
are one hash-set lookup (``is_in``) with SQL's three-valued result. Functions and casts no
Arrow kernel computes as Spark does (initcap, locate, rounding of doubles, casts from and to
text, ...) run value by value as pyarrow scalar functions (:mod:`lakectl.expr.spark_values`).
An operation Arrow cannot evaluate with Spark's result is refused
(:class:`~lakectl.errors.UsageError`) naming it.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.expr import spark_values
from lakectl.expr.tree import (
    FLOATING,
    INTEGRAL,
    INTEGRAL_BITS,
    INTEGRAL_DIGITS,
    Call,
    Col,
    Lit,
    Node,
    decimal_parts,
)

if TYPE_CHECKING:
    import pyarrow.compute as pc


def arrow_expression(node: Node, label: str) -> pc.Expression:
    """``node`` as an Arrow expression over the table's columns (by name)."""
    return _Compiler(label).compile(node)


def arrow_scalar(node: Lit) -> Any:
    """A constant as a pyarrow scalar of its type."""
    import pyarrow as pa

    from lakectl.arrow.types import arrow_type

    if node.type == "null":
        return pa.scalar(None)
    target = arrow_type(node.type)
    if node.value is None:
        return pa.scalar(None, target)
    if node.type == "timestamp":
        import datetime as dt

        value = node.value
        assert isinstance(value, dt.datetime)
        return pa.scalar(value.replace(tzinfo=dt.UTC), target)
    return pa.scalar(node.value, target)


class _Compiler:
    def __init__(self, label: str) -> None:
        self.label = label
        self.done: dict[int, pc.Expression] = {}  # subtrees the tree shares, built once

    def refuse(self, node: Call, why: str = "") -> UsageError:
        return UsageError(
            f"{self.label}: {node.op}{' (' + why + ')' if why else ''} is not supported by the "
            "Arrow reader (it would not give Spark's result)",
            hint="read with --engine spark",
        )

    def compile(self, node: Node) -> pc.Expression:
        import pyarrow.compute as pc

        if isinstance(node, Col):
            return pc.field(node.name)
        if isinstance(node, Lit):
            return pc.scalar(arrow_scalar(node))
        assert isinstance(node, Call)
        known = self.done.get(id(node))
        if known is not None:
            return known
        method = getattr(self, f"_{node.op}", None)
        if method is None:
            raise self.refuse(node)
        result: pc.Expression = method(node, [self.compile(a) for a in node.args])
        self.done[id(node)] = result
        return result

    # logic -----------------------------------------------------------------------------------

    def _and(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return a[0] & a[1]

    def _or(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return a[0] | a[1]

    def _not(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return ~a[0]

    def _is_null(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.is_null(a[0], nan_is_null=False)

    # comparisons ------------------------------------------------------------------------------

    def _compare(self, op: str, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        left, right = a
        if node.args[0].type not in FLOATING:
            return getattr(pc, op)(left, right)
        nan_l, nan_r = pc.is_nan(left), pc.is_nan(right)
        plain = getattr(pc, "equal" if op == "not_equal" else op)(left, right)
        spark = {  # NaN = NaN, NaN above every number
            "equal": plain | (nan_l & nan_r),
            "not_equal": ~(plain | (nan_l & nan_r)),
            "less": ~nan_l & (nan_r | plain),
            "less_equal": nan_r | (~nan_l & plain),
            "greater": ~nan_r & (nan_l | plain),
            "greater_equal": nan_l | (~nan_r & plain),
        }[op]
        unknown = pc.is_null(left) | pc.is_null(right)
        return pc.if_else(unknown, pc.scalar(_null_bool()), spark)

    def _eq(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("equal", node, a)

    def _neq(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("not_equal", node, a)

    def _lt(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("less", node, a)

    def _le(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("less_equal", node, a)

    def _gt(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("greater", node, a)

    def _ge(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._compare("greater_equal", node, a)

    def _eq_null_safe(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        both_null = pc.is_null(a[0]) & pc.is_null(a[1])
        either_null = pc.is_null(a[0]) | pc.is_null(a[1])
        equal = self._compare("equal", node, a)
        return pc.if_else(either_null, both_null, equal)

    def _in(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        values, has_null, _ = node.param
        subject = a[0]
        subject_type = node.args[0].type
        if subject_type == "timestamp":  # the values are UTC
            items = [arrow_scalar(Lit(subject_type, v)).as_py() for v in values]
            value_set = pa.array(items, arrow_type(subject_type))
        else:  # one conversion for the whole list
            value_set = pa.array(values, arrow_type(subject_type))
        if subject_type in FLOATING:  # -0.0 is 0.0
            zero = pc.scalar(pa.scalar(0.0, arrow_type(subject_type)))
            subject = pc.if_else(pc.equal(subject, zero), zero, subject)
            value_set = pc.if_else(
                pc.equal(value_set, 0.0), pa.scalar(0.0, value_set.type), value_set
            )
        found = pc.is_in(subject, value_set=value_set, skip_nulls=True)
        unknown = pc.scalar(_null_bool())
        if has_null:
            return pc.if_else(found, pc.scalar(True), unknown)
        return pc.if_else(pc.is_null(subject), unknown, found)

    def _like(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        from lakectl.expr.like import parse_like, re2_regex

        # Spark's reading of the pattern (``\\`` escapes ``%``, ``_`` and itself) as an RE2
        # regex: Arrow's own LIKE reads an escaped backslash otherwise.
        pattern, insensitive = node.param
        if insensitive:
            regex = re2_regex(parse_like(pattern.lower()))
            return pc.match_substring_regex(pc.utf8_lower(a[0]), regex)
        return pc.match_substring_regex(a[0], re2_regex(parse_like(pattern)))

    # arithmetic ------------------------------------------------------------------------------

    def _arith(self, kernel: str, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        if node.param == "rounded":  # decimals beyond 38 digits: exact, then rounded
            parts = decimal_parts(node.type)
            assert parts is not None
            op = node.op

            def rounded(left: Decimal, right: Decimal) -> object:
                return spark_values.decimal_arithmetic(op, left, right, parts)

            types = [arg.type for arg in node.args]
            return _python(f"decimal_{op}", rounded, a, types, node.type)
        if node.type in INTEGRAL:
            kernel += "_checked"
        return getattr(pc, kernel)(a[0], a[1]).cast(arrow_type(node.type))

    def _add(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._arith("add", node, a)

    def _sub(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._arith("subtract", node, a)

    def _mul(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._arith("multiply", node, a)

    def _div(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        zero = pc.equal(a[1], 0.0)
        return pc.if_else(zero, pc.scalar(_null("double")), pc.divide(a[0], a[1]))

    def _mod(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        if node.type not in INTEGRAL:  # Java's remainder of doubles and decimals
            types = [node.args[0].type, node.args[1].type]
            return _python("mod", spark_values.remainder, a, types, node.type)
        zero = pc.equal(a[1], 0)
        safe = pc.if_else(zero, pc.scalar(1).cast(arrow_type(node.type)), a[1])
        quotient = pc.divide(a[0], safe)  # integer division truncates, as Java's does
        rest = pc.subtract(a[0], pc.multiply(quotient, safe))
        return pc.if_else(zero, pc.scalar(_null(node.type)), rest)

    def _neg(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.negate_checked(a[0])  # -(-2147483648) is an overflow, as in Spark

    def _abs(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.abs_checked(a[0])

    def _cast(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        from lakectl.arrow.types import arrow_type

        source, target = node.args[0].type, node.type
        if not exact_cast(source, target):
            convert = spark_values.cast_function(source, target)
            if convert is None:
                raise self.refuse(node, f"from {source} to {target}")
            name = f"cast_{source}_to_{target}"
            value, value_type = a[0], source
            if source in _TEMPORAL_NUMBER and target != "string":  # days or microseconds
                value_type = _TEMPORAL_NUMBER[source]
                value = value.cast(arrow_type(value_type))
            return _python(name, lambda v: convert(v), [value], [value_type], target)
        # to floating point: rounded to the nearest value, as Spark does (no check)
        return a[0].cast(arrow_type(target), safe=target not in FLOATING)

    def _fit(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        """A number stored into a narrower integer type, as Spark's form (lakectl.spark.compile_expr): a
        fraction dropped toward zero; out of range, NaN or infinite is the overflow error."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        source, value = node.args[0].type, a[0]
        limit = 2 ** (INTEGRAL_BITS[node.type] - 1)
        if source in INTEGRAL:
            bad = pc.less(value, -limit) | pc.greater_equal(value, limit)
        elif source in FLOATING:
            low = pc.scalar(float(-limit - 1) if limit <= 2**52 else float(-limit))
            below = pc.less_equal(value, low) if limit <= 2**52 else pc.less(value, low)
            bad = pc.is_nan(value) | below | pc.greater_equal(value, pc.scalar(float(limit)))
            value = pc.trunc(value)
        else:
            bounds = [pa.scalar(Decimal(v), pa.decimal128(20, 0)) for v in (-limit - 1, limit)]
            bad = pc.less_equal(value, bounds[0]) | pc.greater_equal(value, bounds[1])
            value = pc.trunc(value)
        flagged = pc.coalesce(bad, pc.scalar(False))
        # an error Arrow raises when any row is flagged: a checked sum past the int64 range
        failed = pc.add_checked(
            pc.if_else(flagged, pc.scalar(2**63 - 1), pc.scalar(0)),
            pc.if_else(flagged, pc.scalar(1), pc.scalar(0)),
        )
        stored = value.cast(arrow_type(node.type), safe=False)
        return pc.if_else(pc.equal(failed, 0), stored, stored)

    def _case(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        result = a[-1]
        for condition, value in reversed(list(zip(a[:-1:2], a[1:-1:2], strict=True))):
            result = pc.if_else(pc.coalesce(condition, pc.scalar(False)), value, result)
        return result

    def _coalesce(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.coalesce(*a)

    # strings and dates -----------------------------------------------------------------------

    # Arrow's kernels map one character to one (ß to ẞ, no final sigma); Java maps ß to SS:
    # ASCII batches use the kernel, others Python's full case mapping (Java's).

    def _upper(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return _python("upper", str.upper, a, ["string"], "string", ascii_kernel="utf8_upper")

    def _lower(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return _python("lower", str.lower, a, ["string"], "string", ascii_kernel="utf8_lower")

    def _length(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.utf8_length(a[0]).cast(pa.int32())

    def _trim(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        position, removed = node.param
        kernel = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(position, pc.utf8_trim)
        return kernel(a[0], characters=removed)

    def _concat(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.binary_join_element_wise(*a, "", null_handling="emit_null")

    def _concat_ws(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.binary_join_element_wise(*a, str(node.param), null_handling="skip")

    def _initcap(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return _python("initcap", spark_values.initcap, a, ["string"], "string")

    def _locate(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        substring, position = node.param
        args = [a[0], pc.scalar(pa.scalar(str(substring))), pc.scalar(pa.scalar(int(position)))]
        types = ["string", "string", "bigint"]
        return _python("locate", spark_values.locate, args, types, "int")

    def _reverse(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.utf8_reverse(a[0])

    def _date_part(self, kernel: str, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        return getattr(pc, kernel)(a[0]).cast(pa.int32())

    def _year(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._date_part("year", a)

    def _month(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._date_part("month", a)

    def _day(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._date_part("day", a)

    def _date_add(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        days = pc.add_checked(a[0].cast(pa.int32()), a[1].cast(pa.int32()))
        return days.cast(pa.date32())

    def _datediff(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.subtract(a[0].cast(pa.int32()), a[1].cast(pa.int32()))

    def _floor(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._rounding("floor", node, a)

    def _ceil(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._rounding("ceil", node, a)

    def _rounding(self, kernel: str, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        source = node.args[0].type
        if source in INTEGRAL:
            return a[0].cast(arrow_type(node.type))
        if source in FLOATING:  # Java's cast of the double to a long
            up = kernel == "ceil"
            value = a[0].cast(arrow_type("double"))
            name = kernel + "_double"
            return _python(
                name, lambda v: spark_values.floor_ceil(v, up), [value], ["double"], "bigint"
            )
        return getattr(pc, kernel)(_headroom(a[0], source)).cast(arrow_type(node.type))

    def _round(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        from lakectl.arrow.types import arrow_type

        source, scale = node.args[0].type, int(node.param)
        if source in INTEGRAL and scale >= 0:
            return a[0]
        if source in INTEGRAL or source in FLOATING:  # half up, from the decimal Spark prints
            import pyarrow as pa

            def rounded_value(value: Any, digits: int) -> Any:
                return spark_values.round_half_up(value, digits, source)

            args = [a[0], pc.scalar(pa.scalar(scale))]
            return _python(f"round_{source}", rounded_value, args, [source, "bigint"], source)
        rounded = pc.round(_headroom(a[0], source), ndigits=scale, round_mode="half_up")
        return rounded.cast(arrow_type(node.type))

    def _sign(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.sign(a[0]).cast(pa.float64())

    def _sqrt(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.sqrt(a[0])

    def _pow(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.power(a[0], a[1])

    def _greatest(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._extreme("max_element_wise", node, a)

    def _least(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        return self._extreme("min_element_wise", node, a)

    def _extreme(self, kernel: str, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        if node.type in FLOATING:  # NaN above every number
            greatest = kernel == "max_element_wise"

            def pick(*values: Any) -> Any:
                return spark_values.extreme(list(values), greatest)

            types = [n.type for n in node.args]
            name = kernel[:3]
            return _python(name, pick, a, types, node.type, strict=False)
        return getattr(pc, kernel)(*a, skip_nulls=True)

    def _substring(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        bounds = [arg.value if isinstance(arg, Lit) else None for arg in node.args[1:]]
        if not all(isinstance(b, int) for b in bounds):
            types = [n.type for n in node.args]
            return _python("substring", spark_values.substring, a, types, "string")
        position = int(str(bounds[0]))
        length = int(str(bounds[1])) if len(bounds) > 1 else None
        if length is not None and length <= 0:
            return pc.if_else(pc.is_null(a[0]), a[0], pc.scalar(""))
        # Spark: 1-based; 0 is the first character; negative counts from the end
        start = position - 1 if position > 0 else position
        stop: int | None = None
        if length is not None:
            end = start + length
            stop = None if position < 0 and end >= 0 else end
        return pc.utf8_slice_codeunits(a[0], start=start, stop=stop)

    def _replace(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        search, replacement = node.param
        if search == "":
            return a[0]
        return pc.replace_substring(a[0], pattern=search, replacement=replacement)

    def _pad(self, node: Call, a: list[pc.Expression]) -> pc.Expression:
        import pyarrow.compute as pc

        width, fill, left = node.param
        if len(fill) != 1:
            import pyarrow as pa

            args = [a[0], pc.scalar(pa.scalar(int(width))), pc.scalar(pa.scalar(str(fill)))]
            types = ["string", "bigint", "string"]

            def padded(text: str, size: int, characters: str) -> str:
                return spark_values.pad(text, size, characters, bool(left))

            return _python("lpad" if left else "rpad", padded, args, types, "string")
        if width <= 0:
            return pc.if_else(pc.is_null(a[0]), a[0], pc.scalar(""))
        padded = (pc.utf8_lpad if left else pc.utf8_rpad)(a[0], width=width, padding=fill)
        return pc.utf8_slice_codeunits(padded, start=0, stop=width)


# dates and timestamps reach value-by-value casts to numbers as their number (days since
# 1970-01-01, microseconds since 1970-01-01 UTC): every value Arrow holds, any year
_TEMPORAL_NUMBER = {"date": "int", "timestamp": "bigint"}
_REGISTERED: set[str] = set()
_REGISTERING = threading.Lock()


def _python(
    name: str,
    function: Callable[..., Any],
    args: list[pc.Expression],
    types: list[str],
    result: str,
    *,
    strict: bool = True,
    ascii_kernel: str | None = None,
) -> pc.Expression:
    """``function`` applied value by value as a pyarrow scalar function over ``args`` (of
    ``types``), registered once per process under a name made of ``name`` and the types (the
    same name must always mean the same function); ``strict``: a NULL argument gives NULL
    without calling it; ``ascii_kernel``: the Arrow kernel that gives the same result for a
    batch of one ASCII text argument."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from lakectl.arrow.types import arrow_type

    full = "lakectl_" + re.sub(r"\W", "_", "_".join([name, *types, result, str(strict)]))
    out_type = arrow_type(result)
    with _REGISTERING:
        if full not in _REGISTERED:

            def by_value(context: Any, *arrays: Any) -> Any:
                size = context.batch_length
                first = arrays[0]
                if (
                    ascii_kernel is not None
                    and isinstance(first, pa.Array)
                    and pc.all(pc.string_is_ascii(first)).as_py() is not False
                ):
                    return getattr(pc, ascii_kernel)(first)
                columns = [
                    v.to_pylist() if isinstance(v, pa.Array) else [v.as_py()] * size for v in arrays
                ]
                values = [
                    None if strict and any(x is None for x in row) else function(*row)
                    for row in zip(*columns, strict=True)
                ]
                return pa.array(values, out_type)

            in_types = {f"a{i}": arrow_type(t) for i, t in enumerate(types)}
            summary = {"summary": f"Spark's {name}", "description": f"Spark's {name}, by value"}
            with contextlib.suppress(pa.ArrowKeyError):  # registered by an earlier import
                pc.register_scalar_function(by_value, full, summary, in_types, out_type)
            _REGISTERED.add(full)
    return pc.Expression._call(full, args)


def _headroom(value: pc.Expression, type_name: str) -> pc.Expression:
    """A decimal with one more integer digit, so that rounding up cannot overflow it."""
    import pyarrow as pa

    parts = decimal_parts(type_name)
    assert parts is not None
    precision, scale = parts
    return value.cast(pa.decimal128(min(38, precision + 1), scale))


def exact_cast(source: str, target: str) -> bool:
    """Whether Arrow's cast from ``source`` to ``target`` gives Spark's value for every input
    (widening conversions; numbers and dates to text where both print them alike)."""
    if source == target:
        return True
    if source in INTEGRAL:
        if target in INTEGRAL:
            return INTEGRAL.index(target) >= INTEGRAL.index(source)
        parts = decimal_parts(target)
        if parts is not None:
            return parts[0] - parts[1] >= INTEGRAL_DIGITS[source]
        return target in FLOATING or target == "string"
    source_parts = decimal_parts(source)
    if source_parts is not None:
        parts = decimal_parts(target)
        if parts is not None:
            return (
                parts[1] >= source_parts[1]
                and parts[0] - parts[1] >= source_parts[0] - source_parts[1]
            )
        return target == "double" or target == "string"
    return (source, target) in {
        ("float", "double"),
        ("double", "float"),
        ("date", "timestamp"),
        ("timestamp", "date"),
        ("date", "string"),
        ("boolean", "string"),
    }


def _null_bool() -> Any:
    import pyarrow as pa

    return pa.scalar(None, pa.bool_())


def _null(type_name: str) -> Any:
    import pyarrow as pa

    from lakectl.arrow.types import arrow_type

    return pa.scalar(None, arrow_type(type_name))


__all__ = ["arrow_expression", "arrow_scalar"]
