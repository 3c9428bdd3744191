"""User documentation: every relative link resolves, and no page speaks of how lakectl is developed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
DEVELOPMENT_JARGON = re.compile(
    r"\b(session [0-9]+|sessions [0-9]|issue [0-9]+|seed 00[0-4])", re.I
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_development_history_in_user_docs(page: Path) -> None:
    found = DEVELOPMENT_JARGON.findall(page.read_text())
    assert not found, f"{page.name} mentions {found}"
