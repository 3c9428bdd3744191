"""Fixtures for the tests against real Spark servers (see tests/support/cluster.py)."""

from tests.support.cluster import (
    connect_url,
    local_reference,
    on_cluster,
    s3_server,
    standalone_cluster,
)

__all__ = ["connect_url", "local_reference", "on_cluster", "s3_server", "standalone_cluster"]
