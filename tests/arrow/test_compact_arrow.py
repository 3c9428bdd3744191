"""``compact --engine arrow``: minor and major compaction in the lakectl process, without a JVM.

The table's history is written by the Arrow engine's ACID writer (:mod:`tests.support.arrow_history`),
so nothing here needs Spark: every version must read the same after each compaction, the outputs
must have Hive's layout (``delta_A_B``, ``delete_delta_A_B``, ``base_N_vW``, bucket files with
``hive.acid.*`` metadata, ``_orc_acid_version``), a compaction stopped at any of its failpoints
must leave the table reading the same and be finished by a rerun and ``clean``, and what the Arrow
engine cannot do as Spark does is refused with the reason (``auto`` then picks Spark).
(Compaction by both engines of one table is compared in tests/ops/test_compact_engines.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.arrow.acid_writer import write_event_file
from lakectl.arrow.bucket_compaction import (
    INSERTS,
    BucketCompactor,
    BucketGroup,
    compact_groups,
    unsafe_type,
)
from lakectl.arrow.types import event_schema
from lakectl.engine import choose_engine
from lakectl.errors import UsageError
from lakectl.table.log import Operation
from lakectl.table.schema import Column, Schema
from lakectl.table.transaction import failpoints_of
from lakectl.table.validity import ValidWriteIds
from tests.support.arrow_history import History, build_history
from tests.support.cli import run_lakectl, run_lakectl_until_crash
from tests.support.table_logs import log_on_disk, store_at

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    """The table after its history (read-only: tests copy it)."""
    return build_history(tmp_path_factory.mktemp("compact_arrow") / "t")


def _copy(history: History, tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(history.root, root)
    return root


def _rows(root: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    table = lakectl.open_table(str(root))
    rows = table.scan(version=version, engine="arrow").to_arrow().to_pylist()
    return sorted((r["id"], r["name"], r["qty"], r["day"]) for r in rows)


def _assert_every_version(history: History, root: Path) -> None:
    for version, expected in history.versions.items():
        assert _rows(root, version) == expected, version


def _dirs(root: Path) -> set[str]:
    return {str(d.relative_to(root)) for d in root.glob("day=*/*") if d.is_dir()}


def _assert_hive_layout(directory: Path) -> None:
    assert (directory / "_orc_acid_version").read_text() == "2"
    assert json.loads((directory / "_metadata_acid").read_text())["dataFormat"] == "compacted"
    for path in directory.glob("bucket_*"):
        metadata = {k.decode() for k in orc.ORCFile(str(path)).metadata}
        assert {"hive.acid.key.index", "hive.acid.stats", "hive.acid.version"} <= metadata


def test_minor_then_major_read_the_same_at_every_version(history, tmp_path) -> None:
    root = _copy(history, tmp_path)
    minor = run_lakectl("compact", root, "--minor", "--engine", "arrow", "--json")
    assert minor.code == 0, minor.err
    assert (minor.json["engine"], minor.json["engine_reason"]) == ("arrow", "asked for")
    assert minor.json["peak_memory_bytes"] > 0
    assert _dirs(root) >= {
        f"day=d{n}/{name}"
        for n in range(3)
        for name in ("delta_0000001_0000004", "delete_delta_0000001_0000004")
    }
    for directory in root.glob("day=*/*delta_000000?_0000004"):
        _assert_hive_layout(directory)
    _assert_every_version(history, root)

    major = run_lakectl("compact", root, "--major", "--engine", "arrow", "--json")
    assert major.code == 0, major.err
    assert major.json["counts"]["rows_written"] == len(history.expected())
    bases = sorted(root.glob("day=*/base_0000004_v*"))
    assert len(bases) == 3
    for base in bases:
        _assert_hive_layout(base)
        assert read_footer_rows(base) == sum(1 for r in history.expected() if r[3] in str(base))
    assert _rows(root) == history.expected()
    cleaned = run_lakectl("clean", root, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    assert _rows(root) == history.expected()


def read_footer_rows(directory: Path) -> int:
    return sum(orc.ORCFile(str(p)).nrows for p in directory.glob("bucket_*"))


@pytest.mark.parametrize("point", [*failpoints_of(Operation.COMPACT), "compact.after_status",
                                   "compact.before_markers"])  # fmt: skip
def test_stopped_compaction_reads_the_same_and_a_rerun_finishes(history, tmp_path, point) -> None:
    root = _copy(history, tmp_path)
    killed = run_lakectl_until_crash(
        "compact", root, "--major", "--engine", "arrow", failpoint=point
    )
    assert killed.code == 137
    assert _rows(root) == history.expected()
    committed = point == "compact.after_commit"
    rerun = run_lakectl("compact", root, "--major", "--engine", "arrow", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json["committed"] is not committed
    cleaned = run_lakectl("clean", root, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    assert _rows(root) == history.expected()
    assert list((root / "_lakectl" / "staging").glob("*")) == []
    for part in root.glob("day=*"):
        assert [d.name for d in part.iterdir()] == [next(part.glob("base_*")).name]


def test_a_killed_process_without_java_leaves_the_table_readable(history, tmp_path) -> None:
    root = _copy(history, tmp_path)
    no_java = tmp_path / "bin"
    no_java.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env.update(PATH=str(no_java), PYTHONPATH=str(REPO))
    command = [
        sys.executable,
        "-m",
        "lakectl",
        "compact",
        str(root),
        "--major",
        "--engine",
        "arrow",
        "--verbose",
    ]
    killed = subprocess.run(
        command,
        env={**env, "LAKECTL_FAILPOINTS": "compact.before_markers=crash"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 137 or killed.returncode < 0, killed.stderr[-2000:]
    assert _rows(root) == history.expected()
    listed = run_lakectl("compactions", root, "--json").json["compactions"]
    assert {e["state"] for e in listed} == {"failed"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "engine: arrow (asked for)" in done.stderr
    assert _rows(root) == history.expected()


def test_what_the_arrow_engine_cannot_write_is_refused_with_the_reason() -> None:
    schema = Schema(
        (Column("id", "bigint"), Column("at", "timestamp_ntz"), Column("day", "string"))
    )
    phrase = unsafe_type(schema)
    assert phrase == "column at has type timestamp_ntz"
    with pytest.raises(UsageError, match=r"column at has type timestamp_ntz") as refused:
        choose_engine("arrow", work_bytes=1, meta=None, arrow_unsupported=phrase)
    assert "--engine spark" in (refused.value.hint or "")
    assert (
        choose_engine("auto", work_bytes=1, meta=None, arrow_unsupported=phrase).engine == "spark"
    )


def test_auto_picks_arrow_for_a_small_compaction(history, tmp_path) -> None:
    root = _copy(history, tmp_path)
    done = run_lakectl("compact", root, "--minor", "--engine", "auto", "--json")
    assert done.code == 0, done.err
    assert done.json["engine"] == "arrow"
    assert done.json["engine_reason"].startswith("auto: ")
    _assert_every_version(history, root)


def test_a_file_holding_events_of_two_buckets_is_split_by_their_bucket_field(
    history, tmp_path
) -> None:
    """Events go to the file of the bucket they name, in identity order, as Spark's rewrite
    writes them (one file per bucket field)."""
    store = history.table.context.table(history.table.location)
    meta = store.read_state().metadata
    schema = event_schema(meta.data_schema)
    buckets = [1 << 29 | (b << 16) for b in (1, 0, 1, 0)]
    events = pa.table(
        {
            "operation": pa.array([0] * 4, pa.int32()),
            "originalTransaction": pa.array([1, 1, 2, 2], pa.int64()),
            "bucket": pa.array(buckets, pa.int32()),
            "rowId": pa.array([0, 0, 1, 1], pa.int64()),
            "currentTransaction": pa.array([1, 1, 2, 2], pa.int64()),
            "row": pa.array(
                [{"id": i, "name": f"r{i}", "qty": i} for i in range(4)], schema.field("row").type
            ),
        },
        schema=schema,
    )
    source = tmp_path / "in"
    source.mkdir()
    write_event_file(store.storage, str(source / "bucket_00000"), events, meta)
    out = tmp_path / "out" / "delta_0000001_0000002"
    compactor = BucketCompactor(
        store.storage, meta.data_schema, ValidWriteIds(2, frozenset()), key="id", compression="ZLIB"
    )
    group = BucketGroup("", 0, (), (str(source / "bucket_00000"),), (), str(out), 1, INSERTS)
    merged = compact_groups(compactor, str(tmp_path), [group])
    assert merged.rows == 4 and merged.dirs == {"out/delta_0000001_0000002"}
    got = {p.name: orc.ORCFile(str(p)).read().column("row").to_pylist() for p in out.iterdir()}
    assert got == {
        "bucket_00000": [{"id": 1, "name": "r1", "qty": 1}, {"id": 3, "name": "r3", "qty": 3}],
        "bucket_00001": [{"id": 0, "name": "r0", "qty": 0}, {"id": 2, "name": "r2", "qty": 2}],
    }
    assert all(b"hive.acid.key.index" in orc.ORCFile(str(p)).metadata for p in out.iterdir())


@pytest.mark.parametrize("kind", ["--minor", "--major"])
def test_a_damaged_input_file_is_refused_naming_it_and_nothing_changes(
    history, tmp_path, kind
) -> None:
    root = _copy(history, tmp_path)
    (damaged,) = root.glob("day=d1/delta_0000002_0000002_0000/bucket_*")
    damaged.write_bytes(damaged.read_bytes()[:-40] + b"\xde\xad" * 20)
    before = _fingerprint(root)
    run = run_lakectl("compact", root, kind, "--engine", "arrow", "--json")
    assert run.code == 76, (run.code, run.err)
    assert "Traceback" not in run.err
    error = run.json["error"]
    assert error["message"].startswith(f"ORC file file://{damaged} is damaged or truncated (")
    after = _fingerprint(root)
    (status,) = {name for name in after if name not in before}
    assert status.startswith("_lakectl/compactions/")
    assert json.loads((root / status).read_text())["state"] == "failed"
    assert {name: data for name, data in after.items() if name != status} == before


def _fingerprint(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_files_written_before_an_alter_are_compacted_into_the_new_schema(tmp_path) -> None:
    history = build_history(tmp_path / "t")
    history.table.alter("note string default 'old'")
    history.write({50: ("x", 1, "d0"), 7: ("y", 3, "d1")}, [3])
    for kind in ("--minor", "--major"):
        done = run_lakectl("compact", history.root, kind, "--engine", "arrow", "--json")
        assert done.code == 0, done.err
        _assert_every_version(history, history.root)
    notes = lakectl.open_table(str(history.root)).scan(engine="arrow").to_arrow().to_pylist()
    assert {r["id"]: r["note"] for r in notes if r["id"] in (8, 7, 50)} == {
        8: "old",
        7: None,
        50: None,
    }
    for base in history.root.glob("day=*/base_*"):
        for path in base.glob("bucket_*"):
            row = orc.ORCFile(str(path)).schema.field("row").type
            assert [row.field(i).name for i in range(row.num_fields)] == [
                "id",
                "name",
                "qty",
                "note",
            ]


def test_a_load_committing_during_the_compaction_still_applies(tmp_path, monkeypatch) -> None:
    """A compaction conflicts with nothing: a delete committed between its plan and its commit
    names rows by identity, which the new base keeps."""
    history = build_history(tmp_path / "t")
    reached, go = tmp_path / "reached", tmp_path / "go"
    monkeypatch.setenv(
        "LAKECTL_FAILPOINTS",
        f"compact.before_commit=touch:{reached},compact.before_commit=wait:{go}",
    )
    results: list[Any] = []
    compaction = threading.Thread(
        target=lambda: results.append(
            run_lakectl("compact", history.root, "--major", "--engine", "arrow", "--json")
        )
    )
    compaction.start()
    try:
        deadline = time.time() + 60
        while not reached.exists() and compaction.is_alive() and time.time() < deadline:
            time.sleep(0.05)
        assert reached.exists(), results
        history.write({5: ("late", 9, "d2")}, [4, 6])
    finally:
        go.touch()
        compaction.join(60)
    (done,) = results
    assert done.code == 0, done.err
    records = log_on_disk(store_at(history.root))
    (compacted,) = [r for r in records if r["operation"] == "compact"]
    between = [r for r in records if compacted["read_seq"] < r["seq"] < compacted["seq"]]
    assert [r["operation"] for r in between] == ["cdc"]
    assert _rows(history.root) == history.expected()
    cleaned = run_lakectl("clean", history.root, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    assert _rows(history.root) == history.expected()
