"""Backends for the storage contract suite: every real backend that can run here.

- ``local``: a temporary directory (hard-link commits).
- ``s3``: the SeaweedFS server of tests/s3 (conditional PUT commits), started once per run.
- ``memory``: fsspec's in-process memory filesystem (the generic ``mode="xb"`` path).
- ``hdfs``: only with ``LAKECTL_TEST_HDFS_URL=hdfs://namenode:8020/some/dir`` and a working
  libhdfs (see lakectl/storage/hdfs.py); no HDFS can run on the test machines, so it is skipped
  there, saying so.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from lakectl.storage.fs import storage_for
from tests.support.storage_backends import BACKENDS, Backend


# The S3 backend starts a real server: such cases leave the fast tier like server fixtures do.
@pytest.fixture(
    params=[pytest.param(b, marks=pytest.mark.server) if b == "s3" else b for b in BACKENDS]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch) -> Backend:
    name = request.param
    prefix = uuid.uuid4().hex[:12]
    if name == "local":
        url = str(tmp_path / "contract")
    elif name == "memory":
        url = f"memory://contract-{prefix}"
    elif name == "s3":
        from tests.support.seaweed import BUCKET, shared_server

        server = shared_server(request.getfixturevalue("tmp_path_factory").mktemp("seaweed"))
        for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"):
            monkeypatch.delenv(key, raising=False)
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        url = f"s3://{BUCKET}/contract/{prefix}"
    else:
        base = os.environ.get("LAKECTL_TEST_HDFS_URL")
        if not base:
            pytest.skip("no HDFS here: set LAKECTL_TEST_HDFS_URL=hdfs://nn:8020/dir to run")
        url = f"{base.rstrip('/')}/contract-{prefix}"
    storage, root = storage_for(url)
    return Backend(name, storage, root)
