"""Parsing user expressions: the one place lakectl reads SQL text written by users.

Every ``--where``, ``--set``, column default and Type 7 statement is parsed here, in
:data:`DIALECT` (Spark SQL as Spark 4 reads it). sqlglot's Spark dialect reads ``'O''Brien'`` as
two adjacent literals (``CONCAT('O', 'Brien')``, i.e. ``OBrien``); Spark 4 reads a doubled quote
inside a literal as one quote (``O'Brien``), and so does :data:`DIALECT`. Literals separated by
blanks (``'O' 'Brien'``) stay adjacent literals, as in Spark.

Parse errors become :class:`~lakectl.errors.BadInputError` naming ``file:line:col`` (or the
option) through a :class:`Location`.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from lakectl.errors import BadInputError, UsageError


class SparkSQL(Spark):
    """Spark's dialect with ``''`` as an escaped quote inside string literals."""

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]


DIALECT = SparkSQL

# Parentheses deeper than this are refused before parsing: the parser and the checks recurse, and
# no correction needs more.
MAX_NESTING = 64

# Longer statements are refused before parsing (parsing costs ~10 µs a character; a stored
# statement is parsed again by every read). 256 KB holds an IN list of ~30,000 keys.
MAX_STATEMENT_CHARS = 256 * 1024


@dataclass(frozen=True)
class Location:
    """Where a statement's text starts, to turn sqlglot's positions into file positions.

    ``precise`` is false when the text is the normalized single-line form of a statement read back
    from storage: positions inside it mean nothing to the user, so only the line is reported.
    """

    source: str
    line: int
    col: int = 1
    precise: bool = True
    origin: str | None = None  # replaces file:line where those came from an untrusted record

    def at(self, line: int | None = None, col: int | None = None) -> str:
        """``file:line[:col]`` for a position relative to the statement's text."""
        if self.origin is not None:
            return self.origin
        if not self.precise or line is None:
            return f"{self.source}:{self.line}"
        abs_line = self.line + line - 1
        if col is None:
            return f"{self.source}:{abs_line}"
        abs_col = col + self.col - 1 if line == 1 else col
        return f"{self.source}:{abs_line}:{abs_col}"

    def of(self, node: exp.Expression) -> str:
        """``file:line[:col]`` of a node (of its first descendant that carries a position)."""
        for candidate in node.walk():
            meta = candidate.meta
            if "line" in meta:
                col = meta.get("col")
                # sqlglot reports the end column of a token; point at its start.
                if col is not None and "start" in meta and "end" in meta:
                    col = max(1, col - (meta["end"] - meta["start"]))
                return self.at(meta["line"], col)
        return self.at()


@functools.lru_cache(maxsize=256)
def parse_expression(text: str) -> exp.Expression:
    """Parse one SQL expression or statement in :data:`DIALECT` (sqlglot errors propagate).

    A read looks at its ``--where`` in several places (pruning, filtering first): the text is
    parsed once and the tree shared; callers must not modify it."""
    tree = sqlglot.parse_one(text, read=DIALECT)
    assert isinstance(tree, exp.Expression)
    return tree


def has_semicolon(text: str) -> bool:
    """Whether ``text`` holds a ``;`` outside literals and comments (several statements)."""
    if ";" not in text:  # tokenizing a long text costs as much as parsing it
        return False
    tokens = Dialect.get_or_raise(DIALECT).tokenize(text)
    return any(t.token_type == TokenType.SEMICOLON for t in tokens)


def _check_nesting(sql: str, location: Location) -> None:
    if len(sql) > MAX_STATEMENT_CHARS:
        raise BadInputError(
            f"{location.at()}: the statement has {len(sql)} characters; at most "
            f"{MAX_STATEMENT_CHARS} are allowed",
            hint="split it into several statements",
        )
    depth = deepest = 0
    for char in sql:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_NESTING:
        raise BadInputError(
            f"{location.at()}: the expression nests {deepest} parentheses deep; "
            f"at most {MAX_NESTING} are allowed"
        )


def parse_statement_sql(sql: str, location: Location) -> exp.Expression:
    """Parse the text of one statement, turning sqlglot errors into file:line:col messages."""
    _check_nesting(sql, location)
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # not its "falling back to a Command" warnings: we refuse those
    try:
        expressions = sqlglot.parse(sql, read=DIALECT)
    except TokenError as exc:
        line, col = _offset_position(sql, getattr(exc, "start", None))
        raise BadInputError(
            f"{location.at(line, col)}: syntax error: unterminated string, identifier or comment"
        ) from exc
    except RecursionError as exc:
        raise BadInputError(f"{location.at()}: the statement is nested too deeply") from exc
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        line, col = detail.get("line"), detail.get("col")
        highlight = detail.get("highlight") or ""
        if isinstance(col, int) and highlight and "\n" not in highlight:
            col = max(1, col - len(highlight) + 1)
        near = f" near {highlight!r}" if highlight else ""
        message = _describe_parse_error(str(detail.get("description") or exc))
        raise BadInputError(f"{location.at(line, col)}: syntax error{near}: {message}") from exc
    finally:
        logger.setLevel(level)
    statements = [e for e in expressions if isinstance(e, exp.Expression)]
    if len(statements) != 1:
        raise BadInputError(f"{location.at()}: expected exactly one statement")
    return statements[0]


def parse_assignments(text: str) -> list[exp.EQ]:
    """``--set`` text as a list of ``column = expression`` assignments, nothing else.

    The text is parsed as the SET list of an UPDATE on its own: a ``WHERE``, a comment that
    hides the rest of a statement, a ``;`` or anything after the last assignment is refused.
    """
    stripped = text.strip()
    label = f"--set {text[:200]!r}"
    if not stripped:
        raise UsageError("--set is empty", hint='--set "column = expression, ..."')
    if has_semicolon(stripped) or "--" in _outside_literals(stripped):
        raise UsageError(f"{label}: assignments only, without ';' or comments")
    tree = parse_statement_sql(f"UPDATE t SET {stripped}", Location("--set", 1, col=-12))
    if not isinstance(tree, exp.Update) or set(k for k, v in tree.args.items() if v) != {
        "this",
        "expressions",
    }:
        raise UsageError(
            f"{label}: assignments only (column = expression, ...)",
            hint="give the condition with --where",
        )
    assignments = []
    for item in tree.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise UsageError(f"{label}: expected column = expression, got {item.sql(DIALECT)!r}")
        assignments.append(item)
    return assignments


def parse_condition(text: str, label: str) -> exp.Expression:
    """One condition (``--where``) as a tree: no ``;``, no statement, no trailing alias."""
    location = Location(label, 1)
    tree = parse_statement_sql(text, location)
    if has_semicolon(text):
        raise UsageError(f"{label} {text!r}: one condition, without ';'")
    if isinstance(tree, exp.Alias):
        raise UsageError(
            f"{label} {text!r}: {tree.alias!r} after the condition is not part of it",
            hint="combine conditions with AND or OR; quote strings: store_id = 'S01'",
        )
    if isinstance(tree, (exp.Query, exp.Command, exp.Update, exp.Delete, exp.Insert)):
        raise UsageError(f"{label} {text!r}: a condition, not a {statement_name(tree)} statement")
    return tree


def statement_name(statement: exp.Expression) -> str:
    """The keyword naming a parsed statement (``SELECT``, ``UPDATE``, ...)."""
    if isinstance(statement, exp.Command):
        return str(statement.this).upper()
    if isinstance(statement, exp.Query):
        return "SELECT"
    return statement.key.upper()


_LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'|`[^`]*`")


def _outside_literals(text: str) -> str:
    """``text`` without its quoted strings and identifiers."""
    return _LITERAL.sub("", text)


def _offset_position(text: str, offset: int | None) -> tuple[int | None, int | None]:
    if offset is None:
        return None, None
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


_REQUIRED = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _describe_parse_error(description: str) -> str:
    match = _REQUIRED.search(description)
    if match:
        return f"incomplete {match.group(2).upper()} expression"
    return description.replace("Invalid expression / Unexpected token", "unexpected token")


__all__ = [
    "DIALECT",
    "MAX_NESTING",
    "MAX_STATEMENT_CHARS",
    "Location",
    "has_semicolon",
    "parse_assignments",
    "parse_condition",
    "parse_expression",
    "parse_statement_sql",
    "statement_name",
]
