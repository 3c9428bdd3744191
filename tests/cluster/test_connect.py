"""The sales workflow through a real Spark Connect server gives the same results as local mode.

The client process has no JVM and no SparkContext: only the DataFrame API crosses the wire.
A workflow runs in one client process (one Connect session); a new client process, as a user's
next command is, starts where the test is about a fresh session on a warm server.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lakectl.spark.daemons import (
    LOOPBACK,
    connect_server_argv,
    free_port,
    port_open,
    start_daemon,
)
from tests.support.cluster import (
    CDC,
    CREATE,
    SALES,
    STARTUP_TIMEOUT,
    STREAM_EXPECTED,
    STREAM_FILES,
    WORKFLOW,
    cheap_server_conf,
    comparable,
    run_lakectl_process,
    run_lakectl_sequence,
    snapshot_rows,
    stream_three_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_sales_workflow_over_spark_connect_matches_local_mode(
    tmp_path, connect_url: str, local_reference
):
    remote = ("--warehouse", tmp_path / "wh", "--remote", connect_url)
    results = run_lakectl_sequence(tmp_path, [(*remote, *c) for c in [CREATE, *WORKFLOW]])
    over_connect = comparable(results[1:])
    assert len(over_connect["snapshot"]) == 200 + 30 - 11 + 1 - 5
    assert over_connect["loads"] == local_reference["loads"]
    assert over_connect == local_reference


def test_a_replayed_batch_and_snapshot_out_over_spark_connect(tmp_path, connect_url: str):
    """A CDC load retried from a new client process (a new session on the warm server) is
    skipped; forced, it is all ignored and changes nothing; ``snapshot --out`` writes a file, then
    refuses to overwrite it."""
    remote = ("--warehouse", tmp_path / "wh", "--remote", connect_url)
    loads = [("load", "sales", SALES / name, *CDC) for name in ("base.csv", "cdc_batch_1.csv")]
    run_lakectl_sequence(tmp_path, [(*remote, *c) for c in [CREATE, *loads]])
    out = tmp_path / "out.csv"
    skipped, replay, before, now, written, again = run_lakectl_sequence(
        tmp_path,
        [
            (*remote, *loads[1]),
            (*remote, *loads[1], "--force"),
            (*remote, "snapshot", "sales", "--version", "2"),
            (*remote, "snapshot", "sales"),
            (*remote, "snapshot", "sales", "--out", out, "--format", "csv"),
            (*remote, "snapshot", "sales", "--out", out, "--format", "csv"),
        ],
        expect={5: 65},
    )
    assert (skipped["status"], skipped["loaded_by"]) == ("skipped", 2)
    nothing = {"inserted": 0, "updated": 0, "deleted": 0, "superseded_in_batch": 0}
    assert replay["counts"] == {**nothing, "ignored": 82}
    assert replay["added"] == []
    assert snapshot_rows(now) == snapshot_rows(before)
    assert len(snapshot_rows(before)) == 200 + 30 - 11

    assert written["rows_written"] == len(snapshot_rows(before))
    lines = [p.read_text().splitlines() for p in out.glob("*.csv")]
    assert sum(len(f) - 1 for f in lines) == len(snapshot_rows(before))  # one header per file
    assert "already exists" in again["error"]["message"]


SESSION_CONF = (
    "import json, sys\n"
    "from lakectl.spark.session import SparkSettings, get_session\n"
    "spark = get_session(SparkSettings(remote=sys.argv[1], conf={sys.argv[2]: sys.argv[3]}))\n"
    "keys = ['spark.sql.optimizer.nestedSchemaPruning.enabled', 'spark.sql.session.timeZone',\n"
    "        'spark.sql.shuffle.partitions']\n"
    "print(json.dumps({k: spark.conf.get(k) for k in keys}))\n"
)


def test_connect_sessions_get_lakectl_sql_settings_and_the_users(connect_url: str):
    """The server was started without lakectl's SQL settings: each client session sets them
    (ACID reads are wrong with nested schema pruning on), then the user's --conf on top."""
    done = subprocess.run(
        [sys.executable, "-c", SESSION_CONF, connect_url, "spark.sql.shuffle.partitions", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {
        "spark.sql.optimizer.nestedSchemaPruning.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "5",
    }


def test_a_server_wide_conf_is_refused_with_a_hint(tmp_path, connect_url: str, lakectl_cli):
    wh = ("--warehouse", tmp_path / "wh")
    assert lakectl_cli(*wh, *CREATE).code == 0  # no Spark: in this process
    done = subprocess.run(
        [sys.executable, "-m", "lakectl", *map(str, wh), "--remote", connect_url,
         "--conf", "spark.executor.memory=2g", "snapshot", "sales", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 69, done.stderr[-2000:]
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "spark"
    assert error["message"].startswith(
        "the Spark Connect server refused --conf spark.executor.memory=2g: [CANNOT_MODIFY_CONFIG]"
    )
    assert "lakectl server start --conf" in error["hint"]


def test_stream_over_spark_connect_gives_the_table_local_mode_gives(tmp_path, connect_url: str):
    """Over Connect lakectl lists the landing directory itself each trigger (foreachBatch would
    run inside the server) and loads through the same micro-batch function."""
    remote, remote_rows = stream_three_files(tmp_path / "remote", "--remote", connect_url)
    assert remote_rows == STREAM_EXPECTED
    assert remote["batches"] == len(STREAM_FILES) and remote["files"] == len(STREAM_FILES)
    assert remote["counts"]["ignored"] == 1 and remote["counts"]["deleted"] == 1


NATIVE_PROBE = (
    "import sys\n"
    "from lakectl.spark.native_read import _enabled\n"
    "from lakectl.spark.session import SparkSettings, get_session\n"
    "print(_enabled(get_session(SparkSettings(remote=sys.argv[1]))))\n"
)


def test_the_server_lakectl_starts_resolves_lakectls_data_source(connect_url: str):
    """The server gets the data source's jar (driver_conf), so Connect reads take it too."""
    done = subprocess.run(
        [sys.executable, "-c", NATIVE_PROBE, connect_url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_a_connect_server_without_lakectls_jar_reads_through_the_kernel(
    tmp_path, lakectl_cli, spark
):
    """A server someone else started (here: lakectl's, with its class path emptied) cannot
    resolve the data source: the client falls back to the live-row kernel in Spark tasks."""
    port = free_port()
    # The server starts in the background while this process writes the table locally.
    server = start_daemon(
        "Spark Connect server",
        connect_server_argv(
            port,
            master="local[1]",
            conf={"spark.driver.extraClassPath": "", **cheap_server_conf("local[1]")},
        ),
        tmp_path / "server.log",
    )
    try:
        warehouse = tmp_path / "wh"
        for command in [CREATE, WORKFLOW[0], WORKFLOW[1]]:
            done = lakectl_cli(*command, "--warehouse", warehouse, "--json")
            assert done.code == 0, done.err
        local = lakectl_cli("snapshot", "sales", "--warehouse", warehouse, "--json").json
        server.wait_until(lambda: port_open(LOOPBACK, port), "accepting clients", STARTUP_TIMEOUT)
        url = f"sc://{LOOPBACK}:{port}"
        probe = subprocess.run(
            [sys.executable, "-c", NATIVE_PROBE, url], capture_output=True, text=True, timeout=120
        )
        assert probe.returncode == 0, probe.stderr[-2000:]
        assert probe.stdout.strip() == "False"
        remote = run_lakectl_process(
            tmp_path, "--warehouse", warehouse, "--remote", url, "snapshot", "sales"
        )
        assert remote["truncated"] == local["truncated"] is False
        key = lambda row: row["sell_id"]  # noqa: E731
        assert sorted(remote["rows"], key=key) == sorted(local["rows"], key=key)
    finally:
        server.stop()
