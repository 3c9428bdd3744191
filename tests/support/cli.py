"""The ``lakectl`` command line run inside the test process (no new JVM), output captured."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def run_lakectl_until_crash(*args: object, failpoint: str) -> CliRun:
    """Run the CLI in this process until it reaches ``failpoint``, where it stops as a killed
    process would (:func:`lakectl.failpoints.crash_at`: no abort or cleanup runs). Returns what
    it printed until then, with code 137 (a ``kill -9``'s); fails the test if it never got there.
    """
    from lakectl.cli.main import main
    from lakectl.failpoints import SimulatedCrash, crash_at

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), crash_at(failpoint):
        try:
            code = main([str(a) for a in args])
        except SimulatedCrash:
            return CliRun(137, out.getvalue(), err.getvalue())
    raise AssertionError(
        f"lakectl {' '.join(map(str, args))} ended with {code} before failpoint {failpoint}:\n"
        f"{err.getvalue()[-2000:]}"
    )


def create_region_table(warehouse: Path, schema: str) -> None:
    """Create the table ``t`` of ``schema`` in ``warehouse``, keyed by ``id`` and partitioned
    by ``region``, through the CLI in this process."""
    created = run_lakectl(
        "create", "t", "--warehouse", warehouse, "--schema", schema,
        "--primary-key", "id", "--partition-by", "region", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err


def csv_file(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """``rows`` under ``header`` written to the CSV file ``path`` (``None`` as an empty field)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path
