"""The storage contract on a real S3 server: reads, writes, listing, errors without secrets, and
put-if-absent as a conditional PUT that exactly one of many racing writers wins."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lakectl.errors import StorageError
from lakectl.storage.fs import AlreadyExistsError, storage_for
from lakectl.storage.s3 import redact, s3fs_options
from lakectl.table.log import CommitRecord
from lakectl.table.store import LOG_DIR, META_DIR, TableStore
from tests.support.seaweed import ACCESS_KEY, SECRET_KEY


def test_reads_writes_listing_move_delete(s3):
    storage, root = storage_for(s3.url("files"))
    assert storage.scheme == "s3"
    storage.write_bytes(storage.join(root, "a", "b", "f1"), b"hello")
    storage.write_bytes(storage.join(root, "a", "f0"), b"xy")
    assert storage.read_text(storage.join(root, "a", "b", "f1")) == "hello"
    entries = storage.list_entries(storage.join(root, "a"))
    assert [(e["name"], e["type"]) for e in entries] == [("b", "directory"), ("f0", "file")]
    assert storage.exists(storage.join(root, "a", "f0"))
    assert storage.isdir(storage.join(root, "a", "b"))
    assert storage.du(storage.join(root, "a")) == 7
    assert storage.list_names(storage.join(root, "missing")) == []
    storage.move(storage.join(root, "a", "f0"), storage.join(root, "c", "f0"))
    assert storage.read_bytes(storage.join(root, "c", "f0")) == b"xy"
    assert not storage.exists(storage.join(root, "a", "f0"))
    storage.delete(storage.join(root, "a"), recursive=True)
    assert not storage.exists(storage.join(root, "a", "b", "f1"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        storage.read_bytes(storage.join(root, "a", "b", "f1"))


def test_storage_travels_pickled_without_showing_its_secret(s3):
    storage, root = storage_for(s3.url("pickled"))
    storage.write_bytes(storage.join(root, "f"), b"1")
    assert storage.options["secret"] == SECRET_KEY  # resolved from the environment, explicitly
    assert SECRET_KEY not in repr(storage)
    again = pickle.loads(pickle.dumps(storage))
    assert again.read_bytes(storage.join(root, "f")) == b"1"


def test_put_if_absent_refuses_a_taken_name(s3):
    storage, root = storage_for(s3.url("pia"))
    path = storage.join(root, "00000000000000000001.json")
    storage.put_if_absent(path, b"first")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        storage.put_if_absent(path, b"second")
    assert storage.read_bytes(path) == b"first"
    # A retried PUT whose first answer was lost meets its own bytes: that is success, not a loss.
    storage.put_if_absent(path, b"first")


def test_many_threads_racing_for_one_name_exactly_one_wins(s3):
    storage, root = storage_for(s3.url("race-threads"))
    path = storage.join(root, "00000000000000000007.json")
    racers = 24
    barrier = threading.Barrier(racers)

    def race(i: int) -> bool:
        barrier.wait()
        try:
            storage.put_if_absent(path, f"writer {i}".encode())
            return True
        except AlreadyExistsError:
            return False

    with ThreadPoolExecutor(racers) as pool:
        won = list(pool.map(race, range(racers)))
    assert won.count(True) == 1
    assert storage.read_text(path) == f"writer {won.index(True)}"


_RACER = """
import os, sys, time
from lakectl.storage.fs import AlreadyExistsError, storage_for
url, who, go, names = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
storage, root = storage_for(url)
storage.exists(root)  # connect before the start signal
while not os.path.exists(go):
    time.sleep(0.01)
for n in range(names):
    try:
        storage.put_if_absent(storage.join(root, f"{n:020d}.json"), who.encode())
        print(n)
    except AlreadyExistsError:
        pass
"""


def test_many_processes_racing_for_the_same_names_exactly_one_wins_each(s3, tmp_path: Path):
    url, go, names, racers = s3.url("race-procs"), tmp_path / "go", 10, 4
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, url, f"p{i}", str(go), str(names)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(racers)
    ]
    go.touch()
    wins: dict[int, list[str]] = {}
    for i, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        for line in out.split():
            wins.setdefault(int(line), []).append(f"p{i}")
    assert sorted(wins) == list(range(names))
    assert all(len(winners) == 1 for winners in wins.values()), wins
    storage, root = storage_for(url)
    for n, (winner,) in wins.items():
        assert storage.read_text(storage.join(root, f"{n:020d}.json")) == winner


def test_concurrent_commits_get_distinct_log_entries(s3):
    storage, root = storage_for(s3.url("commits"))
    store = TableStore(storage, root, "commits")
    store.commit(CommitRecord(seq=-1, operation="create", committed_at=0))  # entry 0
    writers = 8
    barrier = threading.Barrier(writers)

    def commit(i: int) -> int:
        barrier.wait()
        record = CommitRecord(seq=-1, operation="append", committed_at=0, read_seq=0)  # all alike
        return store.commit(record).seq

    with ThreadPoolExecutor(writers) as pool:
        seqs = sorted(pool.map(commit, range(writers)))
    assert seqs == list(range(1, writers + 1))
    assert len(storage.list_names(storage.join(root, LOG_DIR))) == writers + 1


def test_conditional_create_probe_passes_and_cleans_up(s3):
    storage, root = storage_for(s3.url("probe"))
    storage.require_conditional_create(storage.join(root, META_DIR))
    assert storage.list_names(storage.join(root, META_DIR)) == []


def test_wrong_secret_fails_with_a_storage_error_that_hides_it(s3, monkeypatch):
    wrong = "not-the-secret-0123456789"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    storage, root = storage_for(s3.url("denied"))
    for attempt in (
        lambda: storage.exists(storage.join(root, "f")),
        lambda: storage.write_bytes(storage.join(root, "f"), b"x"),
        lambda: storage.put_if_absent(storage.join(root, "g"), b"x"),
    ):
        with pytest.raises(StorageError) as info:
            attempt()
        message = str(info.value)
        assert wrong not in message and SECRET_KEY not in message
        assert s3.url("denied") in message and "failed: PermissionError" in message
        assert info.value.exit_code == 74


def test_options_come_from_config_first_then_environment():
    env = {
        "AWS_ACCESS_KEY_ID": "env-key",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_ENDPOINT_URL": "http://generic:1",
        "AWS_ENDPOINT_URL_S3": "http://s3-specific:2",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    from_env = s3fs_options({}, env)
    assert (from_env["key"], from_env["secret"]) == ("env-key", "env-secret")
    assert from_env["endpoint_url"] == "http://s3-specific:2"
    assert from_env["client_kwargs"] == {"region_name": "eu-west-1"}
    assert from_env["use_listings_cache"] is False
    configured = s3fs_options(
        {"access_key_id": "cfg-key", "secret_access_key": "cfg-secret", "region": "us-east-2"},
        env,
    )
    assert (configured["key"], configured["secret"]) == ("cfg-key", "cfg-secret")
    assert configured["client_kwargs"] == {"region_name": "us-east-2"}
    assert redact(configured)["secret"] == "****"
    assert redact({"client_kwargs": {"aws_session_token": "t"}}) == {
        "client_kwargs": {"aws_session_token": "****"}
    }


def test_lakectl_toml_storage_options_reach_s3(s3, tmp_path, monkeypatch):
    from lakectl.config import load_config
    from lakectl.ops.context import Context

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name)
    (tmp_path / "lakectl.toml").write_text(
        "[storage]\n"
        f'endpoint_url = "{s3.server.endpoint}"\n'
        f'access_key_id = "{ACCESS_KEY}"\n'
        f'secret_access_key = "{SECRET_KEY}"\n'
    )
    store = Context(load_config(cwd=tmp_path)).table(s3.url("configured"))
    store.storage.write_bytes(store.path("f"), b"ok")
    assert store.storage.read_bytes(store.path("f")) == b"ok"
