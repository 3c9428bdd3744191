"""``lakectl stream --engine arrow``: micro-batches loaded and compacted in the lakectl process.

The same landing files and oracle as tests/ops/test_stream.py (the Spark engine's stream), but
no JVM may start: ``java`` is hidden for each test, so a Spark session would fail to start.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lakectl.config import Config
from lakectl.ops.context import Context
from lakectl.ops.load import LoadOptions
from lakectl.ops.stream import StreamOptions, StreamResult, stream
from tests.ops.test_stream import (
    DAYS,
    HEADER,
    ChangeFeed,
    create_table,
    drop,
    oracle_rows,
    store_of,
    stream_batches,
)

NO_JAVA = Path(__file__).resolve().parents[1] / "support" / "no_java"


@pytest.fixture(autouse=True)
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever would start a JVM finds a `java` that fails."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{NO_JAVA}:{os.environ['PATH']}")


def table_rows(lakectl_cli, table: Path) -> list[dict]:
    result = lakectl_cli("snapshot", table, "--engine", "arrow", "--json", "--limit", "0")
    assert result.code == 0, result.err
    return sorted(result.json["rows"], key=lambda r: r["id"])


def _stream(lakectl_cli, table: Path, land: Path, *args: object) -> dict:
    result = lakectl_cli(
        "stream", table, land, "--op-column", "op_code", "--order-by", "ts",
        "--trigger", "200ms", "--engine", "arrow", "--json", *args,
    )  # fmt: skip
    assert result.code == 0, result.err
    return result.json


def test_arrow_stream_applies_each_file_once_and_compacts(tmp_path, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    assert lakectl_cli("set", table, "compactor.delta.num.threshold=2").code == 0
    feed = ChangeFeed(seed=5)
    names = [f"f{i}.csv" for i in range(4)]
    for name in names:
        drop(land, name, feed.file(20))
        time.sleep(0.01)  # distinct arrival times: files apply in name order

    first = _stream(lakectl_cli, table, land, "--max-files-per-batch", "1", "--max-batches", "4")

    assert first["engine"] == "arrow" and first["stopped_by"] == "max-batches"
    status = first["status"]
    assert (status["batches"], status["files"], status["engines"]) == (4, 4, {"arrow": 4})
    assert status["compaction_error"] is None and status["compactions"] >= 1
    assert stream_batches(table) == [[n] for n in names]
    assert table_rows(lakectl_cli, table) == oracle_rows(land, [[n] for n in names])

    # Restarted: the files the log names are not applied again, a new one is.
    drop(land, "f4.csv", feed.file(20))
    second = _stream(lakectl_cli, table, land, "--max-batches", "1")

    assert (second["status"]["batches"], second["status"]["files"]) == (1, 1)
    assert stream_batches(table) == [[n] for n in [*names, "f4.csv"]]
    every = [[n] for n in [*names, "f4.csv"]]
    assert table_rows(lakectl_cli, table) == oracle_rows(land, every)


def _run(table: Path, land: Path, **kw: object) -> StreamResult:
    options = StreamOptions(
        load=LoadOptions(
            source=str(land),
            format="csv",
            mode="cdc",
            op_column="op_code",
            order_by="ts",
            engine="arrow",
        ),
        trigger_seconds=0.2,
        **kw,  # type: ignore[arg-type]
    )
    return stream(Context(Config()), str(table), options, handle_signals=False)


def test_arrow_stream_moves_bad_files_aside_and_loads_the_rest(tmp_path, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    feed = ChangeFeed(seed=3)
    drop(land, "a.csv", feed.file(30))
    drop(land, "b.csv", f"{HEADER}\n1,5,x,{DAYS[0]},I\nnot-a-number,6,y,{DAYS[0]},I\n")
    drop(land, "c.csv", feed.file(30))
    drop(land, "d.csv", f"{HEADER}\n")  # no rows: adds nothing, is no error
    drop(land, "e.csv", f"{HEADER}\n2,7,z,{DAYS[1]},I,surplus\n")  # malformed row

    result = _run(table, land, on_bad_file="skip", max_batches=1, compact=False)

    assert result.engine == "arrow" and result.status.engines == {"arrow": 1}
    # A malformed record is found as the file is read, a bad value once the batch is checked.
    errors = {b["file"]: b["error"] for b in result.status.bad_files}
    assert sorted(errors) == ["b.csv", "e.csv"]
    assert "'id'" in errors["b.csv"] and "not-a-number" in errors["b.csv"]
    assert "e.csv" in errors["e.csv"]
    assert (land / "_bad" / "b.csv").exists() and (land / "_bad" / "e.csv").exists()
    records = [r for r in store_of(table).read_state().records if "stream" in r.info]
    assert [r.info["stream"]["files"] for r in records] == [["a.csv", "c.csv", "d.csv"]]
    assert sorted(records[0].info["stream"]["skipped"]) == ["b.csv", "e.csv"]
    assert table_rows(lakectl_cli, table) == oracle_rows(land, [["a.csv", "c.csv"]])


def test_auto_stream_loads_small_micro_batches_in_arrow(tmp_path, lakectl_cli):
    table, land = tmp_path / "t", tmp_path / "land"
    land.mkdir()
    create_table(lakectl_cli, table)
    drop(land, "a.csv", ChangeFeed(seed=8).file(10))

    result = _stream(
        lakectl_cli, table, land, "--max-batches", "1", "--no-compact", "--engine", "auto"
    )

    assert result["engine"] == "auto"  # the last --engine given wins
    assert result["status"]["engines"] == {"arrow": 1}
    reason = result["status"]["engine_reason"]
    assert reason.startswith("auto: ") and "of work, at most engine.auto.max-bytes=" in reason
    assert (result["engine_reason"], result["status"]["fallback_reason"]) == (reason, None)
    drop(land, "b.csv", ChangeFeed(seed=9).file(10))
    verbose = lakectl_cli(
        "stream", table, land, "--op-column", "op_code", "--order-by", "ts", "--trigger",
        "200ms", "--max-batches", "1", "--no-compact", "--engine", "auto", "--verbose",
    )  # fmt: skip
    assert verbose.code == 0, verbose.err
    assert "engine: auto (auto: " in verbose.err and "of work, at most" in verbose.err
    assert stream_batches(table) == [["a.csv"], ["b.csv"]]
