"""Times as people type them on the command line, and times in errors printed as ISO, not epoch
milliseconds (no Spark: the refusals come before any read)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lakectl.errors import TimeTravelError, UsageError
from tests.support.cli import run_lakectl


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    assert run_lakectl("create", path, "--schema", "id bigint").code == 0
    return path


@pytest.mark.parametrize("value", ["2000-01-01 10:00", "2000-01-01 10:00:00", "2000-01-01T10:00Z"])
def test_a_time_before_the_table_is_refused_in_iso(table: Path, value: str) -> None:
    run = run_lakectl("snapshot", table, "--known-at", value, "--json")
    assert run.code == TimeTravelError.exit_code
    message = run.json["error"]["message"]
    assert "did not exist yet at 2000-01-01T10:00:00Z" in message
    assert re.search(r"created at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\)", message), message
    assert not re.search(r"\d{10,} ?ms", message)


def test_a_malformed_time_names_the_option_and_the_formats(table: Path) -> None:
    run = run_lakectl("snapshot", table, "--as-of", "2000-01-01 25:00", "--json")
    assert run.code == UsageError.exit_code
    message = run.json["error"]["message"]
    assert message.startswith("--as-of: malformed time '2000-01-01 25:00'")
    assert "yyyy-MM-dd HH:mm" in message
