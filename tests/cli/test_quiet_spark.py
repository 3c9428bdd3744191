"""Nothing but lakectl's own output reaches the terminal of a command that starts Spark: not the
JVM's start-up warnings, not Spark's log records; ``--debug`` lets them through. Real processes
(``python -m lakectl``), since Spark's output comes from the JVM they start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import JVM_OPTIONS

# Lines Spark prints on its own when its output is not redirected (any one is enough).
SPARK_LINES = ("WARNING: Using incubator modules", "Setting default log level", "log4j")


def _lakectl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYSPARK_PYTHON"] = sys.executable
    return subprocess.run(
        [sys.executable, "-m", "lakectl", *args, "--master", "local[1]", *JVM_OPTIONS],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, jvm_processes: object) -> Path:
    """A warehouse with table t (created; no Spark needed) and a tiny CSV to load; the tests
    run lakectl in new processes that start their own JVM."""
    root = tmp_path_factory.mktemp("quiet")
    (root / "rows.csv").write_text("id,name\n1,a\n2,b\n")
    (root / "bad.csv").write_text("id,name\nnot-a-number,a\n")
    created = _lakectl(root, "create", "t", "--schema", "id bigint, name string")
    assert created.returncode == 0, created.stderr
    return root


def test_load_and_snapshot_print_only_lakectl_output(project: Path) -> None:
    loaded = _lakectl(project, "load", "t", "rows.csv", "--mode", "append")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stderr == ""
    assert loaded.stdout.startswith("loaded rows.csv into t as version 1")
    shown = _lakectl(project, "snapshot", "t", "--order-by", "id")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["id  name", "1   a", "2   b"]
    assert shown.stderr.splitlines() == ["t @ version 1", "2 row(s)"]


def test_an_error_from_spark_prints_only_lakectl_error(project: Path) -> None:
    # Spark parses the batch and meets a value of the wrong type: lakectl's error, nothing else.
    bad = _lakectl(project, "load", "t", "bad.csv", "--mode", "append", "--json")
    assert bad.returncode == 65, bad.stderr
    assert bad.stdout.count("\n") == 1 and '"error"' in bad.stdout
    assert [
        line for line in bad.stderr.splitlines() if not line.startswith(("error:", "  hint:"))
    ] == []


def test_debug_lets_spark_output_through(project: Path) -> None:
    shown = _lakectl(project, "--debug", "snapshot", "t", "--json")
    assert shown.returncode == 0, shown.stderr
    assert any(marker in shown.stderr for marker in SPARK_LINES), shown.stderr
    assert len(json.loads(shown.stdout)["rows"]) == 2  # stdout stays one JSON object
