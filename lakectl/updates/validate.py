"""The check of stored Type 7 statements, as readers and ``apply-updates`` run it.

A ``.updates`` file and the statements recorded in the log are data anyone with write access to
the lake can edit: each stored statement is parsed and checked against the expression language's
whitelist (:mod:`lakectl.expr.check`) when it is installed and again whenever it is read back.
Parses and checks are shared within a process, so a reader checks each text once.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from lakectl.errors import BadInputError
from lakectl.expr.check import CheckedStatement, check_statement, render_sql
from lakectl.expr.parse import DIALECT, Location, parse_statement_sql
from lakectl.table.schema import Schema

if TYPE_CHECKING:
    from lakectl.updates.statements import Statement


def validate_statement(stmt: Statement, schema: Schema) -> None:
    """Check a stored statement against the whitelist and the table's schema (no Spark needed).

    Runs at install time and again whenever statements are read back, so a hand-edited ``.updates``
    file cannot bypass it. Raises :class:`BadInputError`.
    """
    check_stored_statement(stmt, schema)


@functools.lru_cache(maxsize=4096)
def check_stored_statement(
    stmt: Statement, schema: Schema, origin: str | None = None, canonical: bool = False
) -> CheckedStatement:
    """Parse ``stmt.sql`` and check it; the result is what the Spark compiler consumes.

    ``origin`` names the statement in messages instead of its recorded ``source:line`` (which a
    log record only claims). With ``canonical``, the text must also be the one form lakectl
    stores (what it shows is then exactly what runs: no comments, no alternative spellings).

    A read checks every statement when it lists them and again when it compiles them; the check
    is a pure function of its arguments (all frozen), so the second one and later reads in the
    same process reuse the first result (sqlglot parsing costs 2-7 ms a statement). Refusals
    are not cached: they raise. Callers must not modify the returned trees.
    """
    location = Location(stmt.source, stmt.line, precise=False, origin=origin)
    try:
        tree = _parsed(stmt.sql)
    except BadInputError:
        tree = parse_statement_sql(stmt.sql, location)  # raises, naming the statement
    if canonical and stmt.sql not in _CANONICAL:
        if _rendered(tree) != stmt.sql:
            raise BadInputError(
                f"{location.at()}: the stored statement is not in canonical form "
                f"(stored {stmt.sql[:200]!r}, canonical {render_sql(tree)[:200]!r})",
                hint="reinstall the statement with `lakectl apply-updates`; never edit the log",
            )
        _CANONICAL.add(stmt.sql)
    known = _CHECKS.get((stmt.sql, schema))
    if known is None:
        checked = check_statement(tree, location, schema)
        _CHECKS[(stmt.sql, schema)] = checked
        if len(_CHECKS) > _MAX_PARSES:
            del _CHECKS[next(iter(_CHECKS))]
    else:  # the same text checked under another name: only the messages' location differs
        checked = replace(known, location=location)
    if checked.kind != stmt.kind:
        raise BadInputError(f"{location.at()}: recorded as {stmt.kind} but is {checked.kind}")
    return checked


# Parses of stored statement texts, most recently used last; the texts among them known to be
# in canonical form (they render to themselves); successful checks by text and schema.
_PARSES: OrderedDict[str, exp.Expression] = OrderedDict()
_CANONICAL: set[str] = set()
_CHECKS: dict[tuple[str, Schema], CheckedStatement] = {}
_MAX_PARSES = 4096


def _parsed(sql: str) -> exp.Expression:
    """The parse of a stored statement's text, shared by every check of it in this process
    (readers check each statement under several names); never modified by its users."""
    tree = _PARSES.get(sql)
    if tree is None:
        tree = parse_statement_sql(sql, Location("<stored>", 1, precise=False))
        _remember(sql, tree)
    else:
        _PARSES.move_to_end(sql)
    return tree


def _remember(sql: str, tree: exp.Expression) -> None:
    _PARSES[sql] = tree
    if len(_PARSES) > _MAX_PARSES:
        _CANONICAL.discard(_PARSES.popitem(last=False)[0])


def clear_statement_caches() -> None:
    """Forget every parse and check of stored statements made in this process (benchmarks
    and tests measure or exercise a new process's first read)."""
    _PARSES.clear()
    _CANONICAL.clear()
    _CHECKS.clear()
    check_stored_statement.cache_clear()


def parsed_statement(sql: str) -> exp.Expression:
    """The parse of a stored statement's text (shared: callers must not modify it); raises
    :class:`BadInputError` for text that does not parse."""
    return _parsed(sql)


def remember_parse(sql: str, tree: exp.Expression) -> bool:
    """Take ``tree`` (rebuilt from a stored form, :mod:`lakectl.updates.stored_form`) as the
    parse of the stored text ``sql``, so that checking it does not parse it again; only when
    it renders to exactly ``sql`` (false otherwise: the text is then parsed)."""
    if sql in _PARSES:
        return True
    try:
        if _rendered(tree) != sql:
            return False
    except Exception:  # any tree sqlglot cannot render is simply not used
        return False
    _remember(sql, tree)
    _CANONICAL.add(sql)
    return True


def _rendered(tree: exp.Expression) -> str:
    """:func:`render_sql` without copying the tree first (several times faster; sqlglot's
    Spark generator rewrites only node types no statement may hold)."""
    return Dialect.get_or_raise(DIALECT).generate(tree, copy=False, comments=False)
