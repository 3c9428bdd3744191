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


def test_every_exit_code_is_in_the_reference() -> None:
    from lakectl import errors
    from lakectl.cli.reference import EXIT_CODES

    kinds = [
        c
        for c in vars(errors).values()
        if isinstance(c, type)
        and issubclass(c, errors.LakectlError)
        and c is not errors.LakectlError
    ]
    missing = [c.__name__ for c in kinds if f"| {c.exit_code} | `{c.kind}` |" not in EXIT_CODES]
    assert not missing, f"exit codes missing from the reference's exit-code section: {missing}"
