"""Two writers of one table, interleaved: a ``lakectl load --engine arrow`` process stopped after
it read the table and classified its batch (failpoint ``load.before_write``), another writer
committing meanwhile (in the test's process), then the stopped load going on to its commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def racing_arrow_load(
    tmp_path: Path, args: list[str], meanwhile: Callable[[], Any]
) -> tuple[int, dict[str, Any]]:
    """Run ``lakectl load *args --engine arrow --json`` in a new process, run ``meanwhile()``
    while it waits before writing, and return its exit code and JSON output."""
    reached, go = tmp_path / "load_reached", tmp_path / "load_go"
    env = dict(os.environ)
    env["LAKECTL_FAILPOINTS"] = f"load.before_write=touch:{reached},load.before_write=wait:{go}"
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "lakectl", "load", *args, "--engine", "arrow", "--json"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not reached.exists():
            if process.poll() is not None or time.time() > deadline:
                raise AssertionError(f"the load never reached its write: {process.poll()}")
            time.sleep(0.05)
        meanwhile()
    finally:
        go.touch()
    out, _ = process.communicate(timeout=120)
    return process.returncode, json.loads(out)
