"""Type 7 slowly changing dimensions: timestamped UPDATE/DELETE statements applied while reading.

Pure parts (no Spark import): :mod:`.times` (directive and ``--as-of`` times), :mod:`.statements`
(the ``.updates`` file format) and :mod:`.validate` (the safety whitelist). The Spark side,
:mod:`lakectl.spark.statement_compile`, is imported only when :func:`apply_statements` or :func:`analyze_statements` is
first used, so the CLI's fast commands never load pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakectl.updates.statements import (
    ParsedUpdates,
    Statement,
    parse_updates_file,
    parse_updates_text,
    statements_effective_at,
)
from lakectl.updates.times import ParsedTime, format_millis, parse_time
from lakectl.updates.validate import validate_statement

if TYPE_CHECKING:
    from lakectl.spark.statement_compile import analyze_statements, apply_statements

__all__ = [
    "ParsedTime",
    "ParsedUpdates",
    "Statement",
    "analyze_statements",
    "apply_statements",
    "format_millis",
    "parse_time",
    "parse_updates_file",
    "parse_updates_text",
    "statements_effective_at",
    "validate_statement",
]

_SPARK_SIDE = {"apply_statements", "analyze_statements"}


def __getattr__(name: str) -> Any:
    if name in _SPARK_SIDE:
        from lakectl.spark import statement_compile as spark_side

        return getattr(spark_side, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
