"""Running lakectl in a process that dies at a failpoint, as ``kill -9`` would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_crashing(*args: object, failpoint: str) -> subprocess.CompletedProcess[str]:
    """``lakectl ARGS`` in a new process (local[1]) that dies as ``kill -9`` would at
    ``failpoint`` (:mod:`lakectl.failpoints`); the test asserts the table is unchanged."""
    env = {**os.environ, "LAKECTL_FAILPOINTS": f"{failpoint}=crash", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "lakectl", "--master", "local[1]", *map(str, args)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
