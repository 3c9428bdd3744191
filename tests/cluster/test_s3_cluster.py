"""An s3:// table on a real Spark standalone cluster and through a real Spark Connect server,
with no Hadoop S3 connector: event files, the first load's source and ``snapshot --out`` go
through lakectl's fsspec data sources, which run in the executors' (or the Connect server's)
Python workers. Those processes never see the AWS variables: the endpoint and credentials
travel pickled inside the data source classes. Results equal local mode on a local table.

One S3 table serves both: the cluster loads it (the first batch read from S3) and takes a
snapshot (in the lakectl application that runs test_standalone.py's workflow: see
tests/support/cluster.py's ``on_cluster``), then a Connect client compacts it, reads it (also at
an old version) and writes a snapshot to S3. Each side reads and writes the table's files
through the data sources."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cluster import (
    S3_ON_STANDALONE,
    ClusterRuns,
    comparable,
    run_lakectl_sequence,
    snapshot_rows,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def without_sizes(value: Any) -> Any:
    """``value`` without byte counts: pyarrow's ORC writer (the fsspec path) and Spark's compress
    the same rows into files of different sizes."""
    if isinstance(value, dict):
        return {k: without_sizes(v) for k, v in value.items() if "bytes" not in k}
    if isinstance(value, list):
        return [without_sizes(v) for v in value]
    return value


def test_s3_table_on_a_standalone_cluster_matches_local_mode(
    on_cluster: ClusterRuns, local_reference
):
    results = on_cluster.s3_results
    loads = [(r["version"], r["counts"], sorted(r["added"])) for r in results[1:4]]
    assert without_sizes(loads) == without_sizes(local_reference["loads"])
    assert snapshot_rows(results[4]) == local_reference["snapshot"]


def test_s3_table_over_spark_connect_matches_local_mode(
    tmp_path, on_cluster: ClusterRuns, connect_url: str, local_reference
):
    # One client process for the rest of the workflow (test_connect has a process per session).
    connect_args = ("--warehouse", on_cluster.s3_warehouse, "--remote", connect_url)
    over_connect = run_lakectl_sequence(
        tmp_path,
        [(*connect_args, *c) for c in on_cluster.s3_commands[S3_ON_STANDALONE:]],
        env=on_cluster.s3_env,
    )
    results = [*on_cluster.s3_results, *over_connect]
    on_s3 = comparable(results[1:8])
    assert len(on_s3["snapshot"]) == 200 + 30 - 11 + 1 - 5
    for key, expected in local_reference.items():
        assert without_sizes(on_s3[key]) == without_sizes(expected), key
    assert results[8]["rows_written"] == len(local_reference["snapshot_after_compact"])
