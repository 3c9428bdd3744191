"""What lakectl prints from user input or statements is shown as it is: no rich markup is
interpreted, and no terminal control sequence reaches the terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from lakectl.cli import output
from lakectl.errors import BadInputError

HOSTILE = [
    "DELETE FROM doctors WHERE x = 1 /*[conceal]*/ OR TRUE /*[/conceal]*/",
    "a [/] b",
    "[link=https://example.invalid]click[/link]",
    "red \x1b[31mtext\x1b[0m and a bell \x07",
    "right-to-left \u202eoverride",
]


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """stdout and stderr as a colour terminal, captured."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=300, color_system="standard")
    monkeypatch.setattr(output, "stdout", console)
    monkeypatch.setattr(output, "stderr", console)
    return buffer


def test_safe_text_shows_control_characters() -> None:
    assert output.safe_text("a\x1b[31mb\u202ec") == "a\\u001b[31mb\\u202ec"
    assert output.safe_text("tab\tand\nline") == "tab\tand\nline"
    assert output.safe_text("O'Brien [x]") == "O'Brien [x]"


def test_table_cells_are_never_markup(terminal: io.StringIO) -> None:
    output.table("statements [bold]x[/]", ["sql"], [[text] for text in HOSTILE])
    shown = terminal.getvalue()
    for literal in (
        "/*[conceal]*/ OR TRUE /*[/conceal]*/",
        "a [/] b",
        "[link=https://example.invalid]",
    ):
        assert literal in shown
    assert "\x1b[31m" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert "\\u001b[31m" in shown and "\\u202e" in shown


def test_errors_and_lines_are_never_markup(terminal: io.StringIO) -> None:
    output.emit_error(BadInputError("bad statement: a [/] b \x1b[2J"), as_json=False)
    output.line("line [link=x]y[/link] \x1b]0;title\x07")
    output.note("note [/]")
    shown = terminal.getvalue()
    assert "a [/] b \\u001b[2J" in shown
    assert "[link=x]y[/link] \\u001b]0;title\\u0007" in shown and "note [/]" in shown
