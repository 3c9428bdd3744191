"""A table removed while a writer runs: the writer fails clearly and commits nothing."""

from __future__ import annotations

import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest


def test_a_load_into_a_table_removed_mid_load_fails_and_commits_nothing(
    tmp_path, lakectl_cli, spark, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The Spark load runs in this process (its session: no JVM to start) in a thread, stopped
    before its write until the table is gone."""
    table = tmp_path / "t"
    assert (
        lakectl_cli("create", table, "--schema", "a int, b string", "--primary-key", "a").code == 0
    )
    batch = tmp_path / "x.csv"
    batch.write_text("a,b\n1,x\n2,y\n")
    reached, go = tmp_path / "reached", tmp_path / "go"
    hold = f"load.before_write=touch:{reached},load.before_write=wait:{go}"
    monkeypatch.setenv("LAKECTL_FAILPOINTS", hold)
    with ThreadPoolExecutor(1) as pool:
        load = pool.submit(lakectl_cli, "load", table, batch, "--mode", "upsert", "--json")
        deadline = time.time() + 300
        while not reached.exists() and time.time() < deadline and not load.done():
            time.sleep(0.05)
        try:
            assert reached.exists(), load.result().err[-2000:] if load.done() else "timed out"
            shutil.rmtree(table)
        finally:
            go.touch()
        done = load.result(timeout=300)
    assert done.code == 66, done.err[-2000:]
    error = done.json["error"]
    assert "disappeared while this upsert was running" in error["message"]
    assert "Traceback" not in done.err
    assert not (table / "_lakectl" / "log").exists() or not list(
        (table / "_lakectl" / "log").iterdir()
    )


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 300 KB tmpfs (needs root and mount; skipped where that is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode()[:200]}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("engine", ["spark", "arrow"])
def test_a_full_disk_is_a_storage_error_and_leaves_no_files(
    small_disk, tmp_path, lakectl_cli, spark, engine
) -> None:  # type: ignore[no-untyped-def]
    """The ORC writer (in Spark's tasks, or the Arrow engine's in this process) meets a full
    disk: exit 74 naming it, no commit, no files (pyarrow's writer once ended the process)."""
    table = small_disk / "t"
    assert lakectl_cli("create", table, "--schema", "a int, b string").code == 0
    batch = tmp_path / "big.csv"
    batch.write_text("a,b\n" + "".join(f"{i},{'x' * 40}{i}\n" for i in range(60_000)))
    run = lakectl_cli("load", table, batch, "--mode", "append", "--json", "--engine", engine)
    assert run.code == 74, run.out
    assert "No space left on device" in run.json["error"]["message"]
    assert sorted(p.name for p in (table / "_lakectl" / "log").iterdir()) == [
        "00000000000000000000.json"
    ]
    staging = table / "_lakectl" / "staging"
    assert not staging.exists() or not any(p.is_file() for p in staging.rglob("*"))
    assert not [p for p in table.iterdir() if p.name.startswith("delta_")]
