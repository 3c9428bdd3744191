"""The documentation's shell examples run as written: extracted from the ```sh blocks of the
README and the user guides that build on its tables, and run in that order, in-process through
the CLI, in an empty directory holding only the sample data. Lines and pages that need more (a
cluster, other tables, a clock) are listed below with the reason, never skipped silently."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_lakectl

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
GUIDE = REPO / "docs" / "guide"
# In order: each page continues with the tables the pages before it made.
PAGES = [
    README,
    GUIDE / "time-travel.md",
    GUIDE / "compaction.md",
    GUIDE / "changes.md",
    GUIDE / "history-and-changes.md",
    GUIDE / "cron.md",
    GUIDE / "engines.md",
]
# Pages whose examples this test does not run, with the reason.
PAGES_NOT_RUN = {
    "clusters.md": "needs a cluster, a Connect server, S3 or HDFS",
    "skew.md": "works on an `events` table no example creates",
    "streaming.md": "a long-running stream over a landing directory",
    "loading.md": "a job looping over a landing folder no example makes (run as a script by "
    "tests/ops/test_load_cron.py)",
    "expressions.md": "no sh examples (its rules are tested in tests/expr)",
    "schema-evolution.md": "loads a batch_with_channel.parquet no example makes (its commands "
    "are tested in tests/ops/test_schema_evolution.py)",
    "python-api.md": "Python, not sh (its API is tested in tests/api)",
    "install.md": "builds and installs wheels (tested by tests/packaging)",
    "damaged-data-files.md": "no sh examples (its errors are tested in "
    "tests/ops/test_damaged_data_files.py)",
    "terminal-output.md": "no sh examples (terminal screens are tested in "
    "tests/cli/test_readable_output.py and tests/cli/test_terminal_table.py)",
}
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
# Lines the test does not run, each with the reason (any other non-lakectl line fails the test).
NOT_RUN = {
    "make demo": "builds a virtualenv and runs scripts/demo.sh (tested by tests/ops/test_sample_demo.py)",
    "make test": "runs the whole test suite",
    'lakectl restore sales --as-of "2024-06-01 12:00"': "a time before this test made the table",
    "python -m build": "builds the wheel (tested by tests/packaging/test_wheel_install.py)",
    "pipx install dist/lakectl-*.whl": "installs the wheel (tested by tests/packaging)",
    "lakectl --version": "prints the version (tested by tests/cli/test_install_commands.py)",
    'eval "$(lakectl completion bash)"': "changes the shell (tested by tests/cli)",
}


def shell_commands(markdown: str) -> list[str]:
    """The commands of every ```sh block, continuation lines joined, comments kept."""
    commands: list[str] = []
    for block in SH_BLOCK.findall(markdown):
        commands.extend(line.strip() for line in block.replace("\\\n", " ").splitlines())
    return [c for c in commands if c and not c.startswith("#")]


def runnable(commands: list[str]) -> list[list[str]]:
    """The lakectl commands as argument lists; the lines in NOT_RUN are skipped by name, and a
    command a page repeats from an earlier one (the guides restate the README's tour) runs once."""
    out: list[list[str]] = []
    for command in commands:
        words = shlex.split(command, comments=True)
        if command.split("#")[0].strip() in NOT_RUN or words[1:] in out:
            continue
        assert words[0] == "lakectl", f"README example the test cannot run: {command!r}"
        out.append(words[1:])
    return out


def all_commands() -> list[str]:
    return [c for page in PAGES for c in shell_commands(page.read_text())]


def test_every_guide_is_run_or_listed_with_a_reason() -> None:
    guides = {p.name for p in GUIDE.glob("*.md")}
    assert guides == {p.name for p in PAGES[1:]} | set(PAGES_NOT_RUN)


def test_the_extraction_sees_every_example() -> None:
    commands = all_commands()
    assert {c.split("#")[0].strip() for c in commands} >= set(NOT_RUN)
    args = runnable(commands)
    assert ["history", "sales"] in args
    # a continued command is one command: create with its schema and key
    create = next(a for a in args if a[:2] == ["create", "sales"])
    assert "--primary-key" in create and "--partition-by" in create


@pytest.fixture
def empty_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with only sample_data/, as cwd; no lakectl settings from outside."""
    for name in list(os.environ):
        if name.startswith("LAKECTL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "project"
    shutil.copytree(REPO / "sample_data", project / "sample_data")
    monkeypatch.chdir(project)
    return project


def test_readme_examples_run_as_written(spark: object, empty_project: Path) -> None:
    for args in runnable(all_commands()):
        run = run_lakectl(*args)
        assert run.code == 0, f"lakectl {shlex.join(args)} -> exit {run.code}: {run.err}"
        assert "Traceback" not in run.err
    assert (empty_project / "warehouse" / "sales").is_dir()
    assert (empty_project / "warehouse" / "doctors").is_dir()
