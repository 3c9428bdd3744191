"""Named points where tests can crash or stall a real process (``LAKECTL_FAILPOINTS``).

``LAKECTL_FAILPOINTS="load.before_commit=crash"`` makes the process exit abruptly (as ``kill -9``
would) when it reaches that point; ``=raise`` raises :class:`SimulatedCrash` there instead (the
same stop, without ending the process); ``=sleep:5`` stalls it for 5 seconds; ``=touch:PATH``
creates a file and ``=wait:PATH`` waits for one, so tests can order steps of two processes. Tests
in the same process arm a point with :func:`crash_at`. Unset in normal use, where each check is
one dictionary lookup.

A simulated crash must leave on storage exactly what a killed process leaves, so no cleanup runs
for it: every cleanup path that catches more than :class:`Exception` (a write transaction's
abort, a compaction's failed status, a staging directory's removal) lets it pass untouched
(:func:`is_crash`). A user's Ctrl-C still cleans up as before.

For tests of ``--engine auto``'s fallback only, :func:`arrow_limit_at` makes a point raise
:class:`~lakectl.errors.ArrowEngineLimit` instead, as the Arrow engine does when it meets
something it cannot do while running (``arrow.write``: where its ORC writer refuses a value).
Spark's jobs never meet such a limit: not in their Python workers, nor where their driver writes
with the same code (:func:`spark_side`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

_ARMED: set[str] = set()
"""Points armed in this process by :func:`crash_at`."""
_TRACES: list[list[str]] = []
"""The open :func:`traced` blocks' lists of reached points."""
_LIMITS: set[str] = set()
"""Points armed in this process by :func:`arrow_limit_at`."""
_SPARK_SIDE: list[bool] = []
"""Open :func:`spark_side` blocks."""


class SimulatedCrash(BaseException):
    """Raised at an armed failpoint: the writer stops there as if killed, and no abort or cleanup
    path handles it (a ``BaseException``, so ``except Exception`` lets it through)."""


def is_crash(exc: BaseException | None) -> bool:
    """True for a :class:`SimulatedCrash`: cleanup a killed process could not do is skipped."""
    return isinstance(exc, SimulatedCrash)


@contextlib.contextmanager
def crash_at(name: str) -> Iterator[None]:
    """While the block runs, reaching failpoint ``name`` raises :class:`SimulatedCrash` (for tests
    that run lakectl in their own process)."""
    _ARMED.add(name)
    try:
        yield
    finally:
        _ARMED.discard(name)


@contextlib.contextmanager
def traced() -> Iterator[list[str]]:
    """While the block runs, the failpoints this process reaches, in order (tests take from it
    the points a writer passes, so a new point is crash-tested without being listed)."""
    seen: list[str] = []
    _TRACES.append(seen)
    try:
        yield seen
    finally:
        _TRACES.remove(seen)


@contextlib.contextmanager
def arrow_limit_at(name: str) -> Iterator[None]:
    """Test-only: while the block runs, reaching failpoint ``name`` raises
    :class:`~lakectl.errors.ArrowEngineLimit` (in this process only, never in Spark's Python
    workers), so a test can make the Arrow engine give up mid-run without a value it refuses."""
    _LIMITS.add(name)
    try:
        yield
    finally:
        _LIMITS.discard(name)


@contextlib.contextmanager
def spark_side() -> Iterator[None]:
    """While the block runs, this process does a Spark job's own work with the Arrow engine's
    code (the delete events a Spark load's driver writes): :func:`arrow_limit_at` limits are
    not met there."""
    _SPARK_SIDE.append(True)
    try:
        yield
    finally:
        _SPARK_SIDE.pop()


def failpoint(name: str) -> None:
    """Crash or stall here if the environment (or :func:`crash_at`) asks for it."""
    for seen in _TRACES:
        seen.append(name)
    if name in _ARMED:
        raise SimulatedCrash(name)
    if name in _LIMITS and not _SPARK_SIDE:
        from lakectl.errors import ArrowEngineLimit

        raise ArrowEngineLimit(
            f"failpoint {name} (a test's simulated limit)", hint="use --engine spark"
        )
    spec = os.environ.get("LAKECTL_FAILPOINTS")
    if not spec:
        return
    for item in spec.split(","):
        point, _, action = item.partition("=")
        if point.strip() != name:
            continue
        action = action.strip()
        if action == "crash":
            os._exit(137)
        if action == "raise":
            raise SimulatedCrash(name)
        if action.startswith("sleep:"):
            time.sleep(float(action.split(":", 1)[1]))
        if action.startswith("touch:"):  # tell another process this point was reached
            open(action.split(":", 1)[1], "a").close()
        if action.startswith("wait:"):  # until another process touches the file (at most 10 min)
            deadline = time.time() + 600
            while not os.path.exists(action.split(":", 1)[1]) and time.time() < deadline:
                time.sleep(0.2)
