"""The sales workflow on a real Spark standalone cluster gives the same results as local mode.

Executors run in their own JVM and Python processes under the worker, so anything that only
exists in the driver (closures over driver objects, driver-written temp files, SparkContext-only
APIs) shows up here as a failure or a difference.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cluster import (
    CREATE,
    EXECUTOR_OPTIONS,
    STREAM_EXPECTED,
    STREAM_FILES,
    WORKFLOW,
    Standalone,
    comparable,
    in_this_process,
    run_lakectl_sequence,
    stream_commands,
    stream_outcome,
    stream_three_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

WORKFLOW_RESULTS = slice(0, 1 + len(WORKFLOW))


@pytest.fixture(scope="module")
def on_cluster(
    tmp_path_factory: pytest.TempPathFactory, standalone_cluster: Standalone, jvm_processes
) -> list[dict[str, Any]]:
    """The sales workflow, then a stream, run by one lakectl process (one application, one set
    of executors) on the cluster; their results.

    Under Kryo, as many clusters run: what lakectl ships to executors (the data source's Hadoop
    settings travel in a broadcast) must survive it. The S3 cluster test keeps Spark's default
    (Java) serializer.
    """
    tmp = tmp_path_factory.mktemp("on_cluster")
    spark_args = (
        "--master", standalone_cluster.master_url, *jvm_processes, *EXECUTOR_OPTIONS,
        "--conf", "spark.serializer=org.apache.spark.serializer.KryoSerializer",
    )  # fmt: skip
    workflow = [("--warehouse", tmp / "wh", *spark_args, *c) for c in [CREATE, *WORKFLOW]]
    stream = stream_commands(tmp / "stream", *spark_args)
    return run_lakectl_sequence(tmp, [*workflow, *stream])


def test_sales_workflow_on_a_standalone_cluster_matches_local_mode(
    on_cluster: list[dict[str, Any]], local_reference
):
    results = on_cluster[WORKFLOW_RESULTS]
    compared = comparable(results[1:])
    assert len(compared["snapshot"]) == 200 + 30 - 11 + 1 - 5
    assert compared["loads"] == local_reference["loads"]
    assert compared == local_reference


def test_stream_on_a_standalone_cluster_matches_local_mode(
    on_cluster: list[dict[str, Any]], tmp_path, spark, lakectl_cli
):
    """Micro-batches run on the cluster's executors (their own JVM and Python processes)."""
    streamed, cluster_rows = stream_outcome(on_cluster[WORKFLOW_RESULTS.stop :])
    # Local mode: the test session's own Spark.
    local, local_rows = stream_three_files(tmp_path / "local", run=in_this_process(lakectl_cli))
    assert cluster_rows == local_rows == STREAM_EXPECTED
    for result in (streamed, local):
        assert result["batches"] == len(STREAM_FILES) and result["files"] == len(STREAM_FILES)
        assert result["counts"]["ignored"] == 1 and result["counts"]["deleted"] == 1
