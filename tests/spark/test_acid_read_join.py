"""The merge-on-read joins: delete events against insert events (one long key plus the exact
condition), and partition values attached per file."""

from __future__ import annotations

import contextlib
import io
import itertools
from pathlib import Path

import pytest

from lakectl.spark import acid_read, snapshot_rows
from lakectl.spark.file_partitions import (
    PARTITION_KEY_COLUMN,
    KnownFile,
    directory_values,
    files_frame,
    fits_broadcast,
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
SPEC = snapshot_rows.ReadSpec(
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


def _live(spark, deletes, key=None, inserts=INSERTS, attached=False):
    """``inserts`` minus ``deletes``; ``attached``: the inserts carry their partition key, as
    the scans attach it (the deletes hash theirs per row)."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(inserts, f"{EVENT_DDL}, v string")
    if attached:
        frame = frame.withColumn(PARTITION_KEY_COLUMN, partition_key([F.col("p")]))
    # Broadcast, as acid_read.delete_events hints for small delete deltas.
    deleted = F.broadcast(spark.createDataFrame(deletes, EVENT_DDL))
    kwargs = {} if key is None else {"key": key}
    return acid_read._minus_deletes(frame, deleted, SPEC, **kwargs)


@pytest.mark.parametrize("attached", [False, True], ids=["hashed", "attached"])
@pytest.mark.parametrize("key", [None, _weak_key], ids=["slot-key", "colliding"])
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
def test_delete_events_remove_exactly_their_rows(spark, deletes, gone, key, attached):
    live = _live(spark, deletes, key, attached=attached)
    assert PARTITION_KEY_COLUMN not in live.columns
    rows = {r.v for r in live.collect()}
    assert rows == ALL - gone


def test_anti_join_has_one_long_key_and_the_exact_condition(spark):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _live(spark, [("a", 1, 0, 0)]).explain()
    plan = out.getvalue()
    join = next(line for line in plan.splitlines() if "LeftAnti" in line)
    keys = join.split("BroadcastHashJoin ", 1)[1].split("], [", 1)[0]
    assert keys.strip("[").startswith("__lakectl_join_key") and "," not in keys  # one long
    assert "<= struct(" in join and ">= struct(" in join
    # Each side computes the key in a projection, from a hash of the partition key,
    # originalTransaction and bucket (then rowId).
    projections = [line for line in plan.splitlines() if "AS __lakectl_join_key" in line]
    assert len(projections) == 2
    assert all("xxhash64(xxhash64(p#" in line for line in projections)


# Spark's LongToUnsafeRowMap: first slot of key k in a table of mask + 2 longs (2 per slot).
def _spark_first_slot(key: int, mask: int) -> int:
    h = (key * 0x9E3779B9) % (1 << 64)
    h = h - (1 << 64) if h >= 1 << 63 else h  # a signed long, as in Scala
    return ((h ^ (h >> 32)) & 0xFFFFFFFF) & mask


def _keys(spark, identities, ansi="false"):
    from pyspark.sql import functions as F

    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        frame = spark.createDataFrame(identities, "pk bigint, t bigint, b int, r bigint")
        key = acid_read._event_key([F.col("pk"), F.col("t"), F.col("b"), F.col("r")])
        return [row.k for row in frame.select(key.alias("k")).collect()]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def test_event_key_gives_a_files_rows_consecutive_slots(spark):
    mask = (1 << 22) - 2  # a table of 2**21 slots
    rows = [(7, 1, 536870912, r) for r in range(1000)] + [(8, 1, 536870912, r) for r in range(3)]
    slots = [_spark_first_slot(k, mask) for k in _keys(spark, rows)]
    steps = {(b - a) % (mask + 2) for a, b in itertools.pairwise(slots[:1000])}
    assert steps == {2}  # one slot further per row
    assert slots[1000] not in slots[:1000]  # another partition starts elsewhere


def test_event_key_cannot_overflow_under_ansi(spark):
    big = (1 << 63) - 1
    rows = [(big, big, 2**31 - 1, big), (-big, 0, -(2**31), -big), (0, 0, 0, 0)]
    keys = _keys(spark, rows, ansi="true")
    assert keys == _keys(spark, rows, ansi="false")
    # The key's first slot is its y (below 2**30), whatever the table's size.
    assert all(_spark_first_slot(k, (1 << 31) - 2) < 1 << 30 for k in keys)


def test_equal_keys_of_different_rows_keep_both(spark):
    """rowId enters the key modulo 2**28: rows 0 and 2**28 of a file share a key."""
    inserts = [("a", 1, 0, 0, "first"), ("a", 1, 0, 1 << 28, "far"), ("a", 1, 0, 1, "next")]
    keys = _keys(spark, [(1, 1, 0, 0), (1, 1, 0, 1 << 28), (1, 1, 0, 1)])
    assert keys[0] == keys[1] != keys[2]
    for gone, kept in (("first", {"far", "next"}), ("far", {"first", "next"})):
        row = next(r for r in inserts if r[-1] == gone)
        rows = {r.v for r in _live(spark, [row[:4]], inserts=inserts).collect()}
        assert rows == kept


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


def test_delete_events_read_only_the_first_column_of_row(spark, tmp_path: Path):
    """Delete events carry a null ``row``: the anti join's scan reads its first column only,
    the events for merging delete deltas keep the whole struct."""
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
    plans = [SimpleNamespace(delete_deltas=[SimpleNamespace(files=entries)])]
    deletes = acid_read.delete_events(spark, plans, spec)
    got = sorted((r.p, r.originalTransaction, r.bucket, r.rowId) for r in deletes.collect())
    assert got == [("a", 1, 536870912, 0), ("a", 1, 536870912, 5), ("b/c", 1, 536870912, 7)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        deletes.explain("formatted")
    schemas = [line for line in out.getvalue().splitlines() if line.startswith("ReadSchema")]
    assert schemas and all(line.endswith(",row:struct<v:string>>") for line in schemas)
    full = acid_read.delete_event_rows(spark, spec, entries)
    assert full.schema["row"].dataType.simpleString() == "struct<v:string,w:bigint>"
    assert full.count() == 3


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
