"""A directory that is neither a lakectl table nor a Hive-written one is "not a table" for every
command: exit 66 (not found), the path in the message, a hint, one JSON error object."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.errors import TableNotFoundError
from tests.support.cli import run_lakectl

COMMANDS = [
    ["show"],
    ["history"],
    ["snapshot"],
    ["snapshot", "--limit", "3"],
    ["updates"],
    ["compactions"],
    ["clean", "--dry-run"],
    ["compact", "--major"],
    ["set", "orc.compress=ZLIB"],
    ["skew", "--column", "a"],
    ["delete", "--where", "a = 1"],
    ["restore", "--version", "1"],
]


@pytest.fixture(params=["json-output", "empty"])
def not_a_table(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A directory holding what a user may mistake for a table: some other output, or nothing."""
    directory = tmp_path / "out"
    directory.mkdir()
    if request.param == "json-output":
        (directory / "out.json").write_text('{"a": 1}\n')
        (directory / "part-0000.csv").write_text("a\n1\n")
    return directory


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_says_not_a_table(not_a_table: Path, command: list[str]) -> None:
    before = sorted(p.name for p in not_a_table.iterdir())
    run = run_lakectl(command[0], not_a_table, *command[1:], "--json")
    assert run.code == TableNotFoundError.exit_code == 66, run.err
    error = run.json["error"]
    assert error["type"] == "not_found"
    assert str(not_a_table) in error["message"]
    assert "not a" in error["message"] and "table" in error["message"]
    assert "ORC" not in error["message"].replace("no ORC files", "")
    assert error["hint"]
    assert "Traceback" not in run.err
    assert sorted(p.name for p in not_a_table.iterdir()) == before  # nothing written
