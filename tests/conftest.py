"""Shared fixtures: one Spark session for the whole run (chispa-style), paths to shared material."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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
