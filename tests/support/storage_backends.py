"""The storage backends the contract suite runs on (the fixture is in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from lakectl.storage.fs import Storage

BACKENDS = ("local", "s3", "memory", "hdfs")
# Backends whose put-if-absent is exclusive between concurrent writers (threads, processes).
EXCLUSIVE = frozenset({"local", "s3", "hdfs"})


@dataclass(frozen=True)
class Backend:
    name: str
    storage: Storage
    root: str
