"""All terminal output in one place: rich text for people, JSON for scripts (``--json``).

Tables (:func:`table`) have four renderings (``--format``): ``table`` is a table fitted to the
terminal's width (:mod:`lakectl.cli.terminal_table`) on a terminal and plain aligned rows, one
line per row, nothing cut, when stdout is a pipe or a file; ``csv``, ``tsv`` and ``json`` (an
array of objects) print the rows only, for other programs.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import os
import select
import sys
import textwrap
import threading
import time
import traceback
import unicodedata
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from lakectl.cli import terminal_table
from lakectl.cli.terminal_table import Bar
from lakectl.errors import LakectlError
from lakectl.table.json_input import TableWarning


class OutputClosed(Exception):
    """The reader of stdout went away (``lakectl history t | head -1``): not an error, the
    command stops quietly with exit 0."""


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own reaction is SystemExit(1): an undocumented exit code for a reader that
        # simply stopped reading.
        self.quiet = True
        raise OutputClosed()


stdout = _Console(soft_wrap=True)
stderr = _Console(stderr=True, soft_wrap=True)


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader closed it (a write would fail with EPIPE)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # captured output, no descriptor
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that nothing written (or flushed at exit) after its reader
    went away fails again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=_default, indent=2) + "\n")


DEBUG_ENV = "LAKECTL_DEBUG"


def debug_requested(args: list[str]) -> bool:
    """``--debug`` anywhere among the options (before or after the command), or
    ``LAKECTL_DEBUG=1``."""
    options = args[: args.index("--")] if "--" in args else args
    return "--debug" in options or os.environ.get(DEBUG_ENV, "") not in ("", "0")


@contextmanager
def debug_mode(enabled: bool) -> Iterator[None]:
    """While the command runs, ``LAKECTL_DEBUG`` says whether ``--debug`` was given, so the
    Spark layer lets Spark's own output through (it is read when Spark starts)."""
    before = os.environ.get(DEBUG_ENV)
    if enabled:
        os.environ[DEBUG_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_ENV, None)
        else:
            os.environ[DEBUG_ENV] = before


def print_stack(error: BaseException) -> None:
    """The full stack of an unexpected error, on stderr (``--debug`` only)."""
    sys.stderr.write("".join(traceback.format_exception(error)))


# How much of an error's message (and hint) is shown: errors may quote what a user or a table's
# files wrote, and a quoted 200 KB statement would bury the message.
MESSAGE_LIMIT = 500
_MESSAGE_HEAD = 400


def capped(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut after 400 characters, with how many were left out, when it is longer than
    ``limit``."""
    if len(text) <= limit:
        return text
    return f"{text[:_MESSAGE_HEAD]}... ({len(text) - _MESSAGE_HEAD:,} more characters)"


def emit_error(error: LakectlError | Exception, as_json: bool) -> None:
    """An error on stderr (and, with ``as_json``, as one ``{"error": ...}`` object on stdout):
    message and hint capped in length (:func:`capped`) and control characters shown escaped."""
    kind = getattr(error, "kind", "internal")
    message = capped(getattr(error, "message", str(error)))
    hint = getattr(error, "hint", None)
    hint = capped(hint) if hint else hint
    if as_json:
        body: dict[str, Any] = {"type": kind, "message": message}
        if getattr(error, "error_type", ""):
            body["error_type"] = error.error_type  # type: ignore[union-attr]
        if hint:
            body["hint"] = hint
        sys.stdout.write(json.dumps({"error": body}) + "\n")
    stderr.print(f"[bold red]error:[/] {escape(safe_text(message))}", markup=True, highlight=False)
    if hint:
        stderr.print(f"  hint: {safe_text(hint)}", markup=False, highlight=False)


def safe_text(text: str) -> str:
    """``text`` with every control or format character (terminal escape sequences, bidi
    overrides, ...) shown as ``\\uXXXX``, so what users and statements wrote cannot change what
    the terminal shows. Line breaks and tabs stay."""
    if text.isprintable():
        return text
    return "".join(
        ch
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs")
        else f"\\u{ord(ch):04x}"
        for ch in text
    )


def format_millis(ms: int | dt.datetime | None) -> str:
    """A time (epoch milliseconds or a UTC datetime) as ``2024-01-02 03:04:05`` UTC."""
    if ms is None:
        return ""
    moment = ms if isinstance(ms, dt.datetime) else dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def render_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value)
    return str(value)


TABLE_FORMATS = ("table", "csv", "tsv", "json")


def table(
    title: str | None,
    columns: list[str],
    rows: list[list[Any]],
    fmt: str = "table",
    bars: Sequence[Bar] = (),
) -> None:
    """The one table renderer: ``fmt`` is one of :data:`TABLE_FORMATS`. On a terminal the table
    fits its width (:mod:`lakectl.cli.terminal_table`), with ``bars`` as extra columns when there
    is room; elsewhere every value is printed whole and ``bars`` are left out."""
    if fmt in ("csv", "tsv"):
        # Quoted fields may hold line breaks and tabs; every other control character is shown
        # escaped (safe_text), also through a pipe (`| column -t` still ends on a terminal).
        # Exact values: --out writes them to a file as they are.
        writer = csv.writer(
            sys.stdout, delimiter="," if fmt == "csv" else "\t", lineterminator="\n"
        )
        writer.writerow([safe_text(c) for c in columns])
        writer.writerows(
            [["" if v is None else safe_text(render_value(v)) for v in row] for row in rows]
        )
        return
    if fmt == "json":
        emit_json([dict(zip(columns, row, strict=True)) for row in rows])
        return
    if not stdout.is_terminal:
        if title:
            note(title)
        plain_rows(columns, [[render_value(v) for v in row] for row in rows])
        return
    lines = terminal_table.render(
        title and safe_text(title),
        [safe_text(c) for c in columns],
        [[safe_text(v) if isinstance(v, str) else v for v in row] for row in rows],
        stdout.width,  # the terminal's width; COLUMNS, when set, wins
        bars,
    )
    stdout.file.write("".join(f"{line}\n" for line in lines))
    stdout.file.flush()


def records(rows: list[dict[str, Any]], fmt: str, columns: Sequence[str]) -> None:
    """A listing's entries for other programs (``--format json|csv|tsv``), under the field
    names ``--json`` uses (``columns``): json is an array of the objects; csv and tsv have one
    column per field, with lists and objects in a cell as JSON and null as an empty cell."""
    if fmt == "json":
        emit_json(rows)
        return
    table(
        None,
        list(columns),
        [[_cell(row.get(c)) for c in columns] for row in rows],
        fmt,
    )


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, default=_default)
    return value


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def plain_rows(
    columns: list[str], rows: list[list[str]], right: frozenset[int] = frozenset()
) -> None:
    """A header and one line per row, columns aligned and two spaces apart, nothing wrapped or
    cut (for pipes: ``lakectl history t | grep cdc``). Line breaks and other control characters
    in values are escaped."""
    cells = [[safe_text(_one_line(c)) for c in row] for row in [columns, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for row in cells:
        padded = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        sys.stdout.write("  ".join(padded).rstrip() + "\n")


OTHERS = "(all others)"


def bar_chart(
    title: str,
    rows: list[tuple[str, int, float]],
    marked: set[str] | None = None,
    width: int = 40,
    average: float | None = None,
    others: tuple[int, float] | None = None,
) -> None:
    """Horizontal bars: label, count, share (0..1); ``marked`` labels end in `` *``; ``others``
    (count, share) is a last row for everything else. On a terminal the bars fit its width, are
    scaled to the largest count of ``rows`` (``others`` gets no bar) and, given the ``average``
    count, a column says how many times the average each count is and a dotted line marks the
    average across the bars."""
    labels = [label + (" *" if marked and label in marked else "") for label, _, _ in rows]
    if others is not None:
        labels.append(OTHERS)
    everything = [*rows, *([(OTHERS, *others)] if others is not None else [])]
    if not stdout.is_terminal:
        line(title)
        plain_rows(
            ["value", "rows", "share", ""],
            [
                [
                    labels[i],
                    f"{count:,}",
                    f"{share:6.1%}",
                    "█" * max(0, round(share * width)) or ("▏" if share > 0 else ""),
                ]
                for i, (_, count, share) in enumerate(everything)
            ],
            right=frozenset({1, 2}),
        )
        return
    columns = ["value", "rows", "share"]
    cells: list[list[Any]] = [
        [labels[i], f"{count:,}", f"{share:.1%}"] for i, (_, count, share) in enumerate(everything)
    ]
    if average:
        columns.append("× average")
        for i, cell in enumerate(cells):
            cell.append(f"{everything[i][1] / average:,.1f}" if i < len(rows) else "-")
    counts: list[float | None] = [count for _, count, _ in rows]
    counts += [None] if others is not None else []
    bar = Bar("rows (┆ average)" if average else "rows", counts, average)
    table(safe_text(title), columns, cells, "table", [bar])


def line(text: str) -> None:
    """A line of text on stdout: on a terminal, folded between words to its width, the rest
    indented under its start (a long list of properties never breaks inside a word);
    elsewhere one line, as it is."""
    shown = safe_text(text)
    if stdout.is_terminal:
        shown = "\n".join(fold(part, stdout.width) for part in shown.split("\n"))
    stdout.print(shown, markup=False, highlight=False)


def fold(text: str, width: int) -> str:
    """``text`` folded between words into lines of at most ``width`` characters (a longer
    word keeps a line of its own), continuation lines indented 4 more than the first."""
    if len(text) <= width:
        return text
    indent = " " * (len(text) - len(text.lstrip(" ")) + 4)
    return "\n".join(
        textwrap.wrap(
            text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
        )
    )


def note(text: str) -> None:
    stderr.print(safe_text(text), markup=False, highlight=False, style="dim")


def warning(text: str) -> None:
    """``warning: TEXT`` on stderr, capped like an error message (a warning may quote a
    configuration file or a statement)."""
    note(f"warning: {capped(text)}")


@contextmanager
def table_warnings() -> Iterator[None]:
    """While a command runs, print each :class:`TableWarning` (damage in a table's files that
    lakectl worked around, e.g. a skipped checkpoint) once on stderr as ``warning: ...``."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", TableWarning)
        other = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
            if not issubclass(category, TableWarning):
                other(message, category, *args, **kw)
            elif str(message) not in shown:
                shown.add(str(message))
                warning(str(message))

        warnings.showwarning = show
        yield


def elapsed(seconds: float) -> str:
    """``7s``, ``1m 05s``, ``2h 03m``: how long work has run."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole // 60 % 60:02d}m"


PROGRESS_TICK = 0.5  # seconds between refreshes of the status line


@contextmanager
def progress(
    enabled: bool, tasks: Callable[[], str | None] | None = None
) -> Iterator[Callable[[str], None]]:
    """A status line on stderr for long work, shown only on a terminal: the current phase
    (what the callback yielded was last given), the time since the work started and, from
    ``tasks``, how far the running job is (e.g. Spark's done/total tasks)."""
    if not enabled or not stderr.is_terminal:
        yield lambda message: None
        return
    started = time.monotonic()
    phase = ["working"]
    stop = threading.Event()

    def text() -> Text:
        parts = [phase[0], elapsed(time.monotonic() - started)]
        try:
            extra = tasks() if tasks else None
        except Exception:  # the job's progress is a nicety: never let it fail the work
            extra = None
        return Text(safe_text("  ".join([*parts, *([extra] if extra else [])])))

    with stderr.status(text()) as status:

        def tick() -> None:
            while not stop.wait(PROGRESS_TICK):
                status.update(text())

        def report(message: str) -> None:
            phase[0] = message
            status.update(text())

        ticker = threading.Thread(target=tick, name="lakectl-progress", daemon=True)
        ticker.start()
        try:
            yield report
        finally:
            stop.set()
            ticker.join(timeout=2)
