"""``lakectl stream`` (issue 7): exactly once across kills, bad files, clean stop, bounded deltas.

The table is compared with the DuckDB oracle of :mod:`tests.ops.cdc_oracle`, fed the same files
in the same micro-batches the log says were committed, and also file by file: the generated
changes are such that both give the same table, so a file applied twice or lost shows either way.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lakectl.config import Config
from lakectl.errors import BadInputError
from lakectl.ops.context import Context
from lakectl.ops.load import LoadOptions
from lakectl.ops.stream import DELTA_MARGIN, StreamOptions, stream
from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore
from tests.support.cdc_oracle import CdcOracle
from tests.support.processes import JVM_OPTIONS

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "id bigint, ts bigint, v string, day string"
COLUMNS = {"id": "BIGINT", "ts": "BIGINT", "v": "VARCHAR", "day": "VARCHAR"}
HEADER = "id,ts,v,day,op_code"
DAYS = ("2024-01-01", "2024-01-02")


class ChangeFeed:
    """CDC files whose result does not depend on how files are grouped into batches.

    Change times grow across files; keys are never reused after a delete; "late" changes (older
    than anything stored) only touch keys that are never deleted, so they are always ignored.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ts = 0
        self.next_id = 1
        self.live: dict[int, str] = {}
        self.deleted: set[int] = set()

    def file(self, rows: int) -> str:
        lines = [HEADER]
        for _ in range(rows):
            self.ts += 1
            pick = self.rng.random()
            if pick < 0.4 or len(self.live) < 5:
                key, day = self.next_id, self.rng.choice(DAYS)
                self.next_id += 1
                self.live[key] = day
                lines.append(f"{key},{self.ts},i{self.ts},{day},I")
            elif pick < 0.75:
                key = self.rng.choice(sorted(self.live))
                lines.append(f"{key},{self.ts},u{self.ts},{self.live[key]},U")
            elif pick < 0.9:
                key = self.rng.choice(sorted(self.live))
                lines.append(f"{key},{self.ts},,{self.live.pop(key)},D")
                self.deleted.add(key)
            else:
                key = self.rng.choice(sorted(self.live))
                lines.append(f"{key},{-self.ts},late{self.ts},{self.live[key]},U")
        return "\n".join(lines) + "\n"


def drop(land: Path, name: str, text: str) -> None:
    """Write under a hidden name, then rename: the stream never sees half a file."""
    tmp = land / f".{name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, land / name)


def store_of(table: Path) -> TableStore:
    storage, path = storage_for(str(table))
    return TableStore(storage, path)


def stream_batches(table: Path) -> list[list[str]]:
    """Per committed stream record, in log order, the landing files it applied."""
    out = []
    for record in store_of(table).read_state().records:
        info = record.info.get("stream")
        if info:
            out.append(list(info["files"]))
    return out


def open_write_ids(table: Path) -> set[int]:
    store = store_of(table)
    committed = store.read_state().committed_write_ids
    return {
        w
        for w, e in store.allocated_write_ids().items()
        if w not in committed and not e.get("aborted")
    }


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def oracle_rows(land: Path, batches: list[list[str]]) -> list[dict]:
    """The oracle fed ``batches`` (lists of landing file names) as one CSV each."""
    oracle = CdcOracle(COLUMNS, ("id",), "ts", "op_code")
    for i, names in enumerate(batches):
        body = [HEADER]
        for name in names:
            body += (land / name).read_text().splitlines()[1:]
        path = land.parent / f"oracle_{i}.csv"
        path.write_text("\n".join(body) + "\n")
        oracle.apply_csv(str(path), "cdc")
    return sorted(oracle.rows(), key=lambda r: r["id"])


def table_rows(lakectl_cli, table: Path) -> list[dict]:
    result = lakectl_cli("snapshot", table, "--json", "--limit", "0")
    assert result.code == 0, result.err
    data = result.json
    return sorted(data["rows"], key=lambda r: r["id"])


def create_table(lakectl_cli, table: Path) -> None:
    result = lakectl_cli(
        "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "day"
    )
    assert result.code == 0, result.err


def start_stream(table: Path, land: Path, log: Path, failpoints: str = "") -> subprocess.Popen:
    env = dict(os.environ, LAKECTL_FAILPOINTS=failpoints)
    args = [sys.executable, "-m", "lakectl", "--master", "local[2]", "stream", str(table)]
    args += [str(land), "--op-column", "op_code", "--order-by", "ts", "--trigger", "500ms"]
    args += ["--json", *JVM_OPTIONS]
    return subprocess.Popen(
        args, cwd=REPO, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
def test_killed_and_restarted_stream_applies_every_file_exactly_once(tmp_path, spark, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    feed = ChangeFeed(seed=7)
    names = [f"f{i:03d}.csv" for i in range(11)]
    texts = {n: feed.file(40) for n in names}
    for n in names[:3]:
        drop(land, n, texts[n])

    # 1. Killed with SIGKILL in the middle of a micro-batch (a write id allocated, not committed).
    # Each micro-batch stops before its write until `go` exists: the first one is let through,
    # the next one is killed there.
    reached, go = tmp_path / "reached", tmp_path / "go"
    hold = f"load.before_write=touch:{reached},load.before_write=wait:{go}"
    first = start_stream(table, land, tmp_path / "a.log", failpoints=hold)
    wait_for(reached.exists, 240, "the first micro-batch to start")
    go.touch()
    wait_for(lambda: len(stream_batches(table)) >= 1, 240, "the first micro-batch")
    reached.unlink()
    go.unlink()
    drop(land, names[3], texts[names[3]])
    wait_for(reached.exists, 120, "a micro-batch in progress")
    first.send_signal(signal.SIGKILL)
    assert first.wait(30) == -signal.SIGKILL
    killed_mid_batch = open_write_ids(table)
    assert killed_mid_batch

    # 2. Restarted: it lists the landing directory and commits what the log lacks (the killed
    # batch's file and those dropped meanwhile) before Spark starts; Spark then hands over again
    # the batch the first run never finished, whose files the log now has: they are skipped.
    # Files keep arriving (through Spark's file source); SIGTERM stops it cleanly.
    for n in names[4:7]:
        drop(land, n, texts[n])
    third = start_stream(table, land, tmp_path / "c.log")
    caught_up = lambda: names[6] in {n for b in stream_batches(table) for n in b}  # noqa: E731
    wait_for(caught_up, 240, "the restarted stream to catch up")
    before = len(stream_batches(table))
    for n in names[7:]:
        drop(land, n, texts[n])
        time.sleep(0.3)
    applied = lambda: sum(len(b) for b in stream_batches(table)) >= len(names)  # noqa: E731
    wait_for(applied, 240, "every file committed")
    third.send_signal(signal.SIGTERM)
    assert third.wait(120) == 0, (tmp_path / "c.log").read_text()[-2000:]
    log = (tmp_path / "c.log").read_text()
    result = json.loads(log[log.index("{\n") :])
    assert result["stopped_by"] == "signal"
    assert result["status"]["already_applied_files_skipped"] >= 1  # Spark's replay, deduplicated

    batches = stream_batches(table)
    assert len(batches) > before, "files dropped while running were committed by Spark batches"
    flat = [n for b in batches for n in b]
    assert sorted(flat) == names, "every file exactly once"
    state = store_of(table).read_state()
    assert not killed_mid_batch & state.committed_write_ids  # the killed batch never committed
    got = table_rows(lakectl_cli, table)
    assert got == oracle_rows(land, batches)
    assert got == oracle_rows(land, [[n] for n in names])  # grouping does not matter here


@pytest.mark.slow
def test_second_signal_abandons_the_running_micro_batch(
    tmp_path, spark, lakectl_cli, jvm_processes
):
    """Ctrl-C stops after the running micro-batch; a second Ctrl-C abandons it: nothing of it
    commits or stays on storage, and the next run applies its file."""
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    drop(land, "a.csv", ChangeFeed(seed=5).file(60))
    reached, go = tmp_path / "reached", tmp_path / "go"
    # The catch-up micro-batch stops before its write until the signals have been sent.
    hold = f"load.before_write=touch:{reached},load.before_write=wait:{go}"
    proc = start_stream(table, land, tmp_path / "s.log", failpoints=hold)
    wait_for(reached.exists, 240, "the micro-batch to start")
    (write_id,) = open_write_ids(table)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    go.touch()
    assert proc.wait(120) == 0, (tmp_path / "s.log").read_text()[-2000:]
    log = (tmp_path / "s.log").read_text()
    result = json.loads(log[log.index("{\n") :])
    assert result["stopped_by"] == "signal (running micro-batch abandoned)"

    store = store_of(table)
    assert [r.operation for r in store.read_state().records] == ["create"]
    assert store.allocated_write_ids()[write_id].get("aborted")
    assert not list(table.glob("*/delta_*")) and not list(table.glob("*/delete_delta_*"))
    assert (land / "a.csv").exists()

    again = _run(table, land, max_batches=1)
    assert again.status.files == 1
    assert stream_batches(table) == [["a.csv"]]
    assert table_rows(lakectl_cli, table) == oracle_rows(land, [["a.csv"]])


def _run(table: Path, land: Path, **kw) -> object:
    options = StreamOptions(
        load=LoadOptions(
            source=str(land), format="csv", mode="cdc", op_column="op_code", order_by="ts"
        ),
        trigger_seconds=0.5,
        **kw,
    )
    return stream(Context(Config()), str(table), options, handle_signals=False)


def test_bad_file_skip_moves_it_aside_and_loads_the_rest(tmp_path, spark, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    feed = ChangeFeed(seed=3)
    drop(land, "a.csv", feed.file(30))
    drop(land, "b.csv", f"{HEADER}\n1,5,x,{DAYS[0]},I\nnot-a-number,6,y,{DAYS[0]},I\n")
    drop(land, "c.csv", feed.file(30))
    drop(land, "d.csv", f"{HEADER}\n")  # no rows: adds nothing, is no error
    drop(land, "e.csv", f"{HEADER}\n2,7,z,{DAYS[1]},I,surplus\n")  # malformed row

    result = _run(table, land, on_bad_file="skip", max_batches=1)

    assert [b["file"] for b in result.status.bad_files] == ["b.csv", "e.csv"]
    assert "'id'" in result.status.bad_files[0]["error"]
    assert "e.csv: cannot be parsed" in result.status.bad_files[1]["error"]
    assert not (land / "b.csv").exists() and (land / "d.csv").exists()
    assert (land / "_bad" / "b.csv").exists() and (land / "_bad" / "e.csv").exists()
    assert "not-a-number" in (land / "_bad" / "b.csv.error.txt").read_text()
    records = [r for r in store_of(table).read_state().records if "stream" in r.info]
    assert [r.info["stream"]["files"] for r in records] == [["a.csv", "c.csv", "d.csv"]]
    assert records[0].info["stream"]["skipped"] == ["b.csv", "e.csv"]
    assert table_rows(lakectl_cli, table) == oracle_rows(land, [["a.csv", "c.csv"]])


def test_bad_file_fail_stops_and_commits_nothing(tmp_path, spark, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    drop(land, "a.csv", ChangeFeed(seed=4).file(20))
    drop(land, "b.csv", f"{HEADER}\n1,5,x,{DAYS[0]},Q\n")

    with pytest.raises(BadInputError) as caught:
        _run(table, land, on_bad_file="fail", max_batches=1)

    message = str(caught.value)
    assert "b.csv" in message and "unknown op code" in message
    assert "nothing of this micro-batch was committed" in message
    assert "--on-bad-file skip" in message
    assert [r.operation for r in store_of(table).read_state().records] == ["create"]
    assert (land / "b.csv").exists() and not (land / "_bad").exists()


def test_compaction_keeps_deltas_per_partition_bounded(tmp_path, spark, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    threshold = 3
    assert lakectl_cli("set", table, f"compactor.delta.num.threshold={threshold}").code == 0
    feed = ChangeFeed(seed=11)
    names = [f"f{i:03d}.csv" for i in range(10)]
    for n in names:
        drop(land, n, feed.file(25))
        time.sleep(0.01)  # distinct arrival times: files apply in name order

    result = _run(table, land, max_files_per_batch=1, max_batches=len(names))

    status = result.status
    assert status.batches == len(names)
    assert status.compactions >= 1, status.compaction_error
    # Each micro-batch adds at most a delta and a delete delta per partition.
    assert status.max_deltas_per_partition <= threshold + DELTA_MARGIN + 2, status.to_dict()
    assert table_rows(lakectl_cli, table) == oracle_rows(land, [[n] for n in names])
