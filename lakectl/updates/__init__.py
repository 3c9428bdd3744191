"""Type 7 slowly changing dimensions: timestamped UPDATE/DELETE statements applied while reading.

Pure parts (no Spark import): :mod:`.statements` (the ``.updates`` file format) and
:mod:`.validate` (the safety whitelist); times of directives and ``--as-of`` are
:mod:`lakectl.times`. Each engine applies statements with its own back end:
:mod:`lakectl.spark.statement_compile` and :mod:`lakectl.arrow.statements`.
"""

from __future__ import annotations

from lakectl.updates.statements import (
    ParsedUpdates,
    Statement,
    parse_updates_file,
    parse_updates_text,
    statements_effective_at,
)
from lakectl.updates.validate import validate_statement

__all__ = [
    "ParsedUpdates",
    "Statement",
    "parse_updates_file",
    "parse_updates_text",
    "statements_effective_at",
    "validate_statement",
]
