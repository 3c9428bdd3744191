"""The fast tier (`make check`) runs no JVM and no server: its markers come from fixtures, and
`java` there is one that fails, so a test that slipped through would fail rather than run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

from tests.support.paths import REPO

NO_JAVA = REPO / "tests" / "support" / "no_java"
FAST = "not spark and not server"


def _fast_tier_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = f"{NO_JAVA}{os.pathsep}{env.get('PATH', '')}"
    return env


def _collected(*paths: str, marks: str = FAST) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marks, *paths],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_tests_using_spark_or_servers_are_not_in_the_fast_tier() -> None:
    # Markers follow the fixtures, not the folders: the cluster files use the Spark servers
    # (some only through other fixtures), most of test_compact.py the `spark` fixture, while
    # test_log.py and a few planning tests in test_compact.py use neither.
    collected = _collected(
        "tests/ops/test_compact.py",
        "tests/cluster/test_standalone.py",
        "tests/cluster/test_s3_cluster.py",
        "tests/table/test_log.py",
        "tests/s3/test_s3_kill.py",
    )
    files = {line.split("::")[0] for line in collected}
    assert files == {"tests/table/test_log.py", "tests/ops/test_compact.py"}, files
    assert not any("test_minor_major_and_auto_keep_the_snapshot" in line for line in collected)
    assert any("test_valid_time_travel_skips" in line for line in collected)


def test_a_jvm_cannot_start_in_the_fast_tier() -> None:
    code = (
        "from lakectl.spark.session import SparkSettings, get_session\n"
        "get_session(SparkSettings(master='local[1]'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=_fast_tier_env(),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "the fast tier must not start a JVM" in done.stdout + done.stderr


def test_the_files_handed_out_first_exist_and_need_spark() -> None:
    """tests/conftest.py hands these Spark files out first: a renamed or moved file there would
    silently lose its head start."""
    from tests.conftest import HEAVIEST_FIRST

    assert len(set(HEAVIEST_FIRST)) == len(HEAVIEST_FIRST)
    assert [p for p in HEAVIEST_FIRST if not (REPO / p).is_file()] == []
    pure = Counter(line.split("::")[0] for line in _collected(*HEAVIEST_FIRST))
    everything = Counter(line.split("::")[0] for line in _collected(*HEAVIEST_FIRST, marks=""))
    assert [p for p in HEAVIEST_FIRST if pure[p] == everything[p]] == []
