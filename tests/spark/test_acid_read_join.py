"""The merge-on-read joins: delete events against insert events (one long key plus the exact
condition), and partition values attached per file."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from lakectl.spark import acid_read
from lakectl.spark.file_partitions import (
    directory_values,
    files_frame,
    fits_broadcast,
    reported_spellings,
    with_file_path,
    with_partition_values,
)
from lakectl.storage.fs import Storage
from lakectl.table.schema import Column, Schema
from lakectl.table.validity import ValidWriteIds

PARTITIONS = Schema((Column("p", "string"),))
SPEC = acid_read.ReadSpec(
    Storage("file"), "/t", Schema((Column("v", "string"),)), PARTITIONS, ValidWriteIds(9)
)
EVENT_DDL = "p string, originalTransaction bigint, bucket int, rowId bigint"

# Rows with equal identities in different partitions (one NULL), transactions, buckets.
INSERTS = [
    ("a", 1, 0, 0, "a/1/0/0"),
    (None, 1, 0, 0, "null/1/0/0"),
    ("b", 1, 0, 0, "b/1/0/0"),
    ("a", 2, 0, 0, "a/2/0/0"),
    ("a", 1, 1, 0, "a/1/1/0"),
    ("a", 1, 0, 1, "a/1/0/1"),
]
ALL = {row[-1] for row in INSERTS}


def _weak_key(columns):
    """A key under which every event collides: only the exact condition tells them apart."""
    return columns[-1] * 0


def _live(spark, deletes, key=None):
    inserts = spark.createDataFrame(INSERTS, f"{EVENT_DDL}, v string")
    from pyspark.sql import functions as F

    # Broadcast, as acid_read.delete_events hints for small delete deltas.
    frame = F.broadcast(spark.createDataFrame(deletes, EVENT_DDL))
    kwargs = {} if key is None else {"key": key}
    return acid_read._minus_deletes(inserts, frame, SPEC, **kwargs)


@pytest.mark.parametrize("key", [None, _weak_key], ids=["xxhash64", "colliding"])
@pytest.mark.parametrize(
    ("deletes", "gone"),
    [
        ([("a", 1, 0, 0)], {"a/1/0/0"}),
        ([(None, 1, 0, 0)], {"null/1/0/0"}),
        # Matching identity, other partition / no such partition / other transaction.
        ([("c", 1, 0, 0), (None, 2, 0, 0), ("b", 3, 0, 0)], set()),
        ([("a", 1, 1, 0), ("a", 1, 0, 1), ("b", 1, 0, 0)], {"a/1/1/0", "a/1/0/1", "b/1/0/0"}),
    ],
)
def test_delete_events_remove_exactly_their_rows(spark, deletes, gone, key):
    rows = {r.v for r in _live(spark, deletes, key).collect()}
    assert rows == ALL - gone


def test_anti_join_has_one_long_key_and_the_exact_condition(spark):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _live(spark, [("a", 1, 0, 0)]).explain()
    plan = out.getvalue()
    join = next(line for line in plan.splitlines() if "LeftAnti" in line)
    assert "BroadcastHashJoin [xxhash64(" in join
    keys = join.split("BroadcastHashJoin ", 1)[1].split("], [", 1)[0]
    assert keys.count("xxhash64(") == 1 and "," in keys  # one key over several columns
    assert "<= struct(" in join and ">= struct(" in join


def test_reported_spellings():
    assert reported_spellings("file:///a/b%20c") == ["file:///a/b%20c", "file:/a/b%20c"]
    assert reported_spellings("s3a://bucket/k") == ["s3a://bucket/k"]
    assert reported_spellings("hdfs://nn:8020/a") == ["hdfs://nn:8020/a"]


def test_directory_values_unescape_and_default_partition():
    path = "/t/p=x%2Fy/q=__HIVE_DEFAULT_PARTITION__/delta_1_1_0/k=3/bucket_00000"
    assert directory_values("/t", path, 2) == ["x/y", None]


def test_fits_broadcast_follows_the_threshold(spark):
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, "1m")
        assert fits_broadcast(spark, 1000) and not fits_broadcast(spark, 2 << 20)
        spark.conf.set(key, "-1")
        assert not fits_broadcast(spark, 1)
    finally:
        spark.conf.set(key, before)


@pytest.fixture
def partitioned_files(spark, tmp_path: Path) -> dict[str, list[str | None]]:
    """Plain ORC files in an escaped and a default partition: URL -> directory values."""
    root = tmp_path / "t w"  # a space: URI encoding differs from the path
    values: dict[str, list[str | None]] = {}
    for n, name in enumerate(["p=x%2Fy%25", "p=__HIVE_DEFAULT_PARTITION__"]):
        target = root / name
        spark.range(n * 10, n * 10 + 3).coalesce(1).write.orc(str(target))
        for f in target.glob("*.orc"):
            values[f"file://{f}"] = directory_values(str(root), str(f), 1)
    return values


def _values(spark, files, known, parsed="parsed"):
    from pyspark.sql import functions as F

    frame = spark.read.orc(sorted(files))
    mapped = files_frame(spark, frame, known, PARTITIONS)
    out = with_partition_values(
        with_file_path(frame), mapped, PARTITIONS, lambda name, path: F.lit(parsed)
    )
    return sorted((r.id, r.p) for r in out.collect())


def test_partition_values_per_file(spark, partitioned_files):
    got = _values(spark, partitioned_files, partitioned_files)
    assert got == [(0, "x/y%"), (1, "x/y%"), (2, "x/y%"), (10, None), (11, None), (12, None)]


def test_files_without_known_values_fall_back_to_the_per_row_parse(spark, partitioned_files):
    escaped = {u: v for u, v in partitioned_files.items() if v != [None]}
    got = _values(spark, partitioned_files, escaped)
    assert got == [
        (0, "x/y%"),
        (1, "x/y%"),
        (2, "x/y%"),
        (10, "parsed"),
        (11, "parsed"),
        (12, "parsed"),
    ]
