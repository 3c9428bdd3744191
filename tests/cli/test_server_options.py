"""`server status` and `server start` decisions taken before any JVM starts: the exit code when
no server runs, the fixed default port and a port in use."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lakectl.ops.server import DEFAULT_PORT
from lakectl.spark.daemons import port_open
from tests.conftest import CliRun


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "lakectl"


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 something listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_status_without_a_server_exits_3(lakectl_cli: Callable[..., CliRun]) -> None:
    text = lakectl_cli("server", "status")
    assert (text.code, text.out.strip()) == (3, "no lakectl Spark Connect server is running")
    as_json = lakectl_cli("server", "status", "--json")
    assert as_json.code == 3
    assert as_json.json["running"] is False and as_json.json["url"] is None


def test_start_on_a_port_in_use_is_refused_before_spark_starts(
    lakectl_cli: Callable[..., CliRun], busy_port: int, state: Path
) -> None:
    port = busy_port
    run = lakectl_cli("server", "start", "--port", port, "--json")
    assert run.code == 69, run.err
    assert run.json["error"]["message"] == (
        f"cannot start the Connect server: port {port} on 127.0.0.1 is already in use"
    )
    assert "--port" in run.json["error"]["hint"]
    assert not (state / "server.json").exists()


def test_start_defaults_to_spark_connects_port(
    lakectl_cli: Callable[..., CliRun], state: Path
) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # taken already (another server): the same case
            sock.bind(("127.0.0.1", DEFAULT_PORT))
            sock.listen()
        if not port_open("127.0.0.1", DEFAULT_PORT):  # never start a JVM here
            pytest.skip(f"port {DEFAULT_PORT} can be neither taken nor reached")
        run = lakectl_cli("server", "start", "--json")
    assert DEFAULT_PORT == 15002
    assert run.code == 69, run.err
    assert (
        f"port {DEFAULT_PORT} (the default) on 127.0.0.1 is already in use"
        in (run.json["error"]["message"])
    )
    assert f"--remote sc://127.0.0.1:{DEFAULT_PORT}" in run.json["error"]["hint"]
    assert not (state / "server.json").exists()
