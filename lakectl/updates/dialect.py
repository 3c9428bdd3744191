"""The SQL dialect of statements and ``--where`` conditions: Spark SQL as Spark 4 reads it.

sqlglot's Spark dialect reads ``'O''Brien'`` as two adjacent literals (``CONCAT('O', 'Brien')``,
i.e. ``OBrien``); Spark 4 reads a doubled quote inside a literal as one quote (``O'Brien``). Every
parse of user SQL goes through :data:`DIALECT` so that a literal means what Spark says it means.
Literals separated by blanks (``'O' 'Brien'``) stay adjacent literals, as in Spark.
"""

from __future__ import annotations

from typing import ClassVar

from sqlglot import exp, parse_one
from sqlglot.dialects.spark import Spark


class SparkSQL(Spark):
    """Spark's dialect with ``''`` as an escaped quote inside string literals."""

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]


DIALECT = SparkSQL


def parse_expression(text: str) -> exp.Expression:
    """Parse one SQL expression or statement in :data:`DIALECT` (sqlglot errors propagate)."""
    tree = parse_one(text, read=DIALECT)
    assert isinstance(tree, exp.Expression)
    return tree
