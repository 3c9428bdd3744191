"""``lakectl server start|status|stop`` with a real Spark Connect server in the background."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lakectl.spark.daemons import pid_alive, port_open

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

COUNT_OVER_CONNECT = (
    "import sys\n"
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
    "print(spark.range(7).count())\n"
)


def test_server_start_status_stop(tmp_path: Path, monkeypatch, lakectl_cli, jvm_processes):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert lakectl_cli("server", "status", "--json").json["running"] is False

    started = lakectl_cli("server", "start", "--master", "local[1]", "--json")  # on 15002
    try:
        assert started.code == 0, started.err
        info = started.json
        assert info["action"] == "started" and info["running"] is True
        assert info["url"] == f"sc://127.0.0.1:{info['port']}" and info["port"] == 15002
        assert info["pid_file"] == str(tmp_path / "state" / "lakectl" / "server.json")
        assert port_open("127.0.0.1", info["port"])

        status = lakectl_cli("server", "status")
        assert status.code == 0
        assert f"running at {info['url']} (pid {info['pid']})" in status.out
        assert f"export LAKECTL_REMOTE={info['url']}" in status.out

        again = lakectl_cli("server", "start", "--json")
        assert again.code == 73
        assert again.json["error"]["message"] == (
            f"a lakectl Connect server is already running at {info['url']} (pid {info['pid']})"
        )

        counted = subprocess.run(
            [sys.executable, "-c", COUNT_OVER_CONNECT, info["url"]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert counted.stdout.strip() == "7", counted.stderr[-2000:]
    finally:
        stopped = lakectl_cli("server", "stop", "--json")
    assert stopped.code == 0
    assert stopped.json["action"] == "stopped" and stopped.json["running"] is False
    assert not pid_alive(info["pid"])
    assert not port_open("127.0.0.1", info["port"])
    stopped_status = lakectl_cli("server", "status", "--json")
    assert (stopped_status.code, stopped_status.json["running"]) == (3, False)
    assert lakectl_cli("server", "stop").out.strip() == "no lakectl Spark Connect server is running"


def test_server_start_refuses_remote(tmp_path: Path, monkeypatch, lakectl_cli):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    refused = lakectl_cli("server", "start", "--remote", "sc://127.0.0.1:15002", "--json")
    assert refused.code == 2, refused.err
    assert "--remote names one to use" in refused.out + refused.err
    assert lakectl_cli("server", "status", "--json").json["running"] is False
