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
import sys
import uuid
from pathlib import Path

import pytest
from backends import BACKENDS, Backend

from lakectl.storage.fs import storage_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "s3"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch) -> Backend:
    name = request.param
    prefix = uuid.uuid4().hex[:12]
    if name == "local":
        url = str(tmp_path / "contract")
    elif name == "memory":
        url = f"memory://contract-{prefix}"
    elif name == "s3":
        from seaweed_server import BUCKET, shared_server

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
