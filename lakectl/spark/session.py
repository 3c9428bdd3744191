"""Starting (or reusing) the Spark session: local, a cluster master, or Spark Connect.

Only this package imports pyspark. Settings are tuned for small machines: few shuffle partitions,
adaptive execution on, and Spark's Python workers pinned to lakectl's own interpreter.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from lakectl.errors import SparkUnavailableError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.orc.impl": "native",
    "spark.sql.orc.enableVectorizedReader": "true",
    "spark.sql.orc.enableNestedColumnVectorizedReader": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
    "spark.sql.files.maxPartitionBytes": "64m",
    "spark.sql.autoBroadcastJoinThreshold": "64m",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    "spark.sql.ansi.enabled": "false",
    # The analyzer resolves one level of nested higher-order functions per iteration; checked
    # integer arithmetic (lakectl.spark.compile_expr) nests one per operator, and a statement
    # may nest 200 levels: 100 iterations (the default) failed at about 25 operators.
    "spark.sql.analyzer.maxIterations": "1000",
    # lakectl passes exact file lists; don't launch a listing job to re-list them.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # ORC maps the `row` struct of ACID files by position: never prune inside it.
    "spark.sql.optimizer.nestedSchemaPruning.enabled": "false",
    # PySpark otherwise records the Python call site of every DataFrame and Column call in the
    # JVM (four py4j round trips each) for the query context of user code's errors; lakectl's
    # plans are its own. A 10M-row read of 840 delta files was planned in 0.64 s with, 0.45 s
    # without.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
# Local files without Hadoop's .crc side files (a checksum file to write or open next to every
# ORC file of a transaction or a scan; a 10M/500k load's 80 files: 6.6 -> 5.9 s). Local mode
# only: cluster code (YARN's client) casts FileSystem.getLocal to Hadoop's LocalFileSystem.
_LOCAL_MODE_CONF = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}


@dataclass(frozen=True)
class SparkSettings:
    """How to reach Spark: ``master`` (local[*], spark://...), or ``remote`` (sc://...)."""

    master: str = "local[*]"
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    app_name: str = "lakectl"


_session: SparkSession | None = None


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return True
    return shutil.which("java") is not None


def _is_loopback(url: str) -> bool:
    """A local master, or a cluster/Connect URL whose host is this machine's loopback."""
    if url.startswith("local"):
        return True
    host = urlparse(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def driver_conf(master: str = "local[*]") -> dict[str, str]:
    """Spark settings for a driver lakectl launches: its own session, or a Connect server.

    The driver binds to and announces loopback only when the master is local or on loopback; a
    driver for a real cluster must be reachable by executors on other hosts.
    """
    conf = dict(_DEFAULT_CONF)
    if master.startswith("local"):
        conf.update(_LOCAL_MODE_CONF)
    if not _is_loopback(master):
        for key in ("spark.driver.host", "spark.driver.bindAddress"):
            conf.pop(key)
    else:
        # Executors on this machine run lakectl's interpreter (same packages, same pyarrow).
        conf["spark.executorEnv.PYSPARK_PYTHON"] = sys.executable
    conf["spark.executor.extraJavaOptions"] = "-XX:-DontCompileHugeMethods"
    log_conf = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    # Spark's generated code for long statement chains exceeds 8000 bytes per method, which
    # the JVM otherwise never JIT-compiles (Type 7 reads ran 26-40x slower without this).
    options = f"-Dlog4j.configurationFile=file:{log_conf} -XX:-DontCompileHugeMethods"
    if master.startswith("local"):
        # The driver runs the tasks in local mode. The throughput collector's cheaper write
        # barriers made warm 10M-row reads about 25% faster than with G1, the default, whose
        # barrier and refinement work competes with the tasks for the few cores of a laptop.
        options += f" {_LOCAL_GC}"
    conf["spark.driver.extraJavaOptions"] = options
    jar = _lakectl_jar()
    if jar:
        # lakectl's data source (native_read): on the driver's class path from its start, and
        # shipped to the executors of a cluster (local mode runs them in the driver).
        conf["spark.driver.extraClassPath"] = jar
        if not _runs_tasks_in_the_driver(master):
            conf["spark.jars"] = jar
    return conf


def _runs_tasks_in_the_driver(master: str) -> bool:
    """``local`` and ``local[N]``; not ``local-cluster[...]``, whose executors are processes."""
    return master == "local" or master.startswith("local[")


def _lakectl_jar() -> str | None:
    from lakectl.data_source_jar import jar_path

    return jar_path()


_LOCAL_GC = "-XX:+UseParallelGC"
# Settings that list paths: the user's entries are added to lakectl's, not put in their place.
_PATH_LISTS = {"spark.driver.extraClassPath": os.pathsep, "spark.jars": ","}
_CHOOSES_GC = re.compile(r"-XX:\+Use\w+GC\b")


def merge_java_options(ours: str, theirs: str) -> str:
    """JVM options: ``ours`` then the user's ``theirs``, without our collector if the user
    chose one (the JVM refuses to start with two)."""
    if _CHOOSES_GC.search(theirs):
        ours = " ".join(o for o in ours.split() if o != _LOCAL_GC)
    return f"{ours} {theirs}".strip()


def launch_conf(settings: SparkSettings) -> dict[str, str]:
    """The settings of a session lakectl launches: :func:`driver_conf`, then the user's
    ``--conf`` on top, JVM options and class paths added to lakectl's instead of replacing
    them."""
    conf = driver_conf(settings.master)
    for key, value in settings.conf.items():
        if key.endswith("extraJavaOptions") and key in conf:
            value = merge_java_options(conf[key], value)
        elif key in _PATH_LISTS and key in conf:
            value = _PATH_LISTS[key].join((conf[key], value))
        conf[key] = value
    return conf


def _connect(settings: SparkSettings) -> SparkSession:
    """A Spark Connect session with lakectl's SQL settings applied to it.

    The server's process-wide settings were fixed when it started; the ``spark.sql.*`` ones
    are per session and are set here, then the user's ``--conf`` on top.
    """
    from pyspark.sql import SparkSession

    assert settings.remote is not None
    builder = SparkSession.builder.remote(settings.remote)
    # The defaults go in one request at session creation (ignored if the server fixed them).
    for key, value in _DEFAULT_CONF.items():
        if key.startswith("spark.sql."):
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    for key, value in settings.conf.items():  # the user's: an error if the server refuses one
        try:
            session.conf.set(key, value)
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise SparkUnavailableError(
                f"the Spark Connect server refused --conf {key}={value}: {first_line}",
                hint="only spark.sql.* settings can change per session; pass server-wide ones "
                "when starting the server (lakectl server start --conf ...)",
            ) from exc
    return session


def get_session(settings: SparkSettings | None = None) -> SparkSession:
    """Return the process-wide Spark session, starting it on first use."""
    global _session
    if _session is not None:
        return _session
    settings = settings or SparkSettings()
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if not settings.remote and _is_loopback(settings.master):
        # Python workers on this machine run lakectl's interpreter. (On a real cluster the
        # executors' Python is the cluster's: spark.pyspark.python or their PYSPARK_PYTHON.)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Never bind to or announce a non-loopback address for a session on this machine.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if not spark_output_wanted():
        _quiet_python_loggers()
    try:
        if settings.remote:
            _session = _connect(settings)
        else:
            if not _java_available():
                raise SparkUnavailableError(
                    "Java was not found: Spark needs Java 17 or 21",
                    hint="install openjdk-17-jre-headless or set JAVA_HOME",
                )
            from pyspark.sql import SparkSession

            conf = launch_conf(settings)
            if not spark_output_wanted():
                _launch_jvm_quietly(settings, conf)
            builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
            for key, value in conf.items():
                builder = builder.config(key, value)
            _session = builder.getOrCreate()
            _session.sparkContext.setLogLevel("ERROR")
    except SparkUnavailableError:
        raise
    except Exception as exc:  # py4j / grpc errors: say what failed, not a JVM trace
        target = settings.remote or settings.master
        raise SparkUnavailableError(f"could not start Spark ({target}): {exc}") from exc
    return _session


DEBUG_ENV = "LAKECTL_DEBUG"
_LOG_LIMIT = 16 * 1024 * 1024


def spark_output_wanted() -> bool:
    """Whether Spark's own output (JVM warnings, log records, worker output) should reach the
    terminal: only with ``--debug`` (``LAKECTL_DEBUG=1``)."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def spark_log_path() -> str:
    """Where the output of the JVM lakectl starts goes when it is not shown:
    ``$TMPDIR/lakectl-$UID/spark.log`` (appended to; emptied when it passes 16 MB)."""
    directory = os.path.join(tempfile.gettempdir(), f"lakectl-{os.getuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return os.path.join(directory, "spark.log")


# PySpark's own loggers that print a JSON record for every failed query (the error reaches the
# user as lakectl's message instead).
_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def _quiet_python_loggers() -> None:
    import logging

    from pyspark.logger import PySparkLogger

    for name in _QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def _launch_jvm_quietly(settings: SparkSettings, conf: dict[str, str]) -> None:
    """Start Spark's JVM (as the session builder would) with its stdout and stderr going to
    :func:`spark_log_path`, so nothing but lakectl's own output reaches the terminal: not the
    JVM's start-up warnings, not Spark's log records, not its Python workers' output."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # already running in this process
        return
    path = spark_log_path()
    if os.path.exists(path) and os.path.getsize(path) > _LOG_LIMIT:
        os.truncate(path, 0)
    spark_conf = SparkConf(loadDefaults=False)
    spark_conf.setMaster(settings.master).setAppName(settings.app_name)
    for key, value in conf.items():
        spark_conf.set(key, value)
    with open(path, "ab") as log:
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as exc:
            raise SparkUnavailableError(
                f"could not start Spark ({settings.master}): {exc}; last lines of its output:\n"
                + _tail(path),
                hint=f"its whole output is in {path}",
            ) from exc
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def _tail(path: str, lines: int = 10) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - 8192))
        text = handle.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])


def stop_session() -> None:
    """Stop the process-wide session (used by long-running commands and tests)."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None


def wait_for_running_tasks(spark: SparkSession, timeout: float = 30.0) -> None:
    """Wait, at most ``timeout`` seconds, until no task of the session's recent jobs runs.

    When a task fails, Spark fails its job at once and kills the job's other tasks, which may
    go on for a moment (a Python worker is stopped a few seconds later): a caller that removes
    what the job wrote waits for them first. Without a driver to ask (Spark Connect), returns
    at once.
    """
    import time

    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # Spark Connect: no SparkContext
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = sorted(tracker.getJobIdsForGroup(None))[-8:]
        infos = [tracker.getJobInfo(job) for job in jobs]
        stages = [stage for info in infos if info is not None for stage in info.stageIds]
        running = [tracker.getStageInfo(stage) for stage in stages]
        if not any(info is not None and info.numActiveTasks > 0 for info in running):
            return
        time.sleep(0.1)
