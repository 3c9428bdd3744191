"""Shared fixtures: one Spark session for the whole run (chispa-style), paths to shared material."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("LAKECTL_SHARED", REPO.parent / "shared"))
INTEROP = SHARED / "interop"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] Spark session shared by every test that needs one."""
    from lakectl.spark.session import SparkSettings, get_session

    session = get_session(SparkSettings(master="local[2]"))
    yield session
    # Stopped at interpreter exit; stopping here would break other session-scoped users.


@pytest.fixture
def interop() -> Path:
    """The directory of real Hive-written tables (read-only)."""
    if not INTEROP.is_dir():
        pytest.fail(f"shared interop material not found at {INTEROP} (set LAKECTL_SHARED)")
    return INTEROP


@dataclass(frozen=True)
class CliRun:
    """One in-process ``lakectl`` invocation: exit code, stdout, stderr."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def run_lakectl(*args: object) -> CliRun:
    """Run the CLI in this process (reusing its Spark session), capturing what it prints."""
    from lakectl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return CliRun(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def lakectl_cli() -> Callable[..., CliRun]:
    """``lakectl_cli("snapshot", path, "--json").json``: the CLI in-process, output captured.

    Tests that reach Spark through it should also request ``spark`` so the shared local[2]
    session is the one the CLI reuses.
    """
    return run_lakectl
