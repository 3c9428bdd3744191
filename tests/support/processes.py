"""Running lakectl in new processes: JVM options for short-lived ones, and a process that dies at a
failpoint, as ``kill -9`` would."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import REPO

# For short-lived JVMs on 2 shared cores running tiny tables: the C1 compiler only (C2's compiler
# threads cost more CPU than they save in a few seconds) and the serial GC. Measured: a cold start
# over 2x cheaper in CPU (119 s -> 46 s for six loads at once). Not for the test session's
# long-lived JVM: there warm C2 code wins.
TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
JVM_OPTIONS = (
    "--conf", "spark.driver.memory=1g",
    "--conf", f"spark.driver.extraJavaOptions={TEST_JAVA_OPTIONS}",
)  # fmt: skip


def run_crashing(*args: object, failpoint: str) -> subprocess.CompletedProcess[str]:
    """``lakectl ARGS`` in a new process (local[1]) that dies as ``kill -9`` would at
    ``failpoint`` (:mod:`lakectl.failpoints`); the test asserts the table is unchanged."""
    env = {**os.environ, "LAKECTL_FAILPOINTS": f"{failpoint}=crash", "PYTHONPATH": str(REPO)}
    env["PYSPARK_PYTHON"] = sys.executable
    command = [sys.executable, "-m", "lakectl", "--master", "local[1]", *JVM_OPTIONS]
    command += map(str, args)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
