"""The sales workflow on a real Spark standalone cluster gives the same results as local mode.

Executors run in their own JVM and Python processes under the worker, so anything that only
exists in the driver (closures over driver objects, driver-written temp files, SparkContext-only
APIs) shows up here as a failure or a difference.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import (
    CREATE,
    STREAM_EXPECTED,
    STREAM_FILES,
    WORKFLOW,
    Standalone,
    comparable,
    in_this_process,
    run_lakectl_sequence,
    stream_three_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_sales_workflow_on_a_standalone_cluster_matches_local_mode(
    tmp_path, standalone_cluster: Standalone, local_reference
):
    # Under Kryo, as many clusters run: what lakectl ships to executors (the data source's
    # Hadoop settings travel in a broadcast) must survive it. The stream test and the S3
    # cluster test keep Spark's default (Java) serializer.
    spark_args = (
        "--warehouse", tmp_path / "wh", "--master", standalone_cluster.master_url,
        "--conf", "spark.serializer=org.apache.spark.serializer.KryoSerializer",
    )  # fmt: skip
    results = run_lakectl_sequence(
        tmp_path, [(*spark_args, *command) for command in [CREATE, *WORKFLOW]]
    )
    on_cluster = comparable(results[1:])
    assert len(on_cluster["snapshot"]) == 200 + 30 - 11 + 1 - 5
    assert on_cluster["loads"] == local_reference["loads"]
    assert on_cluster == local_reference


def test_stream_on_a_standalone_cluster_matches_local_mode(
    tmp_path, standalone_cluster: Standalone, spark, lakectl_cli
):
    """Micro-batches run on the cluster's executors (their own JVM and Python processes)."""
    on_cluster, cluster_rows = stream_three_files(
        tmp_path / "cluster", "--master", standalone_cluster.master_url
    )
    # Local mode: the test session's own Spark.
    local, local_rows = stream_three_files(tmp_path / "local", run=in_this_process(lakectl_cli))
    assert cluster_rows == local_rows == STREAM_EXPECTED
    for result in (on_cluster, local):
        assert result["batches"] == len(STREAM_FILES) and result["files"] == len(STREAM_FILES)
        assert result["counts"]["ignored"] == 1 and result["counts"]["deleted"] == 1
