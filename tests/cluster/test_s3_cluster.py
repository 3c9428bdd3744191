"""An s3:// table on a real Spark standalone cluster and through a real Spark Connect server,
with no Hadoop S3 connector: event files, the first load's source and ``snapshot --out`` go
through lakectl's fsspec data sources, which run in the executors' (or the Connect server's)
Python workers. Those processes never see the AWS variables: the endpoint and credentials
travel pickled inside the data source classes. Results equal local mode on a local table.

One S3 table serves both: the cluster loads it (the first batch read from S3) and takes a
snapshot, then a Connect client compacts it, reads it (also at an old version) and writes a
snapshot to S3. Each side reads and writes the table's files through the data sources."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from lakectl.storage.fs import storage_for
from tests.support.cluster import (
    CREATE,
    EXECUTOR_OPTIONS,
    SALES,
    WORKFLOW,
    Standalone,
    comparable,
    run_lakectl_sequence,
    snapshot_rows,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def s3_workflow(s3_server: Any) -> tuple[str, dict[str, str], list[tuple[object, ...]]]:
    """A fresh s3:// warehouse, the environment pointing at the server, and the workflow's
    commands with the first batch read from S3, then a snapshot written to S3."""
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
    return {
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "access_key_id": env["AWS_ACCESS_KEY_ID"],
        "secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region": env["AWS_REGION"],
    }


def without_sizes(value: Any) -> Any:
    """``value`` without byte counts: pyarrow's ORC writer (the fsspec path) and Spark's compress
    the same rows into files of different sizes."""
    if isinstance(value, dict):
        return {k: without_sizes(v) for k, v in value.items() if "bytes" not in k}
    if isinstance(value, list):
        return [without_sizes(v) for v in value]
    return value


# The workflow's commands up to this index run on the standalone cluster (create, three loads, a
# snapshot), the rest over Connect (compaction, two snapshots, the snapshot to S3).
ON_STANDALONE = 5


@dataclass(frozen=True)
class SharedS3Table:
    """The S3 table after the cluster's part of the workflow."""

    warehouse: str
    env: dict[str, str]
    commands: list[tuple[object, ...]]
    results: list[dict[str, Any]]


@pytest.fixture(scope="module")
def s3_table_from_the_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    standalone_cluster: Standalone,
    s3_server: Any,
    jvm_processes: tuple[str, ...],
) -> SharedS3Table:
    """The first part of the workflow on the standalone cluster, in one lakectl process."""
    warehouse, env, commands = s3_workflow(s3_server)
    spark_args = ("--warehouse", warehouse, "--master", standalone_cluster.master_url)
    spark_args += (*jvm_processes, *EXECUTOR_OPTIONS)
    results = run_lakectl_sequence(
        tmp_path_factory.mktemp("s3_cluster"),
        [(*spark_args, *c) for c in commands[:ON_STANDALONE]],
        env=env,
    )
    return SharedS3Table(warehouse, env, commands, results)


def test_s3_table_on_a_standalone_cluster_matches_local_mode(
    s3_table_from_the_cluster: SharedS3Table, local_reference
):
    results = s3_table_from_the_cluster.results
    loads = [(r["version"], r["counts"], sorted(r["added"])) for r in results[1:4]]
    assert without_sizes(loads) == without_sizes(local_reference["loads"])
    assert snapshot_rows(results[4]) == local_reference["snapshot"]


def test_s3_table_over_spark_connect_matches_local_mode(
    tmp_path, s3_table_from_the_cluster: SharedS3Table, connect_url: str, local_reference
):
    table = s3_table_from_the_cluster
    # One client process for the rest of the workflow (test_connect has a process per session).
    connect_args = ("--warehouse", table.warehouse, "--remote", connect_url)
    over_connect = run_lakectl_sequence(
        tmp_path, [(*connect_args, *c) for c in table.commands[ON_STANDALONE:]], env=table.env
    )
    results = [*table.results, *over_connect]
    on_s3 = comparable(results[1:8])
    assert len(on_s3["snapshot"]) == 200 + 30 - 11 + 1 - 5
    for key, expected in local_reference.items():
        assert without_sizes(on_s3[key]) == without_sizes(expected), key
    assert results[8]["rows_written"] == len(local_reference["snapshot_after_compact"])
