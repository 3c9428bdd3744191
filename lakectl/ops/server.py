"""A Spark Connect server in the background for interactive use (``lakectl server``).

Every command that runs a Spark job otherwise starts a JVM; against a warm Connect server it
only opens a gRPC channel. The server is pyspark's own, bound to 127.0.0.1, its process id and
port kept in ``server.json`` under the user's state directory (``$XDG_STATE_HOME/lakectl``,
default ``~/.local/state/lakectl``), its output in ``server.log`` next to it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakectl.errors import SparkUnavailableError, TableExistsError
from lakectl.spark.daemons import (
    CONNECT_SERVER_CLASS,
    LOOPBACK,
    pid_alive,
    port_open,
    start_connect_server,
    stop_process_group,
)

DEFAULT_PORT = 15002
"""The port ``lakectl server start`` listens on unless told otherwise: Spark Connect's own."""


def state_dir() -> Path:
    """Where lakectl keeps per-user runtime state (the server's pid file and log)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "lakectl"


def _pid_file() -> Path:
    return state_dir() / "server.json"


@dataclass(frozen=True)
class ServerStatus:
    """What ``lakectl server`` knows about the background server."""

    running: bool
    pid: int | None = None
    port: int | None = None
    master: str | None = None
    log: str | None = None
    action: str = "status"  # status | started | stopped

    @property
    def url(self) -> str | None:
        return f"sc://{LOOPBACK}:{self.port}" if self.port else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "running": self.running,
            "url": self.url if self.running else None,
            "pid": self.pid,
            "port": self.port,
            "master": self.master,
            "log": self.log,
            "pid_file": self.pid_file,
        }

    @property
    def pid_file(self) -> str:
        """Where the running server is recorded."""
        return str(_pid_file())


def _is_connect_server(pid: int) -> bool:
    """Whether ``pid`` is still a Connect server (not a recycled pid of something else)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.exists():  # no procfs: trust the pid file
        return pid_alive(pid)
    try:
        return CONNECT_SERVER_CLASS in cmdline.read_bytes().decode(errors="replace")
    except OSError:
        return False


def _recorded() -> dict[str, Any] | None:
    try:
        return dict(json.loads(_pid_file().read_text()))
    except (OSError, ValueError):
        return None


def server_status() -> ServerStatus:
    """The recorded server and whether it is alive and accepting connections."""
    record = _recorded()
    if record is None:
        return ServerStatus(running=False)
    pid, port = int(record["pid"]), int(record["port"])
    running = _is_connect_server(pid) and port_open(LOOPBACK, port)
    return ServerStatus(running, pid, port, record.get("master"), record.get("log"))


def start_server(
    port: int | None = None,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    timeout: float = 180.0,
) -> ServerStatus:
    """Start the server in the background and return once it accepts connections."""
    current = server_status()
    if current.running:
        raise TableExistsError(
            f"a lakectl Connect server is already running at {current.url} (pid {current.pid})",
            hint="use it with --remote, or stop it first with: lakectl server stop",
        )
    chosen = DEFAULT_PORT if port is None else port
    if port_open(LOOPBACK, chosen):
        default = " (the default)" if port is None else ""
        raise SparkUnavailableError(
            f"cannot start the Connect server: port {chosen}{default} on {LOOPBACK} is already "
            "in use",
            hint=f"another Spark Connect server may listen there: use it with --remote "
            f"sc://{LOOPBACK}:{chosen}, or start this one with --port N",
        )
    port = chosen
    log = state_dir() / "server.log"
    daemon = start_connect_server(port, log, master=master, conf=conf, timeout=timeout)
    record = {"pid": daemon.pid, "port": port, "master": master, "log": str(log)}
    _pid_file().write_text(json.dumps(record) + "\n")
    return ServerStatus(True, daemon.pid, port, master, str(log), action="started")


def stop_server(timeout: float = 30.0) -> ServerStatus:
    """Stop the recorded server (its whole process group) and forget it."""
    record = _recorded()
    if record is None:
        return ServerStatus(running=False, action="stopped")
    pid = int(record["pid"])
    if _is_connect_server(pid):
        stop_process_group(pid, timeout)
    _pid_file().unlink(missing_ok=True)
    return ServerStatus(
        False, pid, int(record["port"]), record.get("master"), record.get("log"), action="stopped"
    )
