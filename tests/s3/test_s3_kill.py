"""Killing the S3 server in the middle of a commit: the command fails with a clear storage error
(exit 74), and once the server is back on the same data the table reads as before the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from samples import CDC, DOCTORS_SCHEMA, SALES, SALES_SCHEMA, UPDATES, rows

from tests.support.seaweed import BUCKET, SECRET_KEY, SeaweedServer


def lakectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "lakectl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def wait_for(path: Path, process: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"lakectl ended before the failpoint (exit {process.returncode}): {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"lakectl did not reach the failpoint within {timeout}s")
        time.sleep(0.1)


@pytest.fixture
def own_server(tmp_path: Path):
    """A server of this test's own, since the test kills it."""
    server = SeaweedServer(tmp_path / "seaweed")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_server_killed_mid_commit_leaves_the_table_as_it_was(own_server, tmp_path):
    env = {**os.environ, **own_server.env()}
    env.pop("LAKECTL_FAILPOINTS", None)
    url = f"s3://{BUCKET}/killed/doctors"
    assert lakectl(env, "create", url, "--schema", DOCTORS_SCHEMA).returncode == 0
    before = lakectl(env, "history", url, "--json")
    assert before.returncode == 0

    reached, resume = tmp_path / "reached", tmp_path / "resume"
    failing = subprocess.Popen(
        [sys.executable, "-m", "lakectl", "apply-updates", url, str(UPDATES)],
        env={
            **env,
            "LAKECTL_FAILPOINTS": f"store.before_commit=touch:{reached},"
            f"store.before_commit=wait:{resume}",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(reached, failing)
    own_server.kill()
    resume.touch()
    _, err = failing.communicate(timeout=180)
    assert failing.returncode == 74, err
    assert f"conditional put of {url}/_lakectl/log/00000000000000000001.json failed" in err
    assert "check the storage endpoint" in err
    assert SECRET_KEY not in err

    own_server.start()  # same data directory and ports
    after = lakectl(env, "history", url, "--json")
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout
    installed = lakectl(env, "updates", url, "--json")
    assert installed.returncode == 0 and json.loads(installed.stdout)["statements"] == []
    # The table is usable again: the same command now goes through.
    assert lakectl(env, "apply-updates", url, str(UPDATES)).returncode == 0
    assert lakectl(env, "history", url, "--json").stdout.count('"operation"') == 2


def test_server_killed_mid_load_fails_the_load_and_keeps_the_table(
    own_server, tmp_path, lakectl_cli, spark, monkeypatch
):
    for name, value in own_server.env().items():
        monkeypatch.setenv(name, value)
    url = f"s3://{BUCKET}/killed/sales"
    created = lakectl_cli("create", url, "--schema", SALES_SCHEMA, "--primary-key", "sell_id")
    assert created.code == 0, created.err
    assert lakectl_cli("load", url, SALES / "base.csv", *CDC).code == 0
    before = rows(lakectl_cli("snapshot", url, "--json"))

    reached, resume = tmp_path / "reached", tmp_path / "resume"
    monkeypatch.setenv(
        "LAKECTL_FAILPOINTS",
        f"load.before_commit=touch:{reached},load.before_commit=wait:{resume}",
    )

    def kill_when_reached() -> None:
        deadline = time.monotonic() + 300
        while not reached.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        own_server.kill()
        resume.touch()

    # The load runs in this thread, on the warm session; a helper kills the server meanwhile.
    with ThreadPoolExecutor(1) as pool:
        killer = pool.submit(kill_when_reached)
        failed = lakectl_cli("load", url, SALES / "cdc_batch_1.csv", *CDC)
        killer.result()
    assert reached.exists()
    monkeypatch.delenv("LAKECTL_FAILPOINTS")
    assert failed.code == 74, failed.err
    assert "failed:" in failed.err and SECRET_KEY not in failed.err

    own_server.start()
    assert rows(lakectl_cli("snapshot", url, "--json")) == before
    history = lakectl_cli("history", url, "--json").json["commits"]
    assert [e["operation"] for e in history] == ["create", "cdc"]
