"""lakectl's build backend: setuptools' ``build_meta``, plus lakectl's Spark data source jar.

``python -m build`` and ``pip wheel .`` call this module (``[build-system]`` in pyproject.toml).
Before setuptools builds an sdist or a wheel, :func:`ensure_jar` makes sure
``lakectl/jars/lakectl-spark.jar`` is there and not older than its Java sources (``jvm/``),
compiling it with ``scripts/build-jar.sh`` (the script ``make`` runs) when a JDK's ``javac`` is
found. The jar ships inside the wheel as package data, and inside the sdist next to the sources
it was compiled from, so a wheel built from the sdist on a machine without a JDK still has it.

The sources compile against the Spark jars of an installed pyspark: where the build environment
has none and the jar must be compiled, pyspark is added to the build requirements.

Without ``javac`` (and no jar already built) the build goes on and warns: the package works,
but its reads of tables with deltas take the live-row kernel in Spark's Python tasks instead of
the data source (correct, slower). ``LAKECTL_REQUIRE_JAR=1`` turns that warning into a failed build.

Editable installs (``pip install -e .``) build no jar here: ``make`` builds it in place.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks this backend does not change)
    build_editable,
    get_requires_for_build_editable,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

JAR = Path("lakectl/jars/lakectl-spark.jar")
SOURCES = Path("jvm/src")
BUILD_SCRIPT = Path("scripts/build-jar.sh")
# The pyspark whose Spark jars the sources compile against (the runtime range's major).
SPARK_REQUIREMENT = "pyspark>=4.3.0,<5"
REQUIRE_ENV = "LAKECTL_REQUIRE_JAR"


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_wheel(config_settings) + _spark_requirement()


def get_requires_for_build_sdist(config_settings: dict | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_sdist(config_settings) + _spark_requirement()


def build_wheel(
    wheel_directory: str,
    config_settings: dict | None = None,
    metadata_directory: str | None = None,
) -> str:
    ensure_jar()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict | None = None) -> str:
    ensure_jar()
    return _setuptools.build_sdist(sdist_directory, config_settings)


def ensure_jar() -> None:
    """Compile the data source jar if it is missing or older than its sources and a JDK is
    there; otherwise warn (or fail with ``LAKECTL_REQUIRE_JAR=1``) that it is missing."""
    if _jar_is_current():
        _say(f"using the data source jar {JAR}")
        return
    javac = _javac()
    if javac is None or not BUILD_SCRIPT.is_file() or shutil.which("bash") is None:
        _missing("no javac (a JDK 17 or 21) was found" if javac is None else "cannot run bash")
        return
    if importlib.util.find_spec("pyspark") is None:
        _missing("pyspark is not installed in the build environment (its Spark jars are needed)")
        return
    subprocess.run(["bash", str(BUILD_SCRIPT), sys.executable], check=True)
    if not JAR.is_file():
        _missing(f"{BUILD_SCRIPT} built no jar")


def _spark_requirement() -> list[str]:
    """pyspark, when the jar must be compiled here and the build environment lacks it."""
    if _jar_is_current() or _javac() is None or importlib.util.find_spec("pyspark") is not None:
        return []
    return [SPARK_REQUIREMENT]


def _jar_is_current() -> bool:
    if not JAR.is_file():
        return False
    built = JAR.stat().st_mtime
    return all(p.stat().st_mtime <= built for p in SOURCES.rglob("*.java"))


def _javac() -> str | None:
    """The ``javac`` scripts/build-jar.sh runs: JAVA_HOME's if set, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which(os.path.join(home, "bin", "javac") if home else "javac")


def _missing(reason: str) -> None:
    message = (
        f"{reason}: the package is built WITHOUT lakectl's Spark data source ({JAR}). It works, "
        "but reads of tables with deltas take the live-row kernel in Spark's Python tasks, "
        "correct but slower. "
        "Install a JDK (e.g. apt-get install openjdk-17-jdk-headless) and build again."
    )
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        raise RuntimeError(f"{message} ({REQUIRE_ENV} is set: failing)")
    _say(f"WARNING: {message}")


def _say(message: str) -> None:
    print(f"lakectl build: {message}", file=sys.stderr, flush=True)
