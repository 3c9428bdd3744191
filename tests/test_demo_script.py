"""`make demo` shows each command before running it, quoted so that it can be pasted into a
shell: scripts/steps.sh's `step`, checked by pasting what it shows back into bash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
AWKWARD = ["sell_id <= 5 or sell_id >= 229", "it's", "", 'a"b', "$HOME", "x;y", "plain", "--a=b,c"]


def _bash(script: str) -> str:
    done = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def test_demo_uses_the_quoting_step() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert (
        "source scripts/steps.sh" in demo
        and "printf '\\n\\033[1m$ %s\\033[0m\\n' \"$*\"" not in demo
    )


@pytest.mark.parametrize("word", AWKWARD)
def test_a_shown_command_pastes_back_to_the_same_arguments(word: str) -> None:
    out = _bash(f"source scripts/steps.sh; step printf '<%s>\\n' {_sh(word)} last")
    shown, *ran = out.lstrip("\n").splitlines()
    assert shown.startswith("\033[1m$ printf ") and shown.endswith("\033[0m")
    command = shown.removeprefix("\033[1m$ ").removesuffix("\033[0m")
    assert ran == [f"<{word}>", "<last>"]
    assert _bash(command).splitlines() == ran  # pasted as shown, it runs the same command
    if word == "plain":
        assert command == "printf '<%s>\\n' plain last"


def _sh(word: str) -> str:
    return "'" + word.replace("'", "'\"'\"'") + "'"
