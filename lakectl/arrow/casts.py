"""Spark's ``CAST`` of whole columns in pyarrow, through the expression layer's casts
(:mod:`lakectl.arrow.compile_expr`): the values Spark's non-ANSI casts give (an invalid text
is NULL, integers narrow by wrapping around, ...), in the UTC session lakectl runs.

A cast the expression layer cannot compute as Spark does is refused
(:class:`~lakectl.errors.UsageError` naming it, with ``--engine spark`` as the way out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakectl.errors import UsageError

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
    return _evaluate(values, source, target, label)


def _evaluate(values: pa.Array, source: str, target: str, label: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.acero as acero

    from lakectl.arrow.compile_expr import arrow_expression
    from lakectl.expr.tree import Call, Col

    try:
        expression = arrow_expression(Call(target, "cast", (Col(source, "v"),)), label)
    except UsageError as exc:
        raise UsageError(
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
