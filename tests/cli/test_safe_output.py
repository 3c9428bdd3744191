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


# --- rows for other programs: csv, tsv, json ----------------------------------------------------

CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"  # OSC 52: writes the terminal's clipboard
CONTROL = [CLIPBOARD, "carriage\rreturn", "csi \x9b2J", "nul \x00 del \x7f", "bidi \u202e"]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "table"])
def test_no_format_writes_a_control_character(fmt, capsys) -> None:
    output.table(None, ["value", "col\x1b[2J"], [[text, 1] for text in CONTROL], fmt)
    shown = capsys.readouterr().out
    raw = [ch for ch in shown if ch not in "\n\t" and not ch.isprintable()]
    assert raw == []
    assert "\u202e" not in shown
    escaped = "\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007"
    assert escaped in shown  # visible, not silently dropped


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_csv_keeps_line_breaks_inside_quoted_fields(fmt, capsys) -> None:
    import csv

    output.table(None, ["a", "b"], [["two\nlines", "tab\there"]], fmt)
    rows = list(
        csv.reader(io.StringIO(capsys.readouterr().out), delimiter="," if fmt == "csv" else "\t")
    )
    assert rows == [["a", "b"], ["two\nlines", "tab\there"]]


def test_the_cli_escapes_csv_rows_end_to_end(tmp_path, monkeypatch, lakectl_cli) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    done = lakectl_cli("--warehouse", f"/wh{CLIPBOARD}", "config", "--format", "csv")
    assert done.code == 0, done.err
    assert "\x1b" not in done.out and "\x07" not in done.out
    assert "/wh\\u001b]52;c;" in done.out


# --- error messages: bounded, escaped -------------------------------------------------------------


def test_a_huge_error_message_is_capped(terminal: io.StringIO) -> None:
    quoted = "A" * 200_000
    output.emit_error(BadInputError(f"bad statement: {quoted}", hint="h" * 10_000), as_json=False)
    shown = terminal.getvalue()
    assert len(shown) < 1_200
    assert f"... ({len('bad statement: ') + 200_000 - 400:,} more characters)" in shown
    assert "... (9,600 more characters)" in shown


def test_a_huge_error_is_one_bounded_json_object(capsys) -> None:
    import json

    output.emit_error(BadInputError("x\x1b]52;c;ZQ==\x07" + "y" * 300_000), as_json=True)
    out = capsys.readouterr().out
    (line,) = out.splitlines()
    body = json.loads(line)["error"]
    assert body["type"] == "bad_input"
    assert body["message"].endswith("more characters)") and len(body["message"]) < 500
    assert "\x1b" not in out  # JSON escapes it as \u001b


def test_the_cli_caps_an_echoed_table_name(tmp_path, monkeypatch, lakectl_cli) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    name = "t" * 200_000 + "$"
    done = lakectl_cli("show", name, "--json")
    assert done.code == 2
    (line,) = done.out.splitlines()
    message = json.loads(line)["error"]["message"]
    assert message.startswith("invalid table name 'ttt") and "more characters)" in message
    assert len(done.err) < 1_500


def test_bar_chart_labels_are_escaped_and_never_markup(terminal: io.StringIO) -> None:
    output.bar_chart("skew of [b]x[/b]", [(f"a{CLIPBOARD} [b]y[/b]", 3, 0.5)], marked={"z"})
    shown = terminal.getvalue()
    assert "\\u001b]52;c;" in shown and "\x07" not in shown
    assert "[b]y[/b]" in shown and "[b]x[/b]" in shown
