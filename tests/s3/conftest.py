"""Fixtures for the S3 tests: one real SeaweedFS server per session (see seaweed_server.py) and,
per test, AWS environment variables pointing at it plus a private prefix in its bucket."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.seaweed import BUCKET, SeaweedServer, shared_server


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """The S3 server shared by the S3 tests (and tests/storage's contract suite); stopped when
    the test process exits."""
    yield shared_server(tmp_path_factory.mktemp("seaweed"))


@dataclass(frozen=True)
class S3Place:
    """A private prefix in the test bucket for one test, and the server behind it."""

    server: SeaweedServer
    prefix: str

    def url(self, name: str) -> str:
        return f"s3://{BUCKET}/{self.prefix}/{name}"


@pytest.fixture
def s3(seaweed: SeaweedServer, monkeypatch: pytest.MonkeyPatch) -> S3Place:
    """AWS environment pointing at the test server, and a fresh prefix to put tables under."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in seaweed.env().items():
        monkeypatch.setenv(name, value)
    return S3Place(seaweed, uuid.uuid4().hex[:12])
