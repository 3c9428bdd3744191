"""The sales workflow on a real Spark standalone cluster gives the same results as local mode.

Executors run in their own JVM and Python processes under the worker, so anything that only
exists in the driver (closures over driver objects, driver-written temp files, SparkContext-only
APIs) shows up here as a failure or a difference.
"""

from __future__ import annotations

import pytest
from cluster_support import CREATE, WORKFLOW, Standalone, comparable, run_lakectl_sequence

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1500)]


def test_sales_workflow_on_a_standalone_cluster_matches_local_mode(
    tmp_path, standalone_cluster: Standalone, local_reference
):
    spark_args = ("--warehouse", tmp_path / "wh", "--master", standalone_cluster.master_url)
    results = run_lakectl_sequence(
        tmp_path, [(*spark_args, *command) for command in [CREATE, *WORKFLOW]]
    )
    on_cluster = comparable(results[1:])
    assert len(on_cluster["snapshot"]) == 200 + 30 - 11 + 1 - 5
    assert on_cluster["loads"] == local_reference["loads"]
    assert on_cluster == local_reference
