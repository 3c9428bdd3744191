"""Spark's ``CAST`` of whole columns in pyarrow, through the expression layer's casts
(:mod:`lakectl.arrow.compile_expr`): the values Spark's non-ANSI casts give (an invalid text
is NULL, integers narrow by wrapping around, ...), in the UTC session lakectl runs.

A cast the expression layer cannot compute as Spark does is refused
(:class:`~lakectl.errors.UsageError` naming it, with ``--engine spark`` as the way out).

Casts of text run value by value in Python there. The plain texts most batches hold (digits,
``yyyy-MM-dd``, ``yyyy-MM-dd HH:mm:ss``) are cast by Arrow's kernels instead, where they give
the same value as Spark for every text of that form; every other text (and any the kernel does
not turn into the same text back) still goes value by value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakectl.errors import ArrowEngineLimit, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

# Spark's cast between a timestamp and a timestamp without time zone in a UTC session keeps
# the microseconds; text becomes bytes as UTF-8 (both are Arrow's own casts).
_REINTERPRETED = {
    ("timestamp_ntz", "timestamp"),
    ("timestamp", "timestamp_ntz"),
    ("string", "binary"),
}


def spark_cast(
    values: pa.Array | pa.ChunkedArray, source: str, target: str, label: str
) -> pa.Array:
    """``values`` (of the Spark type ``source``) cast to ``target`` as Spark casts them;
    ``label`` names the column in a refusal."""
    import pyarrow as pa

    from lakectl.arrow.types import arrow_type

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if source == target:
        return values
    if (source, target) in _REINTERPRETED:
        return values.cast(arrow_type(target))
    if source == "timestamp_ntz":
        values, source = values.cast(arrow_type("timestamp")), "timestamp"
    if target == "timestamp_ntz":
        return spark_cast(values, source, "timestamp", label).cast(arrow_type(target))
    if source == target:
        return values
    if source == "string" and _plain_pattern(target) is not None:
        return _plain_first(values, target, label)
    return _evaluate(values, source, target, label)


# Texts Arrow's cast reads as Spark's does: integers short enough not to overflow, plain
# decimal numbers (both round to the nearest double), decimals within the type's digits,
# dates and times of years 1000 to 9999 (checked by formatting them back).
_DATE = r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}"
_PLAIN = {
    "tinyint": r"^-?[0-9]{1,2}$",
    "smallint": r"^-?[0-9]{1,4}$",
    "int": r"^-?[0-9]{1,9}$",
    "bigint": r"^-?[0-9]{1,18}$",
    "double": r"^-?[0-9]{1,300}(\.[0-9]{1,300})?$",
    "date": f"^{_DATE}$",
    "timestamp": f"^{_DATE} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}$",
}
_FORMATS = {"date": "%Y-%m-%d", "timestamp": "%Y-%m-%d %H:%M:%S"}


def _plain_pattern(target: str) -> str | None:
    from lakectl.expr.tree import decimal_parts

    parts = decimal_parts(target)
    if parts is None:
        return _PLAIN.get(target)
    whole, scale = parts[0] - parts[1], parts[1]
    fraction = f"(\\.[0-9]{{1,{scale}}})?" if scale else ""
    return f"^-?[0-9]{{1,{whole}}}{fraction}$" if whole else None


def _plain_first(values: pa.Array, target: str, label: str) -> pa.Array:
    """Texts of a plain form cast by Arrow, the others value by value (see the module's doc)."""
    import pyarrow.compute as pc

    from lakectl.arrow.types import arrow_type

    pattern = _plain_pattern(target)
    assert pattern is not None
    plain = pc.match_substring_regex(values, pattern)
    chosen = pc.if_else(plain, values, None)
    if target in _FORMATS:
        parsed = pc.strptime(chosen, format=_FORMATS[target], unit="s", error_is_null=True)
        back = pc.strftime(parsed, format=_FORMATS[target])
        parsed = pc.if_else(pc.equal(back, chosen), parsed, None)
        fast = parsed.cast(arrow_type(target))
    else:
        fast = chosen.cast(arrow_type(target))
    rest = pc.and_(pc.is_valid(values), pc.is_null(fast))
    if not pc.any(rest).as_py():
        return fast
    slow = _evaluate(values.filter(rest), "string", target, label)
    return pc.replace_with_mask(fast, rest, slow)


def _evaluate(values: pa.Array, source: str, target: str, label: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.acero as acero

    from lakectl.arrow.compile_expr import arrow_expression
    from lakectl.expr.tree import Call, Col

    try:
        expression = arrow_expression(Call(target, "cast", (Col(source, "v"),)), label)
    except UsageError as exc:
        raise ArrowEngineLimit(
            f"{label}: the Arrow engine cannot cast {source} to {target} as Spark does",
            hint="use --engine spark",
        ) from exc
    if not len(values):
        from lakectl.arrow.types import arrow_type

        return pa.array([], arrow_type(target))
    table = pa.table({"v": values})
    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions([expression], ["v"])),
        ]
    )
    return plan.to_table(use_threads=False).column(0).combine_chunks()


__all__ = ["spark_cast"]
