"""The CLI reference in docs/ is what ``--help`` prints today."""

from __future__ import annotations

from pathlib import Path

from lakectl.cli.reference import render_cli_reference

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli-reference.md"


def test_cli_reference_is_current() -> None:
    assert PAGE.read_text() == render_cli_reference(), (
        "docs/cli-reference.md is stale: run `python -m lakectl.cli.reference > docs/cli-reference.md`"
    )


def test_cli_reference_covers_every_command() -> None:
    page = render_cli_reference()
    for name in ("create", "load", "snapshot", "compact", "clean", "list-bucket", "server start"):
        assert f"## lakectl {name}\n" in page
