"""The ``lakectl`` command line run inside the test process (no new JVM), output captured."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
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
