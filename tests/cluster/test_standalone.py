"""The sales workflow on a real Spark standalone cluster gives the same results as local mode.

Executors run in their own JVM and Python processes under the worker, so anything that only
exists in the driver (closures over driver objects, driver-written temp files, SparkContext-only
APIs) shows up here as a failure or a difference.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import (
    STREAM_EXPECTED,
    STREAM_FILES,
    ClusterRuns,
    comparable,
    in_this_process,
    stream_outcome,
    stream_three_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_sales_workflow_on_a_standalone_cluster_matches_local_mode(
    on_cluster: ClusterRuns, local_reference
):
    """The workflow of one lakectl application on the cluster (see tests/support/cluster.py's
    ``on_cluster``: the same application loads an s3:// table for test_s3_cluster.py)."""
    compared = comparable(on_cluster.workflow[1:])
    assert len(compared["snapshot"]) == 200 + 30 - 11 + 1 - 5
    assert compared["loads"] == local_reference["loads"]
    assert compared == local_reference


def test_stream_on_a_standalone_cluster_matches_local_mode(
    on_cluster: ClusterRuns, tmp_path, spark, lakectl_cli
):
    """Micro-batches run on the cluster's executors (their own JVM and Python processes)."""
    streamed, cluster_rows = stream_outcome(on_cluster.stream)
    # Local mode: the test session's own Spark.
    local, local_rows = stream_three_files(tmp_path / "local", run=in_this_process(lakectl_cli))
    assert cluster_rows == local_rows == STREAM_EXPECTED
    for result in (streamed, local):
        assert result["batches"] == len(STREAM_FILES) and result["files"] == len(STREAM_FILES)
        assert result["counts"]["ignored"] == 1 and result["counts"]["deleted"] == 1
