"""Differential test against an independent reader: Hive 2.3.10's own ACID reader
(``OrcInputFormat`` / ``OrcRawRecordMerger`` and ``AcidUtils.getAcidState``, from pyspark's
``hive-exec`` jar, see :mod:`hive23_reader`) must read, partition by partition, exactly the rows
lakectl reads from the same directories: after appends, upserts, a CDC load with deletes, a
one-off delete and update, a materialize, a restore (rows written again plus delete events for
their originals, so some rows are deleted twice), a minor compaction (``delta_A_B`` and
``delete_delta_A_B``) and an added column without a default (Hive maps older files by position
and reads NULL, as lakectl does). Hive reads under the valid-transaction list lakectl's state
gives for the newest version and for each earlier one (a list that excludes the newer write ids:
time travel).

No version compared has a Type 7 statement installed but not yet materialized: Hive knows
nothing of those. Not covered, because Hive 2.3 predates them: major compaction's ``base_N_vW``
directories and list bucketing (Hive 3 layouts), and "original" (non-ACID) files.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.table.validity import ValidWriteIds
from tests.support.hive23_reader import hive_txn_list, read_partition, txn_list_is_understood

SCHEMA = "id bigint, name string, qty int, day string"


def _frame(spark: Any, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    return spark.createDataFrame(rows, schema)


@pytest.fixture(scope="module")
def history(spark, tmp_path_factory) -> tuple[lakectl.Table, Path, dict[str, int]]:
    """One partitioned table through every kind of write; the version each step made."""
    root = tmp_path_factory.mktemp("hive23") / "t"
    table = lakectl.create_table(str(root), schema=SCHEMA, primary_key="id", partition_by="day")
    step: dict[str, int] = {}
    table.load(_frame(spark, [(i, f"n{i}", i % 5, f"d{i % 3}") for i in range(40)]), mode="append")
    step["append"] = table.version
    table.load(_frame(spark, [(i, f"m{i}", 7, f"d{i % 3}") for i in range(30, 50)]), mode="upsert")
    step["upsert"] = table.version
    cdc = [(i, f"c{i}", 3, f"d{i % 3}", "D" if i % 2 else "U") for i in range(20, 30)]
    cdc += [(60, "c60", 1, "d0", "I")]
    table.load(_frame(spark, cdc, SCHEMA + ", op string"), mode="cdc", op_column="op")
    step["cdc"] = table.version
    table.delete("qty = 0")
    step["delete"] = table.version
    table.update_rows("qty = qty + 100", "day = 'd1'")
    step["update"] = table.version
    statements = root.parent / "fix.updates"
    statements.write_text("-- time=2020-01-01\nUPDATE t SET name = 'fixed' WHERE id < 8;\n")
    table.apply_updates(str(statements))
    table.materialize(until="2021-01-01")
    step["materialize"] = table.version
    table.restore(version=step["cdc"])
    step["restore"] = table.version
    table.compact("minor")  # no new version: delta_1_N and delete_delta_1_N replace the deltas
    table.alter("note string")
    table.load(
        _frame(
            spark,
            [(i, f"e{i}", 2, f"d{i % 4}", f"x{i}") for i in range(45, 52)],
            SCHEMA + ", note string",
        )
    )
    step["evolved"] = table.version
    return table, root, step


def _data_columns(table: lakectl.Table) -> list[tuple[str, str]]:
    partitioned = set(table.partition_by)
    return [(c.name, c.type) for c in table.schema.columns if c.name not in partitioned]


def _lakectl_partitions(table: lakectl.Table, **read: Any) -> dict[str, list[tuple[Any, ...]]]:
    names = [name for name, _ in _data_columns(table)]
    grouped: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in (
        table.scan(**read).to_arrow().to_pylist()
    ):  # versions before the alter lack ``note``:
        grouped[f"day={row['day']}"].append(tuple(row.get(n) for n in names))  # NULL in Hive
    return {part: sorted(rows, key=repr) for part, rows in grouped.items()}


def _assert_hive_reads_as_lakectl(spark, table, root, valid: ValidWriteIds, **read: Any) -> None:
    txn_list = hive_txn_list(spark, valid)
    assert txn_list_is_understood(spark, txn_list, valid)
    columns = _data_columns(table)
    expected = _lakectl_partitions(table, **read)
    partitions = sorted(p.name for p in root.glob("day=*"))
    assert set(expected) <= set(partitions)
    for part in partitions:
        got = read_partition(spark, f"file://{root / part}", columns, txn_list)
        assert got == expected.get(part, []), (part, txn_list)


def _state(table: lakectl.Table, root: Path) -> Any:
    return table.context.table(str(root)).read_state()


def _delete_events(directories: list[Path]) -> Counter[tuple[str, int, int, int]]:
    """How many delete events name each row of a partition (its directory, then the row id:
    originalTransaction, bucket, rowId; row ids are numbered per partition, as Hive's are)."""
    events: Counter[tuple[str, int, int, int]] = Counter()
    for directory in directories:
        for path in directory.glob("bucket_*"):
            keys = orc.ORCFile(str(path)).read(columns=["originalTransaction", "bucket", "rowId"])
            ids = zip(*(keys.column(i).to_pylist() for i in range(3)), strict=True)
            events.update((directory.parent.name, *row_id) for row_id in ids)
    return events


def test_the_history_made_the_layouts_under_test(history) -> None:
    table, root, step = history
    directories = list(root.glob("day=*/*delta_*"))
    names = {d.name for d in directories}
    compacted = f"delta_0000001_{step['restore']:07d}"  # the minor compaction's output
    assert compacted in names and f"delete_{compacted}" in names
    assert not any(n.startswith("base_") for n in names)
    per_write = [
        d for d in directories if d.name.startswith("delete_delta_") and d.name.count("_") == 4
    ]
    assert max(_delete_events(per_write).values()) == 2  # the restore deleted an original again
    assert step["evolved"] == table.version == _state(table, root).max_write_id


def test_hive_reads_the_latest_state_as_lakectl(spark, history) -> None:
    table, root, _ = history
    _assert_hive_reads_as_lakectl(spark, table, root, _state(table, root).valid_write_ids())


@pytest.mark.parametrize(
    "name", ["append", "upsert", "cdc", "delete", "update", "materialize", "restore"]
)
def test_hive_reads_each_earlier_version_as_lakectl(spark, history, name) -> None:
    table, root, step = history
    valid = _state(table, root).at_version(step[name]).valid_write_ids()
    assert valid.high_watermark == step[name] < table.version
    _assert_hive_reads_as_lakectl(spark, table, root, valid, version=step[name])
