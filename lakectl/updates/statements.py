"""The ``.updates`` file format: timestamped UPDATE/DELETE statements, parsed into values.

Format:

- statements end with ``;`` and may span lines; ``;`` and ``--`` inside string literals, quoted
  identifiers and ``/* */`` comments are not terminators or comments;
- a line is a directive when, stripped and lower-cased, it starts with ``-- time=``: it sets the
  effective time of the statements after it (see :mod:`lakectl.times`);
- statements before the first directive are effective at time 0;
- other ``--`` and ``/* */`` comments are ignored;
- every statement names the same table (the name itself is a placeholder: the statements apply to
  the table whose ``.updates`` they are), compared case-insensitively.

Decision: text after the last ``;`` that is not a comment is refused ("not terminated by ';'")
rather than accepted, so that a truncated file cannot silently become a different statement
(``... WHERE number = 12`` cut to ``... WHERE number = 1``). A directive inside an unterminated
statement is refused for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lakectl.errors import BadInputError
from lakectl.expr.check import check_statement, render_sql
from lakectl.expr.parse import Location, parse_statement_sql
from lakectl.storage.inputs import require_local_input_file
from lakectl.table.schema import Schema
from lakectl.times import format_millis, parse_time
from lakectl.updates.validate import remember_parse

DIRECTIVE = "-- time="


@dataclass(frozen=True)
class Statement:
    """One installed statement: when it takes effect and its normalized SQL text.

    ``sql`` is sqlglot's single-line rendering of the statement (no comments, no ``;``), which is
    what is stored and re-validated when read back. ``line`` is the 1-based line of ``source``
    where the statement started, for messages.
    """

    effective_ms: int
    sql: str
    kind: str  # "update" | "delete"
    table: str
    line: int
    source: str = "<updates>"


@dataclass(frozen=True)
class ParsedUpdates:
    """The statements of one ``.updates`` text, in file order, and warnings about it."""

    statements: tuple[Statement, ...]
    warnings: tuple[str, ...] = ()

    @property
    def table(self) -> str | None:
        """The table name the statements use (``None`` for a file without statements)."""
        return self.statements[0].table if self.statements else None


BYTE_ORDER_MARK = "\ufeff"


def parse_updates_text(
    text: str,
    source: str = "<updates>",
    timezone: str | None = None,
    schema: Schema | None = None,
) -> ParsedUpdates:
    """Parse the text of a ``.updates`` file into statements with their effective times.

    ``timezone`` (IANA name) applies to directive times written without an offset. With
    ``schema``, every statement is also checked against the table's columns and types here, where
    errors can point at the exact line and column of the original text. Raises
    :class:`BadInputError` naming ``source``, line and column of the first problem. A UTF-8 byte
    order mark at the start (as some Windows editors write) is skipped.
    """
    text = text.removeprefix(BYTE_ORDER_MARK)
    statements: list[Statement] = []
    warnings: list[str] = []
    effective_ms = 0
    first_table: tuple[str, int] | None = None
    for piece in _scan(text, source):
        if isinstance(piece, _Directive):
            effective_ms = _directive_time(piece, source, timezone, warnings)
            continue
        if isinstance(piece, _LookalikeComment):
            warnings.append(
                f"{source}:{piece.line}: {piece.text.strip()!r} is not a directive and is "
                f"ignored as a comment; write '{DIRECTIVE}VALUE' to set the effective time"
            )
            continue
        location = Location(source, piece.line, piece.col)
        ast = parse_statement_sql(piece.text, location)
        checked = check_statement(ast, location, schema)
        if first_table is None:
            first_table = (checked.table, piece.line)
        elif checked.table.lower() != first_table[0].lower():
            raise BadInputError(
                f"{location.of(ast)}: statement uses table {checked.table!r} but the statement "
                f"at line {first_table[1]} uses {first_table[0]!r}: all statements of a file "
                "must name the same table"
            )
        sql = render_sql(ast)
        _check_round_trip(sql, location, schema)
        statements.append(
            Statement(effective_ms, sql, checked.kind, checked.table, piece.line, source)
        )
    return ParsedUpdates(tuple(statements), tuple(warnings))


def parse_updates_file(
    path: str | Path, timezone: str | None = None, schema: Schema | None = None
) -> ParsedUpdates:
    """Read a local ``.updates`` file (UTF-8) and parse it; messages name the file. A device,
    FIFO or folder is refused before anything is read."""
    file = Path(path)
    require_local_input_file(str(file), "updates file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{file}: not a UTF-8 text file ({exc.reason})") from exc
    return parse_updates_text(text, source=str(file), timezone=timezone, schema=schema)


def statements_effective_at(statements: Sequence[Statement], as_of_ms: int) -> list[Statement]:
    """The statements in effect at ``as_of_ms`` (effective at or before it), in file order.

    Pure: the caller resolves "now" and ``--raw`` (no statements). With the usual non-negative
    effective times, ``-1`` selects none and ``0`` selects the undated ones.
    """
    return [s for s in statements if s.effective_ms <= as_of_ms]


def _directive_time(
    piece: _Directive, source: str, timezone: str | None, warnings: list[str]
) -> int:
    if piece.open_statement_line is not None:
        raise BadInputError(
            f"{source}:{piece.line}: '{DIRECTIVE}' directive inside the statement that starts "
            f"at line {piece.open_statement_line}: is its ';' missing?"
        )
    if not piece.value:
        raise BadInputError(f"{source}:{piece.line}: '{DIRECTIVE}' directive without a time")
    try:
        parsed = parse_time(piece.value, timezone)
    except BadInputError as exc:
        raise BadInputError(f"{source}:{piece.line}: {exc.message}", hint=exc.hint) from exc
    if parsed.warning:
        warnings.append(f"{source}:{piece.line}: {parsed.warning}")
    if parsed.millis < 0:
        warnings.append(
            f"{source}:{piece.line}: the statements after this directive take effect before "
            f"1970 ({format_millis(parsed.millis)}), so even '--as-of -1' applies them; "
            "use --raw to read the table without statements"
        )
    return parsed.millis


def _check_round_trip(sql: str, location: Location, schema: Schema | None) -> None:
    """The stored text must pass the same check when read back; refuse it now if it would not."""
    stored = Location(location.source, location.line, precise=False)
    try:
        tree = parse_statement_sql(sql, stored)
        check_statement(tree, stored, schema)
    except BadInputError as exc:  # a sqlglot rendering quirk; never seen in tests
        raise BadInputError(
            f"{location.at()}: the statement cannot be stored in normalized form ({sql!r}): "
            f"{exc.message}"
        ) from exc
    remember_parse(sql, tree)  # installing checks the stored text again: not a third parse


# ---------------------------------------------------------------------------------------------
# Splitting the text into statements and directives


@dataclass(frozen=True)
class _Directive:
    line: int
    value: str
    open_statement_line: int | None


@dataclass(frozen=True)
class _LookalikeComment:
    line: int
    text: str


@dataclass(frozen=True)
class _Chunk:
    text: str
    line: int
    col: int


def _scan(text: str, source: str) -> Iterator[_Directive | _LookalikeComment | _Chunk]:
    """Split ``text`` into statement chunks and directives, aware of strings and comments."""
    i, n = 0, len(text)
    line, line_start = 1, 0
    start: tuple[int, int, int] | None = None  # offset, line, col of the open statement
    at_line_start = True
    while i < n:
        if at_line_start:
            at_line_start = False
            end = text.find("\n", i)
            raw = text[i : n if end < 0 else end].strip()
            if raw.lower().startswith(DIRECTIVE):
                yield _Directive(line, raw[len(DIRECTIVE) :].strip(), start and start[1])
                i = n if end < 0 else end
                continue
            if _looks_like_directive(raw):
                yield _LookalikeComment(line, raw)
        ch = text[i]
        if ch == "\n":
            line, line_start, at_line_start = line + 1, i + 1, True
            i += 1
        elif ch.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise BadInputError(
                    f"{source}:{line}:{i - line_start + 1}: unterminated /* comment"
                )
            line, line_start = _advance(text, end, line, line_start, i)
            i = end + 2
        elif ch == ";":
            if start is not None:
                yield _Chunk(text[start[0] : i], start[1], start[2])
            start = None
            i += 1
        else:
            if start is None:
                start = (i, line, i - line_start + 1)
            if ch in "'\"`":
                end = _closing_quote(text, i)
                if end < 0:
                    kind = "identifier" if ch == "`" else "string"
                    raise BadInputError(
                        f"{source}:{line}:{i - line_start + 1}: unterminated {kind} "
                        f"(opening {ch} has no closing {ch})"
                    )
                line, line_start = _advance(text, end + 1, line, line_start, i)
                i = end + 1
            else:
                i += 1
    if start is not None:
        raise BadInputError(
            f"{source}:{start[1]}:{start[2]}: the statement starting here is not terminated by ';'",
            hint="end every statement with ';'",
        )


def _looks_like_directive(stripped_line: str) -> bool:
    """``--time=...`` or ``-- time = ...``: meant as a directive but not one by the rules."""
    if not stripped_line.startswith("--"):
        return False
    compact = stripped_line[2:].replace(" ", "").replace("\t", "").lower()
    return compact.startswith("time=")


def _closing_quote(text: str, i: int) -> int:
    """Offset of the quote closing the string or identifier opened at ``i``, or -1."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n:
        ch = text[j]
        if ch == "\\" and quote != "`":
            j += 2
            continue
        if ch == quote:
            return j
        j += 1
    return -1


def _advance(text: str, upto: int, line: int, line_start: int, since: int) -> tuple[int, int]:
    """Line bookkeeping after skipping ``text[since:upto]`` in one step."""
    newlines = text.count("\n", since, upto)
    if newlines:
        return line + newlines, text.rfind("\n", since, upto) + 1
    return line, line_start
