"""Where lakectl's Spark data source jar is (``jvm/`` compiled; see :mod:`lakectl.spark.native_read`).

A checkout's ``make`` and a package build with a JDK put it inside the package, so a wheel
carries it. Kept free of pyspark so that ``lakectl --version`` can report it cheaply.
"""

from __future__ import annotations

import os

JAR = os.path.join(os.path.dirname(__file__), "jars", "lakectl-spark.jar")


def jar_path() -> str | None:
    """The data source's jar, if it was built (``make`` or a package build with a JDK)."""
    return JAR if os.path.isfile(JAR) else None
