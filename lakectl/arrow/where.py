"""A ``where`` condition as a pyarrow compute expression.

The condition is bound once by the expression layer (:mod:`lakectl.expr`) and compiled by
:mod:`lakectl.arrow.compile_expr`, with Spark's results. A read binds its ``--where`` once and
compiles the bound tree (:mod:`lakectl.arrow.read`); :func:`arrow_filter` does both for a text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakectl.table.schema import Schema

if TYPE_CHECKING:
    import pyarrow.compute as pc


def arrow_filter(where: str, schema: Schema) -> pc.Expression:
    """``where`` (over ``schema``'s columns) as an Arrow filter expression, bound by the
    expression layer (:func:`lakectl.expr.bind_where`); raises :class:`UsageError` naming a
    construct the Arrow engine does not evaluate with Spark's result."""
    from lakectl.arrow.compile_expr import arrow_expression
    from lakectl.expr import bind_where

    return arrow_expression(bind_where(where, schema), f"--where {where[:200]!r}")


def any_of(tests: list[pc.Expression]) -> pc.Expression:
    """The OR of ``tests`` as a balanced tree (as deep as the logarithm of their number)."""
    import pyarrow.compute as pc

    if not tests:
        return pc.scalar(False)
    while len(tests) > 1:
        pairs = [tests[i] | tests[i + 1] for i in range(0, len(tests) - 1, 2)]
        tests = pairs + tests[len(tests) - len(tests) % 2 :]
    return tests[0]


__all__ = ["any_of", "arrow_filter"]
