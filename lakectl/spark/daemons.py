"""Spark's own servers as child processes: the Connect server, a standalone master and worker.

pyspark's wheel is a complete Spark distribution (``bin/spark-class``, ``bin/spark-submit``, the
jars, the Connect server included), so nothing else is installed. Each daemon runs in its own
process group, bound to loopback unless told otherwise, with its output in a log file; stopping
it stops the whole group (the JVM and the Python workers it forked). Nothing here imports pyspark,
so ``lakectl server status`` stays fast.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lakectl.errors import SparkUnavailableError

LOOPBACK = "127.0.0.1"
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (its ``SPARK_HOME``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkUnavailableError("pyspark is not installed")
    return Path(spec.origin).parent


def connect_jar() -> Path | None:
    """The Spark Connect server jar shipped with pyspark, or None when it is missing."""
    return next(iter(sorted((spark_home() / "jars").glob("spark-connect_*.jar"))), None)


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def daemon_env(host: str = LOOPBACK) -> dict[str, str]:
    """Environment for a Spark daemon: pyspark's SPARK_HOME, ``host`` as the local address and
    lakectl's interpreter for Python workers (executors unpickle lakectl-free plans only, but
    Arrow conversions and Python data sources need the same Python and packages)."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=host,
        SPARK_NO_DAEMONIZE="1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@dataclass
class SparkDaemon:
    """A running Spark daemon: its process (the leader of its own group) and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        """The end of the daemon's log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_until(self, ready: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
        """Poll ``ready`` until it holds; fail with the log's tail if the daemon dies or times out."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.process.poll() is not None:
                raise SparkUnavailableError(
                    f"{self.name} exited with code {self.process.returncode} before {what}:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                raise SparkUnavailableError(
                    f"{self.name} did not reach '{what}' within {timeout:.0f}s:\n" + self.log_tail()
                )
            time.sleep(0.25)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the daemon's whole process group: SIGTERM, then SIGKILL after ``timeout``."""
        stop_process_group(self.pid, timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (and is not a zombie we could reap)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_process_group(pgid: int, timeout: float = 30.0) -> None:
    """SIGTERM the process group ``pgid``; SIGKILL whatever is left after ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pgid, os.WNOHANG)
        if not _group_alive(pgid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def start_daemon(
    name: str, argv: Sequence[str], log_path: Path, host: str = LOOPBACK
) -> SparkDaemon:
    """Start ``argv`` (a Spark launcher script and its arguments) in a new process group."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=daemon_env(host),
            cwd=log_path.parent,
            start_new_session=True,
        )
    return SparkDaemon(name, process, log_path)


def connect_server_argv(
    port: int,
    *,
    host: str = LOOPBACK,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
) -> list[str]:
    """``spark-submit`` arguments that run the Spark Connect server on ``host:port``, with the
    driver settings lakectl gives its own sessions (the server is the driver)."""
    if connect_jar() is None:
        raise SparkUnavailableError(
            f"the Spark Connect server jar (spark-connect_*.jar) is not in {spark_home() / 'jars'}"
        )
    from lakectl.spark.session import driver_conf

    settings = {
        **driver_conf(master),
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
        **(conf or {}),
    }
    argv = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class",
        CONNECT_SERVER_CLASS,
        "--name",
        "lakectl Spark Connect server",
        "--master",
        master,
    ]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    return argv


def start_connect_server(
    port: int,
    log_path: Path,
    *,
    host: str = LOOPBACK,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> SparkDaemon:
    """Start a Connect server and return once it accepts connections (stopping it on failure)."""
    daemon = start_daemon(
        "Spark Connect server",
        connect_server_argv(port, host=host, master=master, conf=conf),
        log_path,
        host,
    )
    try:
        daemon.wait_until(lambda: port_open(host, port), f"listening on {host}:{port}", timeout)
    except BaseException:
        daemon.stop()
        raise
    return daemon


def spark_class_argv(main_class: str, *args: str) -> list[str]:
    """``bin/spark-class`` arguments that run one of Spark's daemons (master, worker)."""
    return [str(spark_home() / "bin" / "spark-class"), main_class, *args]
