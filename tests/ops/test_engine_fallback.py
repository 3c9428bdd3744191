"""The Arrow engine meeting a limit while it runs (a value its ORC writer cannot store, made here by
the test-only failpoint ``arrow.write``), for every writer that has an Arrow path.

Asked for by name (``engine="arrow"``) the limit is the error: exit 2 with the way out, and the
table as it was (its data files byte for byte, its log's records). Under ``auto`` the writer's
transaction aborts and the job runs again in Spark, whose reason says why, with the rows the
Arrow engine writes when nothing stops it.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.errors import ArrowEngineLimit
from lakectl.failpoints import arrow_limit_at
from tests.support.table_files import tree
from tests.support.table_logs import log_on_disk, store_at

SCHEMA = "id bigint, val string, part string"
POINT = "arrow.write"
STATEMENTS = "-- time=100\nUPDATE t SET val = concat(val, '!') WHERE part = 'b';\n"


def _csv(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A small table written without a JVM: two loads (deltas and a delete delta), an installed
    statement, and a landing directory with one file (read-only: tests copy it)."""
    tmp = tmp_path_factory.mktemp("fallback")
    root = tmp / "t"
    table = lakectl.create_table(str(root), schema=SCHEMA, primary_key="id", partition_by="part")
    rows = [f"{i},v{i},{'a' if i % 2 else 'b'}" for i in range(1, 13)]
    table.load(_csv(tmp / "a.csv", ["id,val,part", *rows]), effective_from=0, engine="arrow")
    cdc = ["op,id,val,part", "U,2,w2,b", "D,3,v3,a", "I,20,v20,a"]
    table.load(_csv(tmp / "b.csv", cdc), op_column="op", effective_from=0, engine="arrow")
    (tmp / "t.updates").write_text(STATEMENTS)
    table.apply_updates(str(tmp / "t.updates"))
    land = root.parent / "land"
    land.mkdir()
    _csv(land / "f0.csv", ["id,val,part", "30,v30,a", "4,w4,b"])
    return root


# Each writer with an Arrow path, as the Python API runs it (``land``: the landing directory).
WRITERS: dict[str, Callable[[lakectl.Table, str, Path], Any]] = {
    "load": lambda t, e, land: t.load(str(land / "f0.csv"), engine=e),
    "stream": lambda t, e, land: t.stream(
        str(land), mode="upsert", max_batches=1, trigger="100ms", compact=False, engine=e
    ),
    "delete": lambda t, e, land: t.delete("id = 4", engine=e),
    "update": lambda t, e, land: t.update_rows("val = 'z'", "part = 'a'", engine=e),
    "restore": lambda t, e, land: t.restore(version=1, engine=e),
    "compact-minor": lambda t, e, land: t.compact("minor", engine=e),
    "compact-major": lambda t, e, land: t.compact("major", engine=e),
    "materialize": lambda t, e, land: t.materialize(200, engine=e),
    "list-bucket": lambda t, e, land: t.list_bucket("id", keys=[2, 4], engine=e),
}
# The ones the Spark test reruns under auto (load, update and minor compaction share their
# fallback with a writer here: load's with stream, update's with delete).
IN_SPARK = ("stream", "delete", "restore", "compact-major", "materialize", "list-bucket")


def _copy(base: Path, tmp_path: Path) -> lakectl.Table:
    shutil.copytree(base.parent / "land", tmp_path / "land")
    shutil.copytree(base, tmp_path / "t")
    return lakectl.open_table(str(tmp_path / "t"))


def _data_files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not str(p.relative_to(root)).startswith("_lakectl")
    }


def _committed(root: Path) -> list[dict[str, Any]]:
    return log_on_disk(store_at(root))


def _rows(table: lakectl.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.scan(engine="arrow").to_arrow().to_pylist())


@pytest.mark.parametrize("writer", list(WRITERS))
def test_the_limit_asked_for_by_name_is_the_error_and_changes_nothing(writer, base, tmp_path):
    table = _copy(base, tmp_path)
    root = tmp_path / "t"
    files, log, rows = _data_files(root), _committed(root), _rows(table)
    with arrow_limit_at(POINT), pytest.raises(ArrowEngineLimit) as raised:
        WRITERS[writer](table, "arrow", tmp_path / "land")
    assert f"failpoint {POINT}" in raised.value.message
    assert _data_files(root) == files
    assert _committed(root) == log
    assert _rows(table.refresh()) == rows
    WRITERS[writer](table, "arrow", tmp_path / "land")  # nothing was left in the way
    assert _committed(root) != log


def test_the_cli_says_what_stopped_the_arrow_engine(base, tmp_path, lakectl_cli):
    _copy(base, tmp_path)
    with arrow_limit_at(POINT):
        done = lakectl_cli("delete", tmp_path / "t", "--where", "id = 4", "--engine", "arrow")
    assert done.code == 2, done.err
    assert f"failpoint {POINT}" in done.err and "hint: use --engine spark" in done.err
    assert "Traceback" not in done.err


def test_auto_hands_the_job_to_spark(spark, base, tmp_path) -> None:
    reason = f"auto: the Arrow engine cannot: failpoint {POINT} (a test's simulated limit)"
    for writer in IN_SPARK:
        expected = _copy(base, tmp_path / f"{writer}-arrow")
        WRITERS[writer](expected, "arrow", tmp_path / f"{writer}-arrow" / "land")
        _copy(base, tmp_path / writer)
        table = lakectl.open_table(str(tmp_path / writer / "t"), spark=spark)
        with arrow_limit_at(POINT):
            done = WRITERS[writer](table, "auto", tmp_path / writer / "land")
        if writer == "stream":  # the stream's engine is the one asked for; its batches say
            assert done.status.engines == {"spark": 1}
            assert (done.status.fallback_reason, done.engine_reason) == (reason, reason)
            assert done.to_dict()["status"]["fallback_reason"] == reason
        else:
            assert (done.engine, done.engine_reason) == ("spark", reason), writer
        assert _rows(table.refresh()) == _rows(expected.refresh()), writer


def test_auto_loads_into_the_table_its_arrow_attempt_created(spark, base, tmp_path) -> None:
    """The Arrow attempt removes the table it created when it gives up; Spark creates it again
    and loads it: one creation in the log."""
    source = _csv(tmp_path / "new.csv", ["id,val,part", "1,v1,a", "2,v2,b"])
    table = lakectl.open_table(str(tmp_path / "new"), spark=spark)
    with arrow_limit_at(POINT):
        done = table.load(source, create=True, primary_key="id", engine="auto")
    assert (done.engine, done.created_table, done.inserted) == ("spark", True, 2)
    assert _rows(table.refresh()) == [(1, "v1", "a"), (2, "v2", "b")]
    assert [r["operation"] for r in _committed(tmp_path / "new")] == ["create", "upsert"]


def _create_load(table: Path, source: str, engine: str, lakectl_cli: Callable[..., Any]) -> Any:
    return lakectl_cli(
        "load", table, source, "--create", "--primary-key", "id", "--partition-by", "part",
        "--engine", engine, "--json",
    )  # fmt: skip


def test_a_create_the_arrow_engine_gives_up_on_leaves_nothing_behind(tmp_path, lakectl_cli):
    source = _csv(tmp_path / "new.csv", ["id,val,part", "1,v1,a", "2,v2,b"])
    kept = tmp_path / "kept"  # an empty directory that was there before: it stays
    kept.mkdir()
    for table in (tmp_path / "new", kept):
        with arrow_limit_at(POINT):
            failed = _create_load(table, source, "arrow", lakectl_cli)
        assert failed.code == 2 and f"failpoint {POINT}" in failed.err, failed.err
    assert not (tmp_path / "new").exists()
    assert kept.is_dir() and tree(kept) == {}
    for table in (tmp_path / "new", kept):  # nothing was left in the way of a new --create
        done = _create_load(table, source, "arrow", lakectl_cli)
        assert done.code == 0, done.err
        assert (done.json["created_table"], done.json["counts"]["inserted"]) == (True, 2)
    assert _rows(lakectl.open_table(str(kept))) == [(1, "v1", "a"), (2, "v2", "b")]


def test_a_create_spark_fails_to_load_leaves_nothing_behind(spark, tmp_path, lakectl_cli):
    source = _csv(tmp_path / "new.csv", ["id,val,part", "1,v1,a", "2,v2,b"])
    # Any error after the table was created (here one raised just before the rows are written).
    with arrow_limit_at("load.before_write"):
        failed = _create_load(tmp_path / "new", source, "spark", lakectl_cli)
    assert failed.code == 2 and "failpoint load.before_write" in failed.err, failed.err
    assert not (tmp_path / "new").exists()
