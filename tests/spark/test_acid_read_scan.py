"""Spark's ORC scan of event files that the change feed still reads with (lakectl.spark.acid_read):
partition values attached per file, file lists handed to the JVM at once, delete event rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.spark import acid_read, snapshot_rows
from lakectl.spark.file_partitions import (
    PARTITION_KEY_COLUMN,
    KnownFile,
    directory_values,
    files_frame,
    input_files,
    jvm_strings,
    partition_key,
    reported_spellings,
    with_file_path,
    with_partition_values,
)
from lakectl.storage.fs import Storage
from lakectl.table.schema import Column, Schema
from lakectl.table.validity import ValidWriteIds

PARTITIONS = Schema((Column("p", "string"),))


def test_reported_spellings():
    assert reported_spellings("file:///a/b%20c") == ["file:///a/b%20c", "file:/a/b%20c"]
    assert reported_spellings("s3a://bucket/k") == ["s3a://bucket/k"]
    assert reported_spellings("hdfs://nn:8020/a") == ["hdfs://nn:8020/a"]


def test_directory_values_unescape_and_default_partition():
    path = "/t/p=x%2Fy/q=__HIVE_DEFAULT_PARTITION__/delta_1_1_0/k=3/bucket_00000"
    assert directory_values("/t", path, 2) == ["x/y", None]


@pytest.fixture
def partitioned_files(spark, tmp_path: Path) -> dict[str, KnownFile]:
    """Plain ORC files in an escaped and a default partition: URL -> size, directory values.
    The two files have the same size (same row count and shape)."""
    root = tmp_path / "t w"  # a space: URI encoding differs from the path
    known: dict[str, KnownFile] = {}
    for n, name in enumerate(["p=x%2Fy%25", "p=__HIVE_DEFAULT_PARTITION__"]):
        target = root / name
        spark.range(n * 10, n * 10 + 3).coalesce(1).write.orc(str(target))
        for f in target.glob("*.orc"):
            known[f"file://{f}"] = KnownFile(
                f.stat().st_size, directory_values(str(root), str(f), 1)
            )
    return known


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


def test_partition_key_is_the_same_for_known_and_parsed_values(spark, partitioned_files):
    """A file's key comes from the files frame, or is hashed per row for a file of unknown
    values: equal values (null included) give equal keys either way."""
    from pyspark.sql import functions as F

    frame = spark.read.orc(sorted(partitioned_files))

    def parse(name, path):  # the values of the files' directories, as acid_read parses them
        default = path.contains("p=__HIVE_DEFAULT_PARTITION__")
        return F.when(default, F.lit(None).cast("string")).otherwise(F.lit("x/y%"))

    keys = {}
    for known in (partitioned_files, {}):
        mapped = files_frame(spark, frame, known, PARTITIONS)
        out = with_partition_values(with_file_path(frame), mapped, PARTITIONS, parse)
        keys[bool(known)] = {(r.id, r.p, r[PARTITION_KEY_COLUMN]) for r in out.collect()}
    assert keys[True] == keys[False]
    assert len({k for _, _, k in keys[True]}) == 2
    expected = spark.createDataFrame([("x/y%",), (None,)], "p string")
    hashed = expected.select("p", partition_key([F.col("p")]).alias("k")).collect()
    hashes = {r.p: r.k for r in hashed}
    assert all(k == hashes[p] for _, p, k in keys[True])


def test_unpartitioned_files_get_a_constant_partition_key(spark, partitioned_files):
    frame = spark.read.orc(sorted(partitioned_files))
    none = Schema(())
    out = with_partition_values(
        with_file_path(frame), files_frame(spark, frame, {}, none), none, lambda n, p: None
    )
    assert {r[PARTITION_KEY_COLUMN] for r in out.collect()} == {0}


def test_files_without_known_values_fall_back_to_the_per_row_parse(spark, partitioned_files):
    escaped = {u: k for u, k in partitioned_files.items() if k.values != [None]}
    got = _values(spark, partitioned_files, escaped)
    assert got == [
        (0, "x/y%"),
        (1, "x/y%"),
        (2, "x/y%"),
        (10, "parsed"),
        (11, "parsed"),
        (12, "parsed"),
    ]


def _identical_files(spark, root: Path, count: int) -> dict[str, KnownFile]:
    """``count`` partitions holding byte-identical files (same size): URL -> what is known."""
    known: dict[str, KnownFile] = {}
    for n in range(count):
        target = root / f"p=v{n}"
        spark.range(3).coalesce(1).write.orc(str(target))
        for f in target.glob("*.orc"):
            known[f"file://{f}"] = KnownFile(
                f.stat().st_size, directory_values(str(root), str(f), 1)
            )
    assert len({k.size for k in known.values()}) == 1
    return known


@pytest.mark.parametrize("count", [2, 6])
def test_files_of_one_size_keep_their_own_values(spark, tmp_path: Path, count):
    """Rows find their file by size, then by path; with more files of one size than the join
    should compare, by a hash of the path. Either way each row gets its own file's values."""
    from pyspark.sql import functions as F

    known = _identical_files(spark, tmp_path / "t", count)
    frame = spark.read.orc(sorted(known))
    mapped = files_frame(spark, frame, known, PARTITIONS)
    assert mapped.by_size is (count <= 4)
    out = with_partition_values(
        with_file_path(frame), mapped, PARTITIONS, lambda name, path: F.lit("parsed")
    )
    got = sorted((r.p, r.id) for r in out.collect())
    assert got == sorted((f"v{n}", i) for n in range(count) for i in range(3))


def test_a_file_whose_size_changed_takes_the_per_row_parse(spark, tmp_path: Path):
    """A listed size that is not the file's (it changed after listing) matches no entry: its
    rows take the per-row parse, never another file's values."""
    known = _identical_files(spark, tmp_path / "t", 2)
    first = sorted(known)[0]
    stale = {**known, first: KnownFile(known[first].size + 1, known[first].values)}
    assert _values(spark, known, stale) == [
        (0, "parsed"),
        (0, "v1"),
        (1, "parsed"),
        (1, "v1"),
        (2, "parsed"),
        (2, "v1"),
    ]


def test_delete_event_rows_keep_valid_events_with_the_whole_row(spark, tmp_path: Path):
    """The change feed's delete events: the valid ones only, every event column, ``row`` with
    the table's struct (null), the partition values unescaped from the directories."""
    from types import SimpleNamespace

    root = tmp_path / "t"
    ddl = (
        "operation int, originalTransaction bigint, bucket int, rowId bigint, "
        "currentTransaction bigint, row struct<v:string,w:bigint>"
    )
    events = {
        "p=a": [(2, 1, 536870912, 0, 2, None), (2, 1, 536870912, 5, 2, None)],
        "p=b%2Fc": [(2, 1, 536870912, 7, 2, None), (2, 1, 536870912, 9, 3, None)],  # 3 invalid
    }
    entries = []
    for part, rows in events.items():
        target = root / part / "delete_delta_0000002_0000003_0000"
        spark.createDataFrame(rows, ddl).coalesce(1).write.orc(str(target))
        entries += [
            SimpleNamespace(path=str(f), size=f.stat().st_size) for f in target.glob("*.orc")
        ]
    data = Schema((Column("v", "string"), Column("w", "bigint")))
    spec = snapshot_rows.ReadSpec(Storage("file"), str(root), data, PARTITIONS, ValidWriteIds(2))
    full = acid_read.delete_event_rows(spark, spec, entries)
    assert full.schema["row"].dataType.simpleString() == "struct<v:string,w:bigint>"
    got = sorted((r.p, r.rowId, r.currentTransaction, r.row) for r in full.collect())
    assert got == [("a", 0, 2, None), ("a", 5, 2, None), ("b/c", 7, 2, None)]


def test_file_lists_cross_to_the_jvm_at_once_and_unchanged(spark, partitioned_files):
    """Reading many files passes their URLs (spaces, %) to Spark as one string; the files a
    scan reads come back the same way: both as the public API gives them."""
    urls = sorted(partitioned_files)
    ddl = "id bigint"
    fast = acid_read._read_orc(spark, ddl, urls)
    slow = spark.read.schema(ddl).orc(urls)
    assert sorted(fast.inputFiles()) == sorted(slow.inputFiles()) and len(urls) == 2
    assert sorted(input_files(fast)) == sorted(slow.inputFiles())
    assert sorted(r.id for r in fast.collect()) == [0, 1, 2, 10, 11, 12]
    assert jvm_strings(spark, ["a", "b\nc"]) is None  # a line break: the public API
    assert input_files(spark.range(1)) == []
