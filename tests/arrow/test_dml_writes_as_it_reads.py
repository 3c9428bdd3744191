"""The Arrow engine's DELETE and UPDATE write each partition's changes as soon as that partition
is read (a partition per CPU read ahead), so that memory holds a few partitions' changes, not
the table's: the first partition's files are written before the last partition is read. An
UPDATE that sets a partition column may move rows to a partition read later: it reads every
partition before it writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import lakectl
from lakectl.arrow import acid_writer, row_changes
from tests.support.arrow_loads import load_rows

SCHEMA = "id bigint, qty int, day string"
DAYS = [f"d{n}" for n in range(6)]


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """What the statement does, in order: ("read", partition) as a partition's read starts,
    ("write", partition) as a file is written in it. Two CPUs: two partitions read ahead."""
    seen: list[tuple[str, str]] = []
    read_partition = row_changes.statement_changes
    write_file = acid_writer._write_file

    def read(spec, plan, statement):  # type: ignore[no-untyped-def]
        seen.append(("read", plan.relative))
        return read_partition(spec, plan, statement)

    def write(storage, root, rel_dir, bucket, events, meta):  # type: ignore[no-untyped-def]
        seen.append(("write", rel_dir.split("/")[0]))
        return write_file(storage, root, rel_dir, bucket, events, meta)

    monkeypatch.setattr(row_changes, "statement_changes", read)
    monkeypatch.setattr(acid_writer, "_write_file", write)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return seen


def _table(tmp_path: Path) -> lakectl.Table:
    table = lakectl.create_table(str(tmp_path / "t"), schema=SCHEMA, partition_by="day")
    load_rows(table, [(n, n, DAYS[n % len(DAYS)]) for n in range(60)], SCHEMA, mode="append")
    return table


def _rows(table: lakectl.Table) -> list[tuple[int, int, str]]:
    rows = table.scan(engine="arrow").to_arrow().to_pylist()
    return sorted((r["id"], r["qty"], r["day"]) for r in rows)


def test_a_delete_writes_the_first_partitions_events_before_it_reads_the_last_partition(
    tmp_path: Path, steps: list[tuple[str, str]]
) -> None:
    table = _table(tmp_path)
    steps.clear()
    done = table.delete("qty < 12", engine="arrow")
    assert done.deleted == 12
    reads = [p for step, p in steps if step == "read"]
    writes = [p for step, p in steps if step == "write"]
    assert reads == [f"day={d}" for d in DAYS]
    assert sorted(writes) == [f"day={d}" for d in DAYS]  # one delete events file each
    assert steps.index(("write", "day=d0")) < steps.index(("read", "day=d5"))
    assert steps.index(("write", "day=d0")) < steps.index(("read", "day=d4"))
    assert [r[0] for r in _rows(table)] == list(range(12, 60))


def test_an_update_writes_as_it_reads_unless_it_moves_rows_between_partitions(
    tmp_path: Path, steps: list[tuple[str, str]]
) -> None:
    table = _table(tmp_path)
    steps.clear()
    done = table.update_rows("qty = qty + 1000", "id < 30", engine="arrow")
    assert done.updated == 30
    first_write = next(at for at, (step, _) in enumerate(steps) if step == "write")
    assert steps[first_write] == ("write", "day=d0")
    assert first_write < steps.index(("read", "day=d5"))
    steps.clear()
    moved = table.update_rows("day = 'd0'", "id = 59", engine="arrow")  # d5 -> d0
    assert moved.updated == 1
    first_write = next(at for at, (step, _) in enumerate(steps) if step == "write")
    assert all(step == "read" for step, _ in steps[:first_write])
    assert len(steps[:first_write]) == len(DAYS)
    rows = _rows(table)
    assert rows[0] == (0, 1000, "d0") and rows[29] == (29, 1029, "d5")
    assert rows[59] == (59, 59, "d0")
