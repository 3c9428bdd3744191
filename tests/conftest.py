"""Shared fixtures: one Spark session for the whole run (chispa-style), paths to shared material.

Helpers that are not fixtures live in :mod:`tests.support`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliRun, run_lakectl
from tests.support.paths import INTEROP


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] Spark session shared by every test of a worker that needs one. Its JVM keeps
    the C2 compiler: over a whole run, warm compiled code pays for the compiler's CPU (with C1
    only, a full run was about 1.5x slower; short-lived JVMs use :data:`JVM_OPTIONS`)."""
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
    "own_server": "server",  # tests/s3/test_s3_kill.py: a server of the test's own, killed
}
# The files of tests/cluster share the session-scoped Spark servers: they run on one worker, so
# each server starts once. Every other file is a group of its own (as `--dist loadfile`).
SERVER_GROUP = "servers"
SERVER_FILES = "tests/cluster/"
# The Spark files that take longest (`pytest --durations=0 FILE` on 2 busy cores: 60-150 s each,
# most of it JVMs of lakectl processes), heaviest first. They are handed out right after the
# servers' group, so that none of them starts late in a run while the other worker runs out of
# files; a file missing here only loses that head start. The other Spark files follow in
# collection order, then the pure ones.
HEAVIEST_FIRST = (
    "tests/ops/test_list_bucket.py",
    "tests/ops/test_compact.py",
    "tests/ops/test_change_commands_safety.py",
    "tests/ops/test_stream.py",
    "tests/ops/test_compact_processes.py",
    "tests/ops/test_crash_and_concurrency.py",
    "tests/updates/test_compile.py",
    "tests/spark/test_native_read.py",
    "tests/api/test_table_api.py",
    "tests/s3/test_s3_kill.py",
    "tests/cli/test_quiet_spark.py",
    "tests/packaging/test_wheel_install.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test from the fixtures it uses; in an xdist worker, order the groups so that
    the heaviest are handed out first: the servers' files, then those needing Spark (the
    :data:`HEAVIEST_FIRST` first), then the pure ones (short files fill the gaps at the end).
    Every worker sorts the same way."""
    for item in items:
        fixtures = tuple(getattr(item, "fixturenames", ()))
        for marker in sorted({FIXTURE_MARKERS[f] for f in fixtures if f in FIXTURE_MARKERS}):
            item.add_marker(marker)
    if not hasattr(config, "workerinput"):
        return
    rank: dict[str, int] = {}
    for item in items:
        group = group_of(item.nodeid)
        own = 0 if group == SERVER_GROUP else 1 if item.get_closest_marker("spark") else 2
        rank[group] = min(rank.get(group, own), own)
    first = {g: i for i, g in reversed(list(enumerate(group_of(it.nodeid) for it in items)))}
    heavy = {path: i for i, path in enumerate(HEAVIEST_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int, int]:
        group = group_of(item.nodeid)
        return rank[group], heavy.get(group, len(heavy)), first[group]

    items.sort(key=order)


def group_of(nodeid: str) -> str:
    """The scheduling group of a test: its file, or the servers' group."""
    path = nodeid.split("::", 1)[0]
    return SERVER_GROUP if path.startswith(SERVER_FILES) else path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile``: whole groups per worker (see :func:`group_of`), handed out in
    the workers' collection order (not by test count)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)
