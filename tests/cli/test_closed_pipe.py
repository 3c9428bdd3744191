"""A reader that stops early (`lakectl history t | head -1`) ends the command with exit 0 and
nothing on stderr: a real pipe to a real process, with commands that start no JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_lakectl

# More than a pipe's buffer (64 KiB on Linux) of output after the first line, so that the writer
# meets the closed pipe: 2,500 columns with long names, added by one `alter` (which the history
# lists).
NAMES = [f"column_with_a_long_name_{i:04d}" for i in range(2500)]


@pytest.fixture(scope="module")
def wide_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipe") / "wide"
    assert run_lakectl("create", path, "--schema", "id bigint").code == 0
    added = [arg for name in NAMES for arg in ("--add-column", f"{name} string")]
    assert run_lakectl("alter", path, *added).code == 0
    return path


def _first_line_then_close(*args: object) -> tuple[int, str, str]:
    """Run ``python -m lakectl ARGS``, read one line of its stdout, close the pipe, wait."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    process = subprocess.Popen(
        [sys.executable, "-m", "lakectl", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline().decode()
    process.stdout.close()
    err = process.stderr.read().decode()
    return process.wait(timeout=60), first, err


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (("history", "--json"), "{"),
        (("history", "--format", "csv"), "seq,version,operation,committed_at,counts,"),
        (("show", "--json"), "{"),
        (("show",), "table "),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, tuple) else "",
)
def test_a_closed_pipe_exits_0_quietly(
    wide_table: Path, args: tuple[str, ...], first_line: str
) -> None:
    code, first, err = _first_line_then_close(args[0], wide_table, *args[1:])
    assert first.startswith(first_line)
    assert (code, err) == (0, "")
