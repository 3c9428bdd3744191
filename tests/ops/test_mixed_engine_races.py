"""An Arrow writer racing a Spark writer on one table: conflicts are found exactly as between two
writers of one engine.

Each race holds the first writer just before its commit (failpoint ``<writer>.before_commit``,
in a thread of this process), commits the second writer meanwhile, then lets the first go on.
By the rule (:func:`lakectl.table.log.find_conflict`), a delete, update or upsert that read a
partition another writer changed since fails with the conflict error (exit 75) and leaves nothing
visible; a restore fails for a change anywhere; an append conflicts with nothing. The rows are
then the serial outcome of the writers that committed, and the failed one run again gives the
serial outcome of both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.errors import CommitConflictError

SCHEMA = "id bigint, qty int, day string"


class Held:
    """A writer run in a thread and held at a failpoint until the ``with`` block ends."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None


@contextmanager
def held_at(
    point: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, writer: Callable[[], Any]
) -> Iterator[Held]:
    name = f"{point}.{len(list(tmp.glob('*.reached')))}"  # each hold its own files
    reached, go = tmp / f"{name}.reached", tmp / f"{name}.go"
    monkeypatch.setenv("LAKECTL_FAILPOINTS", f"{point}=touch:{reached},{point}=wait:{go}")
    held = Held()

    def run() -> None:
        try:
            held.result = writer()
        except BaseException as exc:  # handed to the test
            held.error = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.time() + 120
    while not reached.exists():
        assert thread.is_alive() and time.time() < deadline, held.error
        time.sleep(0.02)
    try:
        yield held
    finally:
        go.touch()
        thread.join(120)
        monkeypatch.delenv("LAKECTL_FAILPOINTS")


def _csv(path: Path, rows: list[tuple[int, int, str]]) -> str:
    path.write_text("id,qty,day\n" + "".join(f"{i},{q},{d}\n" for i, q, d in rows))
    return str(path)


def _table(tmp: Path, spark: Any) -> lakectl.Table:
    table = lakectl.create_table(
        str(tmp / "t"), schema=SCHEMA, primary_key="id", partition_by="day", spark=spark
    )
    rows = [(i, i, f"d{i % 2}") for i in range(1, 9)]
    table.load(_csv(tmp / "base.csv", rows), mode="append", engine="arrow")
    return table


def _rows(table: lakectl.Table) -> list[tuple[int, int, str]]:
    got = table.refresh().scan(engine="arrow").to_arrow().to_pylist()
    return sorted((r["id"], r["qty"], r["day"]) for r in got)


def test_arrow_delete_and_restore_racing_spark_appends(spark, tmp_path, monkeypatch) -> None:
    table = _table(tmp_path, spark)
    held = lakectl.open_table(str(tmp_path / "t"))  # the held writer's own handle
    base = _rows(table)
    new = [(20, 20, "d0"), (21, 21, "d1")]
    appended = sorted(base + new)

    # An Arrow delete of partition d0 while a Spark append commits to it: the delete conflicts.
    def delete_it() -> Any:
        return held.delete("qty > 3 AND day = 'd0'", engine="arrow")

    with held_at("dml.before_commit", tmp_path, monkeypatch, delete_it) as delete:
        done = table.load(_csv(tmp_path / "a.csv", new), mode="append", engine="spark")
        assert done.engine == "spark"
    assert isinstance(delete.error, CommitConflictError), delete.error
    assert delete.error.exit_code == 75 and "append" in delete.error.message
    assert _rows(table) == appended
    # Run again, it reads the new state: the serial outcome, the appended row 20 deleted too.
    assert table.delete("qty > 3 AND day = 'd0'", engine="arrow").deleted == 4
    after_delete = [r for r in appended if not (r[1] > 3 and r[2] == "d0")]
    assert _rows(table) == after_delete

    # An Arrow update of d1 while a Spark append commits to d0 only: both commit.
    def update_it() -> Any:
        return held.update_rows("qty = qty + 100", "day = 'd1'", engine="arrow")

    with held_at("dml.before_commit", tmp_path, monkeypatch, update_it) as update:
        assert update.result is None  # held before its commit
        table.load(_csv(tmp_path / "b.csv", [(30, 30, "d0")]), mode="append", engine="spark")
    assert update.error is None and update.result.updated == 5
    both = sorted(
        [(i, q + 100 if d == "d1" else q, d) for i, q, d in after_delete] + [(30, 30, "d0")]
    )
    assert _rows(table) == both

    # An Arrow restore reads the whole table: any data change meanwhile is a conflict.
    version = table.refresh().version

    def restore_it() -> Any:
        return held.restore(version=1, engine="arrow")

    with held_at("restore.before_commit", tmp_path, monkeypatch, restore_it) as restore:
        table.load(_csv(tmp_path / "c.csv", [(40, 40, "d1")]), mode="append", engine="spark")
    assert isinstance(restore.error, CommitConflictError), restore.error
    assert _rows(table) == sorted([*both, (40, 40, "d1")])
    assert table.refresh().version == version + 2  # the restore's write id was aborted
    table.restore(version=1, engine="arrow")
    assert _rows(table) == base


def test_spark_delete_racing_an_arrow_load(spark, tmp_path, monkeypatch) -> None:
    table = _table(tmp_path, spark)
    held = lakectl.open_table(str(tmp_path / "t"), spark=spark)
    base = _rows(table)
    change = [(2, 50, "d0"), (9, 9, "d1")]

    # A Spark delete of d0 while an Arrow upsert commits to it: the delete conflicts.
    def delete_it() -> Any:
        return held.delete("qty < 5 AND day = 'd0'", engine="spark")

    with held_at("dml.before_commit", tmp_path, monkeypatch, delete_it) as delete:
        done = table.load(_csv(tmp_path / "u.csv", change), mode="upsert", engine="arrow")
        assert done.engine == "arrow" and (done.updated, done.inserted) == (1, 1)
    assert isinstance(delete.error, CommitConflictError), delete.error
    upserted = sorted([r for r in base if r[0] != 2] + change)
    assert _rows(table) == upserted
    # Run again: the upserted row 2 (qty 50) stays, row 4 goes.
    assert table.delete("qty < 5 AND day = 'd0'", engine="spark").deleted == 1
    assert _rows(table) == [r for r in upserted if not (r[1] < 5 and r[2] == "d0")]
