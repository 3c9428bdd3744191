"""Shared fixtures: one Spark session for the whole run (chispa-style), paths to shared material.

Helpers that are not fixtures live in :mod:`tests.support`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliRun, run_lakectl
from tests.support.paths import INTEROP
from tests.support.processes import TEST_JAVA_OPTIONS


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] Spark session shared by every test of a worker that needs one (its JVM tuned
    for tiny tables on few cores, see :data:`tests.support.processes.TEST_JAVA_OPTIONS`)."""
    from lakectl.spark.session import SparkSettings, get_session

    java_options = {"spark.driver.extraJavaOptions": TEST_JAVA_OPTIONS}
    session = get_session(SparkSettings(master="local[2]", conf=java_options))
    yield session
    # Stopped at interpreter exit; stopping here would break other session-scoped users.


@pytest.fixture
def interop() -> Path:
    """The directory of real Hive-written tables (read-only)."""
    if not INTEROP.is_dir():
        pytest.fail(f"shared interop material not found at {INTEROP} (set LAKECTL_SHARED)")
    return INTEROP


@pytest.fixture(scope="session")
def lakectl_cli() -> Callable[..., CliRun]:
    """``lakectl_cli("snapshot", path, "--json").json``: the CLI in-process, output captured.

    Tests that reach Spark through it should also request ``spark`` so the shared local[2]
    session is the one the CLI reuses.
    """
    return run_lakectl


@pytest.fixture(scope="session")
def jvm_processes() -> tuple[str, ...]:
    """For a test that starts ``lakectl`` processes which start their own JVM: the JVM options
    that make such short-lived drivers cheap. Requesting it marks the test ``spark``."""
    from tests.support.processes import JVM_OPTIONS

    return JVM_OPTIONS


# --- tiers and scheduling -----------------------------------------------------------------------

# A test that uses one of these fixtures (directly or through other fixtures) needs a JVM or a
# server; its marker is set here, never by hand, so the fast tier (`-m "not spark and not server"`)
# cannot start one. `make check` also hides `java` to prove it.
FIXTURE_MARKERS = {
    "spark": "spark",
    "jvm_processes": "spark",
    "standalone_cluster": "server",
    "connect_url": "server",
    "local_reference": "spark",
    "s3_server": "server",
    "seaweed": "server",
}
# Files whose tests share the session-scoped Spark servers run on one worker, so each starts once.
SERVER_GROUP = "servers"
SHARED_SERVERS = frozenset({"standalone_cluster", "connect_url"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test from the fixtures it uses; under ``--dist loadgroup`` keep each file on one
    worker (server files together) and hand out the heaviest groups first."""
    for item in items:
        fixtures = _fixtures_of(item)
        for marker in sorted({FIXTURE_MARKERS[f] for f in fixtures if f in FIXTURE_MARKERS}):
            item.add_marker(marker)
    if config.getoption("dist", "no") != "loadgroup":
        return
    server_files = {_file_of(it) for it in items if SHARED_SERVERS & set(_fixtures_of(it))}
    for item in items:
        if _file_of(item) in server_files and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(SERVER_GROUP))
    weight: dict[str, int] = {}
    for item in items:
        group = _group_of(item)
        rank = 0 if group == SERVER_GROUP else 1 if item.get_closest_marker("spark") else 2
        weight[group] = min(weight.get(group, rank), rank)
    first_seen = {g: i for i, g in reversed(list(enumerate(_group_of(it) for it in items)))}
    items.sort(key=lambda it: (weight[_group_of(it)], first_seen[_group_of(it)]))
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(_group_of(item)))


def _fixtures_of(item: pytest.Item) -> tuple[str, ...]:
    return tuple(getattr(item, "fixturenames", ()))


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _group_of(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    return _file_of(item)
