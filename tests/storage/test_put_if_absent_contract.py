"""The put-if-absent contract, one suite for every backend (see conftest.BACKENDS): the first
writer of a name wins with exactly its bytes, later writers get AlreadyExistsError and change
nothing, no temporary file is left visible, the storage survives pickling (executors), and, on
backends that claim it, exactly one of many concurrent writers wins."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lakectl.storage.fs import AlreadyExistsError
from tests.support.storage_backends import EXCLUSIVE, Backend


def test_first_writer_wins_and_later_ones_change_nothing(backend: Backend):
    storage, root = backend.storage, backend.root
    path = storage.join(root, "_lakectl", "log", "00000000000000000001.json")
    storage.put_if_absent(path, b'{"write_id": 1}')  # parents are created as needed
    with pytest.raises(AlreadyExistsError, match="already exists"):
        storage.put_if_absent(path, b'{"write_id": 2}')
    assert storage.read_bytes(path) == b'{"write_id": 1}'
    storage.put_if_absent(storage.join(root, "_lakectl", "log", "00000000000000000002.json"), b"")
    assert storage.list_names(storage.join(root, "_lakectl", "log")) == [
        "00000000000000000001.json",
        "00000000000000000002.json",
    ]  # no temporary or probe files left beside them


def test_a_storage_unpickled_elsewhere_sees_the_same_files(backend: Backend):
    if backend.name == "memory":
        pytest.skip("memory:// is one process's memory: nothing to share")
    storage, root = backend.storage, backend.root
    path = storage.join(root, "txns", "1.json")
    storage.put_if_absent(path, b"one")
    again = pickle.loads(pickle.dumps(storage))
    assert again.read_bytes(path) == b"one"
    with pytest.raises(AlreadyExistsError):
        again.put_if_absent(path, b"two")


def test_exactly_one_of_many_concurrent_writers_wins(backend: Backend):
    if backend.name not in EXCLUSIVE:
        pytest.skip(
            f"{backend.name}:// uses check-then-create (fsspec mode 'xb'): not exclusive between "
            "concurrent writers, so lakectl never relies on it for a shared table"
        )
    storage, root = backend.storage, backend.root
    racers = 8
    barrier = threading.Barrier(racers)
    path = storage.join(root, "race", "00000000000000000007.json")

    def race(i: int) -> bool:
        barrier.wait()
        try:
            storage.put_if_absent(path, f"writer {i}".encode())
        except AlreadyExistsError:
            return False
        return True

    with ThreadPoolExecutor(racers) as pool:
        won = list(pool.map(race, range(racers)))
    assert won.count(True) == 1
    assert storage.read_bytes(path) == f"writer {won.index(True)}".encode()
