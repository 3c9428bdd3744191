"""The storage layer on local files: URLs, reads and writes, and put-if-absent, the one primitive
the transaction log relies on (exclusive, atomic, never a partial file)."""

from __future__ import annotations

import os
import pickle
import threading

import pytest

from lakectl.storage.fs import AlreadyExistsError, Storage, split_url, storage_for


@pytest.mark.parametrize(
    ("url", "scheme", "path"),
    [
        ("/data/sales", "file", "/data/sales"),
        ("file:///data/sales", "file", "/data/sales"),
        ("s3://bucket/wh/sales", "s3", "bucket/wh/sales"),
        ("s3://bucket/wh/sales/", "s3", "bucket/wh/sales"),
        ("hdfs://nn:8020/wh/sales", "hdfs", "nn:8020/wh/sales"),
    ],
)
def test_split_url(url, scheme, path):
    assert split_url(url) == (scheme, path)


def test_relative_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert split_url("wh/sales") == ("file", str(tmp_path / "wh" / "sales"))
    assert split_url("./wh/../t") == ("file", str(tmp_path / "t"))


def test_local_url_round_trip(tmp_path):
    storage, path = storage_for(str(tmp_path / "t"))
    assert storage.url(path) == f"file://{tmp_path}/t"
    again, same = storage_for(storage.url(path))
    assert (again.scheme, same) == ("file", path)


def test_reads_writes_and_listing(tmp_path):
    storage, root = storage_for(str(tmp_path))
    storage.write_bytes(storage.join(root, "a", "b", "f1"), b"hello")
    storage.write_bytes(storage.join(root, "a", "f0"), b"xy")
    assert storage.read_text(storage.join(root, "a", "b", "f1")) == "hello"
    entries = storage.list_entries(storage.join(root, "a"))
    assert [(e["name"], e["type"]) for e in entries] == [("b", "directory"), ("f0", "file")]
    assert entries[1]["size"] == 2
    assert entries[1]["path"] == str(tmp_path / "a" / "f0")
    assert storage.list_names(storage.join(root, "missing")) == []
    assert storage.exists(storage.join(root, "a", "f0"))
    assert storage.isdir(storage.join(root, "a", "b"))
    assert not storage.isdir(storage.join(root, "a", "f0"))
    assert storage.du(storage.join(root, "a")) == 7
    assert storage.du(storage.join(root, "missing")) == 0


def test_move_and_delete(tmp_path):
    storage, root = storage_for(str(tmp_path))
    storage.write_bytes(storage.join(root, "src", "f"), b"data")
    storage.move(storage.join(root, "src", "f"), storage.join(root, "dst", "deep", "g"))
    assert (tmp_path / "dst" / "deep" / "g").read_bytes() == b"data"
    assert not (tmp_path / "src" / "f").exists()
    storage.delete(storage.join(root, "dst"), recursive=True)
    assert not (tmp_path / "dst").exists()
    storage.delete(storage.join(root, "never-existed"))  # no error


def test_missing_file_error_names_the_url(tmp_path):
    storage, root = storage_for(str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"file://{tmp_path}/nope does not exist"):
        storage.read_bytes(storage.join(root, "nope"))


def test_storage_pickles_without_its_filesystem(tmp_path):
    storage, root = storage_for(str(tmp_path))
    storage.write_bytes(storage.join(root, "f"), b"1")
    _ = storage.fs
    clone = pickle.loads(pickle.dumps(storage))
    assert clone._fs is None
    assert clone.read_bytes(storage.join(root, "f")) == b"1"


def test_unknown_scheme_is_a_storage_error():
    from lakectl.errors import StorageError

    with pytest.raises(StorageError, match="no storage backend"):
        _ = Storage("nosuchscheme").fs


# --- put-if-absent ----------------------------------------------------------------------------


def test_put_if_absent_creates_once(tmp_path):
    storage, root = storage_for(str(tmp_path))
    target = storage.join(root, "log", "00000000000000000001.json")
    storage.put_if_absent(target, b"first")
    with pytest.raises(AlreadyExistsError):
        storage.put_if_absent(target, b"second")
    assert (tmp_path / "log" / "00000000000000000001.json").read_bytes() == b"first"
    # No temporary files are left behind, after success or failure.
    assert os.listdir(tmp_path / "log") == ["00000000000000000001.json"]


def _race(storage: Storage, target: str, writers: int) -> tuple[list[int], list[int]]:
    barrier = threading.Barrier(writers)
    won: list[int] = []
    lost: list[int] = []

    def write(i: int) -> None:
        payload = f"writer {i}".encode() * 1000
        barrier.wait()
        try:
            storage.put_if_absent(target, payload)
            won.append(i)
        except AlreadyExistsError:
            lost.append(i)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, lost


@pytest.mark.parametrize("round_", range(5))
def test_racing_writers_exactly_one_wins(tmp_path, round_):
    storage, root = storage_for(str(tmp_path))
    target = storage.join(root, "log", f"{round_:020d}.json")
    won, lost = _race(storage, target, writers=12)
    assert len(won) == 1
    assert len(lost) == 11
    assert (
        tmp_path / "log" / f"{round_:020d}.json"
    ).read_bytes() == f"writer {won[0]}".encode() * 1000
    assert os.listdir(tmp_path / "log") == [f"{round_:020d}.json"]


def test_generic_exclusive_create_also_has_one_winner(tmp_path):
    """The path used for HDFS-like stores (exclusive open), exercised on the local filesystem."""
    storage, root = storage_for(str(tmp_path))
    target = storage.join(root, "log", "x.json")

    barrier = threading.Barrier(8)
    won: list[int] = []

    def write(i: int) -> None:
        barrier.wait()
        try:
            storage._put_if_absent_generic(target, f"w{i}".encode())
            won.append(i)
        except AlreadyExistsError:
            pass

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert (tmp_path / "log" / "x.json").read_bytes() == f"w{won[0]}".encode()


def test_a_reader_never_sees_a_partial_file(tmp_path):
    storage, root = storage_for(str(tmp_path))
    target = storage.join(root, "log", "big.json")
    payload = os.urandom(1024) * (24 * 1024)  # 24 MB: slow enough to be caught mid-write
    storage.makedirs(storage.join(root, "log"))
    seen: list[int] = []
    watching, done = threading.Event(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            watching.set()
            try:
                with open(target, "rb") as handle:
                    seen.append(len(handle.read()))
            except FileNotFoundError:
                continue

    watcher = threading.Thread(target=watch)
    watcher.start()
    watching.wait()
    try:
        storage.put_if_absent(target, payload)
    finally:
        done.set()
        watcher.join()
    assert all(size == len(payload) for size in seen), sorted(set(seen))[:5]
    assert (tmp_path / "log" / "big.json").read_bytes() == payload
