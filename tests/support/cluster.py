"""Real Spark servers on loopback: a standalone master + worker, and a Spark Connect server.

Each fixture starts pyspark's own daemons (``bin/spark-class``, ``bin/spark-submit``) as child
process groups, waits until they are ready (polling, generous timeouts for slow machines) and
stops the groups afterwards, also when the test failed. The lakectl commands under test run as
subprocesses: one process is one SparkContext, and the test process keeps its local session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lakectl.spark.daemons import (
    LOOPBACK,
    MASTER_CLASS,
    WORKER_CLASS,
    SparkDaemon,
    free_port,
    port_open,
    spark_class_argv,
    start_connect_server,
    start_daemon,
)
from lakectl.spark.session import driver_conf, merge_java_options

SALES = Path(__file__).resolve().parents[2] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
STARTUP_TIMEOUT = 180.0
# The test servers and a test cluster's executors do little work on small tables: like
# short-lived drivers (tests.support.processes.JVM_OPTIONS), their JVMs start cheaper with the C1
# compiler only and the serial collector. (lakectl adds these to its own executor options.)
CHEAP_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
EXECUTOR_OPTIONS = ("--conf", f"spark.executor.extraJavaOptions={CHEAP_JVM}")
COMMAND_TIMEOUT = 300.0


@dataclass(frozen=True)
class Standalone:
    """A running standalone cluster: its ``spark://`` URL and the master's web UI port."""

    master_url: str
    webui_port: int


def _alive_workers(webui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{webui_port}/json/", timeout=5) as resp:
            state = json.load(resp)
    except (OSError, ValueError):  # not up yet, or still serving its HTML page there
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A Spark standalone master and one worker (1 core, 1 GB) on 127.0.0.1."""
    logs = tmp_path_factory.mktemp("standalone")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    daemons: list[SparkDaemon] = []
    url = f"spark://{LOOPBACK}:{port}"
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SPARK_DAEMON_JAVA_OPTS", CHEAP_JVM)  # spark-class: master and worker
            master = start_daemon(
                "Spark master",
                spark_class_argv(
                    MASTER_CLASS, "--host", LOOPBACK, "--port", str(port),
                    "--webui-port", str(ui_port),
                ),
                logs / "master.log",
            )  # fmt: skip
            daemons.append(master)
            master.wait_until(
                lambda: port_open(LOOPBACK, port), "accepting workers", STARTUP_TIMEOUT
            )
            worker = start_daemon(
                "Spark worker",
                spark_class_argv(
                    WORKER_CLASS, url, "--host", LOOPBACK, "--cores", "1", "--memory", "1g",
                    "--webui-port", str(worker_ui), "--work-dir", str(logs / "work"),
                ),
                logs / "worker.log",
            )  # fmt: skip
            daemons.append(worker)
        worker.wait_until(
            lambda: _alive_workers(ui_port) >= 1, "registered with the master", STARTUP_TIMEOUT
        )
        yield Standalone(url, ui_port)
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server (local[2] driver) on 127.0.0.1; yields its ``sc://`` URL.

    Its SQL defaults are not lakectl's (as on a server someone else runs): lakectl's client must
    set what correctness depends on in its own session.
    """
    port = free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    foreign_defaults = {
        "spark.sql.optimizer.nestedSchemaPruning.enabled": "true",
        "spark.sql.session.timeZone": "America/New_York",
        "spark.sql.shuffle.partitions": "3",
    }
    server = start_connect_server(
        port,
        log,
        master="local[2]",
        conf={**foreign_defaults, **cheap_server_conf("local[2]")},
        timeout=STARTUP_TIMEOUT,
    )
    try:
        yield f"sc://{LOOPBACK}:{port}"
    finally:
        server.stop()


def cheap_server_conf(master: str) -> dict[str, str]:
    """Settings for a test Connect server with ``master``: lakectl's driver JVM options with
    :data:`CHEAP_JVM`."""
    ours = driver_conf(master)["spark.driver.extraJavaOptions"]
    return {"spark.driver.extraJavaOptions": merge_java_options(ours, CHEAP_JVM)}


def _process_env(cwd: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["XDG_CONFIG_HOME"] = str(cwd / "xdg")  # no user lakectl.toml
    env.update(extra or {})
    return env


def run_lakectl_process(
    cwd: Path, *args: object, env: dict[str, str] | None = None, expect: int = 0
) -> dict[str, Any]:
    """Run ``python -m lakectl ARGS --json`` in a fresh process (``env`` added to this one's);
    its JSON result (an error's, for a nonzero ``expect``), or fail if it exits otherwise."""
    done = subprocess.run(
        [sys.executable, "-m", "lakectl", *map(str, args), "--json"],
        cwd=cwd,
        env=_process_env(cwd, env),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert done.returncode == expect, (
        f"lakectl {args}: exit {done.returncode}\n{done.stderr[-3000:]}"
    )
    return json.loads(done.stdout)


# Runs several CLI invocations in one process, so they share one SparkContext (one driver, one
# set of executors) or one Connect session: on a busy 2-core machine a JVM start per command costs
# minutes. Each command's wall time goes to stderr, kept in CWD/lakectl-sequence.log.
_SEQUENCE = """
import contextlib, io, json, sys, time
from lakectl.cli.main import main
results = []
for argv, expected in json.loads(sys.argv[1]):
    out, started = io.StringIO(), time.monotonic()
    with contextlib.redirect_stdout(out):
        code = main(argv + ["--json"])
    print(f"{time.monotonic() - started:6.1f}s lakectl {' '.join(argv)}", file=sys.stderr)
    if code != expected:
        sys.exit(f"lakectl {argv}: exit {code}, expected {expected}: {out.getvalue()}")
    results.append(json.loads(out.getvalue()))
print(json.dumps(results))
"""


def run_lakectl_sequence(
    cwd: Path,
    commands: list[tuple[object, ...]],
    env: dict[str, str] | None = None,
    expect: dict[int, int] | None = None,
) -> list[dict[str, Any]]:
    """Run CLI commands one after another in a single fresh process (``env`` added to this
    one's); their JSON results (an error's where ``expect`` maps a command's index to the
    nonzero exit code it must give; every other command must exit 0)."""
    codes = expect or {}
    argvs = [([str(a) for a in command], codes.get(i, 0)) for i, command in enumerate(commands)]
    done = subprocess.run(
        [sys.executable, "-c", _SEQUENCE, json.dumps(argvs)],
        cwd=cwd,
        env=_process_env(cwd, env),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT * 2,
    )
    with (cwd / "lakectl-sequence.log").open("a") as log:  # for a look at where the time went
        log.write(done.stderr)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def snapshot_rows(snapshot: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A snapshot's JSON rows as sorted tuples."""
    return sorted(tuple(row[c] for c in snapshot["columns"]) for row in snapshot["rows"])


def _without_timing(result: Any, top: bool = True) -> Any:
    """``result`` without the table's name and anything timed (``seconds``, ``*_ms``)."""
    if isinstance(result, dict):
        return {
            k: _without_timing(v, False)
            for k, v in result.items()
            if k != "seconds" and not k.endswith("_ms") and not (top and k == "table")
        }
    if isinstance(result, list):
        return [_without_timing(v, False) for v in result]
    return result


# The sales workflow: three CDC loads, a snapshot, a major compaction, a snapshot and a time-travel
# snapshot. (`create` needs no Spark: run it first with `CREATE`.)
CREATE = ("create", "sales", "--schema", SCHEMA, "--primary-key", "sell_id",
          "--partition-by", "create_date")  # fmt: skip
WORKFLOW: list[tuple[object, ...]] = [
    ("load", "sales", SALES / "base.csv", *CDC),
    ("load", "sales", SALES / "cdc_batch_1.csv", *CDC),
    ("load", "sales", SALES / "cdc_batch_2.csv", *CDC),
    ("snapshot", "sales"),
    ("compact", "sales", "--major"),
    ("snapshot", "sales"),
    ("snapshot", "sales", "--version", "1", "--where", "store_id = 'S01'"),
]


def comparable(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of the workflow's results that must not depend on where Spark runs."""
    loads, snapshot, compacted, after, version_1 = (
        results[:3], results[3], results[4], results[5], results[6]
    )  # fmt: skip
    return {
        "loads": [(r["version"], r["counts"], sorted(r["added"])) for r in loads],
        "snapshot": snapshot_rows(snapshot),
        "compact": _without_timing(compacted),
        "snapshot_after_compact": snapshot_rows(after),
        "version_1_s01": snapshot_rows(version_1),
    }


@pytest.fixture(scope="session")
def local_reference(tmp_path_factory: pytest.TempPathFactory, lakectl_cli, spark) -> dict:
    """The workflow's comparable results in local mode (the test session's local[2] Spark)."""
    warehouse = tmp_path_factory.mktemp("local_reference") / "wh"
    results = []
    for command in [CREATE, *WORKFLOW]:
        result = lakectl_cli(*command, "--warehouse", warehouse, "--json")
        assert result.code == 0, result.err
        results.append(result.json)
    return comparable(results[1:])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The SeaweedFS server of tests/s3 (one per run). Its AWS variables are given only to the
    lakectl processes, never to the Spark daemons: executors must get the endpoint and
    credentials from lakectl (pickled with the data source), not from their environment."""
    from tests.support.seaweed import shared_server

    return shared_server(tmp_path_factory.mktemp("seaweed"))


# --- lakectl stream on a cluster -------------------------------------------------------------

STREAM_HEADER = "id,ts,v,day,op_code\n"
STREAM_FILES = {
    "a.csv": "1,1,a,2024-01-01,I\n2,2,b,2024-01-02,I\n3,3,c,2024-01-01,I\n",
    "b.csv": "1,4,a2,2024-01-01,U\n2,5,,2024-01-02,D\n4,6,d,2024-01-02,I\n",
    "c.csv": "3,1,late,2024-01-01,U\n5,7,e,2024-01-01,I\n",  # id 3 at ts 1: older, ignored
}
STREAM_EXPECTED = [(1, 4, "a2", "2024-01-01"), (3, 3, "c", "2024-01-01"), (4, 6, "d", "2024-01-02")]
STREAM_EXPECTED += [(5, 7, "e", "2024-01-01")]


Runner = Callable[[Path, list[tuple[object, ...]]], list[dict[str, Any]]]


def in_this_process(cli: Callable[..., Any]) -> Runner:
    """A runner like :func:`run_lakectl_sequence` through the in-process CLI (the test session's
    local Spark): no JVM to start."""

    def run(_: Path, commands: list[tuple[object, ...]]) -> list[dict[str, Any]]:
        results = []
        for command in commands:
            done = cli(*command, "--json")
            assert done.code == 0, f"lakectl {command}: exit {done.code}\n{done.err[-3000:]}"
            results.append(done.json)
        return results

    return run


def stream_commands(tmp: Path, *spark_args: object) -> list[tuple[object, ...]]:
    """Commands for `lakectl stream` over three CDC files (one micro-batch each) with
    ``spark_args`` (``--master URL`` / ``--remote URL``): create the table, stream, snapshot.
    Their results go to :func:`stream_outcome`."""
    table, land = tmp / "t", tmp / "land"
    land.mkdir(parents=True)
    for name, body in STREAM_FILES.items():
        (land / name).write_text(STREAM_HEADER + body)
    create = ("create", table, "--schema", "id bigint, ts bigint, v string, day string")
    create += ("--primary-key", "id", "--partition-by", "day")
    stream = (*spark_args, "stream", table, land, "--op-column", "op_code")
    stream += ("--order-by", "ts", "--trigger", "500ms", "--max-files-per-batch", "1")
    stream += ("--max-batches", len(STREAM_FILES), "--no-compact")
    snapshot = (*spark_args, "snapshot", table, "--limit", "0")
    return [create, stream, snapshot]


def stream_outcome(results: list[dict[str, Any]]) -> tuple[dict, list[tuple]]:
    """The stream's totals (its result's ``status``) and the snapshot's rows from
    :func:`stream_commands`' results."""
    _, streamed, shown = results
    rows = sorted(tuple(r[c] for c in ("id", "ts", "v", "day")) for r in shown["rows"])
    return streamed["status"], rows


def stream_three_files(
    tmp: Path, *spark_args: str, run: Runner = run_lakectl_sequence
) -> tuple[dict, list[tuple]]:
    """:func:`stream_commands` run by ``run``: the stream's result and the rows."""
    return stream_outcome(run(tmp, stream_commands(tmp, *spark_args)))


# --- one lakectl application on the standalone cluster ------------------------------------------


def s3_workflow(s3_server: Any) -> tuple[str, dict[str, str], list[tuple[object, ...]]]:
    """A fresh s3:// warehouse, the environment pointing at the server, and the workflow's
    commands with the first batch read from S3, then a snapshot written to S3."""
    from lakectl.storage.fs import storage_for
    from tests.support.seaweed import BUCKET

    env = s3_server.env()
    prefix = f"s3://{BUCKET}/cluster-{uuid.uuid4().hex[:10]}"
    storage, landing = storage_for(f"{prefix}/landing/base.csv", s3fs_options_from(env))
    storage.fs.put_file(str(SALES / "base.csv"), landing)
    first, *rest = WORKFLOW
    assert first[2] == SALES / "base.csv"
    commands = [
        CREATE,
        (*first[:2], f"{prefix}/landing/base.csv", *first[3:]),
        *rest,
        ("snapshot", "sales", "--out", f"{prefix}/out", "--format", "parquet"),
    ]
    return f"{prefix}/wh", env, commands


def s3fs_options_from(env: dict[str, str]) -> dict[str, Any]:
    """The storage options of the S3 server that ``env`` points at."""
    return {
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "access_key_id": env["AWS_ACCESS_KEY_ID"],
        "secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region": env["AWS_REGION"],
    }


# The S3 workflow's commands up to this index run on the standalone cluster (create, three loads,
# a snapshot), the rest over Connect (compaction, two snapshots, the snapshot to S3).
S3_ON_STANDALONE = 5


@dataclass(frozen=True)
class ClusterRuns:
    """What one lakectl application on the standalone cluster did (see :func:`on_cluster`)."""

    workflow: list[dict[str, Any]]  # create and the sales workflow on a local warehouse
    stream: list[dict[str, Any]]  # stream_commands' results
    s3_warehouse: str
    s3_env: dict[str, str]
    s3_commands: list[tuple[object, ...]]  # the whole S3 workflow (s3_workflow)
    s3_results: list[dict[str, Any]]  # the first S3_ON_STANDALONE commands' results


@pytest.fixture(scope="session")
def on_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    standalone_cluster: Standalone,
    s3_server: Any,
    jvm_processes: tuple[str, ...],
) -> ClusterRuns:
    """The sales workflow on a local warehouse, a stream, and the first part of the workflow on
    an s3:// warehouse, run by one lakectl process (one application: a driver JVM and one set of
    executors, started once) on the standalone cluster; their results.

    The process has the S3 server's AWS variables, the cluster's daemons do not (see
    :func:`s3_server`). Under Kryo, as many clusters run: what lakectl ships to executors (the
    data source's Hadoop settings travel in a broadcast) must survive it.
    """
    tmp = tmp_path_factory.mktemp("on_cluster")
    spark_args = (
        "--master", standalone_cluster.master_url, *jvm_processes, *EXECUTOR_OPTIONS,
        "--conf", "spark.serializer=org.apache.spark.serializer.KryoSerializer",
    )  # fmt: skip
    workflow = [("--warehouse", tmp / "wh", *spark_args, *c) for c in [CREATE, *WORKFLOW]]
    stream = stream_commands(tmp / "stream", *spark_args)
    s3_warehouse, env, s3_commands = s3_workflow(s3_server)
    on_s3 = [("--warehouse", s3_warehouse, *spark_args, *c) for c in s3_commands]
    results = run_lakectl_sequence(tmp, [*workflow, *stream, *on_s3[:S3_ON_STANDALONE]], env=env)
    ends = len(workflow), len(workflow) + len(stream)
    return ClusterRuns(
        results[: ends[0]], results[ends[0] : ends[1]], s3_warehouse, env, s3_commands,
        results[ends[1] :],
    )  # fmt: skip
