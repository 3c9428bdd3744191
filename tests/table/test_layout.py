"""Names on disk as Hive 3 writes them: ACID directories, bucket files, the bucket codec,
original files and Hive's partition escaping. Pure functions, no Spark."""

from __future__ import annotations

import posixpath
import random

import pytest

from lakectl.errors import UsageError
from lakectl.table.layout import (
    DEFAULT_PARTITION,
    DirKind,
    base_dir_name,
    bucket_file_name,
    decode_bucket,
    delta_dir_name,
    delta_range_dir_name,
    encode_bucket,
    escape_partition_value,
    parse_acid_dir,
    parse_bucket_file,
    parse_original_file,
    parse_partition_path,
    parse_partition_spec,
    partition_path,
    unescape_partition_value,
)

# Hive's FileUtils.escapePathName set (non-Windows): control chars, DEL and these.
HIVE_ESCAPED = set("\"#%'*/:=?\\{[]^") | {chr(0x7F)} | {chr(c) for c in range(1, 0x20)}


# --- directory names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "low", "high", "statement", "visibility"),
    [
        ("delta_0000001_0000001_0000", DirKind.DELTA, 1, 1, 0, None),
        ("delete_delta_0000003_0000003_0000", DirKind.DELETE_DELTA, 3, 3, 0, None),
        ("base_0000003", DirKind.BASE, 0, 3, None, None),
        # Hive Streaming: several transactions in one delta, names not zero-padded.
        ("delta_1_2", DirKind.DELTA, 1, 2, None, None),
        # Minor compaction output: a range and no statement id.
        ("delta_0000005_0000010", DirKind.DELTA, 5, 10, None, None),
        ("delete_delta_0000004_0000004", DirKind.DELETE_DELTA, 4, 4, None, None),
        # Multi-statement transactions.
        ("delta_0000007_0000007_0003", DirKind.DELTA, 7, 7, 3, None),
        # Compactor-written names carry the visibility transaction.
        ("base_0000007_v0000123", DirKind.BASE, 0, 7, None, 123),
        ("delta_0000001_0000003_v0000045", DirKind.DELTA, 1, 3, None, 45),
        ("delete_delta_0000002_0000009_v0000077", DirKind.DELETE_DELTA, 2, 9, None, 77),
        # Write ids past seven digits (the interop tables use 10000001).
        ("delete_delta_10000001_10000001_0000", DirKind.DELETE_DELTA, 10000001, 10000001, 0, None),
    ],
)
def test_parse_hive_directory_names(name, kind, low, high, statement, visibility):
    acid = parse_acid_dir(name)
    assert acid is not None
    assert (acid.kind, acid.min_write_id, acid.max_write_id) == (kind, low, high)
    assert acid.statement_id == statement
    assert acid.visibility_txn == visibility
    assert acid.name == name
    assert acid.is_base == (kind is DirKind.BASE)
    assert acid.is_delete == (kind is DirKind.DELETE_DELTA)


@pytest.mark.parametrize(
    "name",
    [
        "bucket_00000",
        "000000_0",
        "_lakectl",
        "_orc_acid_version",
        "delta_x_1",
        "delta_1",
        "base_",
        "base_1_2",
        "deltas_1_1",
        "delete_delta_1",
        "delta_1_2_3_4",
        "store_id=S01",
        "Delta_1_1",
    ],
)
def test_non_acid_names_are_not_parsed(name):
    assert parse_acid_dir(name) is None


@pytest.mark.parametrize("write_id", [1, 2, 9, 10, 999, 1234567, 9999999, 10000001, 2**40])
def test_directory_names_round_trip(write_id):
    delta = parse_acid_dir(delta_dir_name(write_id))
    assert delta is not None
    assert (delta.kind, delta.min_write_id, delta.max_write_id, delta.statement_id) == (
        DirKind.DELTA,
        write_id,
        write_id,
        0,
    )
    delete = parse_acid_dir(delta_dir_name(write_id, delete=True))
    assert delete is not None
    assert (delete.kind, delete.min_write_id, delete.max_write_id) == (
        DirKind.DELETE_DELTA,
        write_id,
        write_id,
    )
    base = parse_acid_dir(base_dir_name(write_id))
    assert base is not None
    assert (base.kind, base.max_write_id, base.visibility_txn) == (DirKind.BASE, write_id, None)
    compacted = parse_acid_dir(base_dir_name(write_id, visibility_txn=write_id + 5))
    assert compacted is not None
    assert (compacted.max_write_id, compacted.visibility_txn) == (write_id, write_id + 5)
    ranged = parse_acid_dir(delta_range_dir_name(write_id, write_id + 3))
    assert ranged is not None
    assert (ranged.min_write_id, ranged.max_write_id, ranged.statement_id) == (
        write_id,
        write_id + 3,
        None,
    )


def test_formatted_names_match_hive_exactly():
    assert delta_dir_name(1) == "delta_0000001_0000001_0000"
    assert delta_dir_name(3, delete=True) == "delete_delta_0000003_0000003_0000"
    assert delta_dir_name(5, 2) == "delta_0000005_0000005_0002"
    assert delta_range_dir_name(1, 3) == "delta_0000001_0000003"
    assert delta_range_dir_name(4, 4, delete=True) == "delete_delta_0000004_0000004"
    assert base_dir_name(3) == "base_0000003"
    assert base_dir_name(7, 123) == "base_0000007_v0000123"
    assert bucket_file_name(0) == "bucket_00000"
    assert bucket_file_name(17) == "bucket_00017"


@pytest.mark.parametrize(
    ("name", "bucket"),
    [("bucket_00000", 0), ("bucket_00017", 17), ("bucket_04095", 4095), ("bucket_00003_0", 3)],
)
def test_bucket_file_names(name, bucket):
    assert parse_bucket_file(name) == bucket
    assert parse_bucket_file(bucket_file_name(bucket)) == bucket


@pytest.mark.parametrize(
    "name", ["streaming.orc", "part-00000.orc", "000000_0", "bucket_", "_orc_acid_version"]
)
def test_non_bucket_files(name):
    assert parse_bucket_file(name) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("000000_0", (0, 0)),
        ("000002_0", (2, 0)),
        ("000002_0_copy_1", (2, 1)),
        ("000002_0_copy_2", (2, 2)),
        ("000002_0_copy_12", (2, 12)),
        ("00000_0", (0, 0)),
        ("000013_1", (13, 0)),
    ],
)
def test_original_file_names(name, expected):
    assert parse_original_file(name) == expected


@pytest.mark.parametrize(
    "name", ["bucket_00000", "part-00000.orc", "000000", "000000_0_copy_", "x_0"]
)
def test_non_original_file_names(name):
    assert parse_original_file(name) is None


# --- bucket codec -----------------------------------------------------------------------------


def test_bucket_codec_known_values():
    # Values seen in Hive-written files (interop fixtures).
    assert encode_bucket(0) == 536870912
    assert encode_bucket(2) == 537001984
    assert decode_bucket(536870912) == 0
    assert decode_bucket(537001984) == 2


@pytest.mark.parametrize("bucket", [0, 1, 2, 7, 255, 256, 1000, 4095])
@pytest.mark.parametrize("statement", [0, 1, 4095])
def test_bucket_codec_layout(bucket, statement):
    # BucketCodec V1: 3 version bits (001), 1 reserved, 12 bits bucket, 4 reserved, 12 statement.
    value = encode_bucket(bucket, statement)
    assert value >> 29 == 1
    assert (value >> 16) & 0xFFF == bucket
    assert value & 0xFFF == statement
    assert (value >> 12) & 0xF == 0
    assert decode_bucket(value) == bucket
    assert 0 < value < 2**31  # fits ORC's int column


@pytest.mark.parametrize("legacy", [0, 1, 5, 31])
def test_bucket_codec_v0_values_are_bucket_numbers(legacy):
    assert decode_bucket(legacy) == legacy


@pytest.mark.parametrize("bucket", [-1, 4096, 10_000])
def test_bucket_out_of_range(bucket):
    with pytest.raises(ValueError, match="out of range"):
        encode_bucket(bucket)


# --- partitions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("2024-01-01", "2024-01-01"),
        ("S01", "S01"),
        ("a b", "a b"),
        ("../../x", "..%2F..%2Fx"),
        ("a:b", "a%3Ab"),
        ("x=y", "x%3Dy"),
        ("50%", "50%25"),
        ("tab\there", "tab%09here"),
        ("q?#*", "q%3F%23%2A"),
        ("\"'\\", "%22%27%5C"),
        ("{[]}^", "%7B%5B%5D}%5E"),
        ("\x7f", "%7F"),
        ("é", "é"),
        (None, DEFAULT_PARTITION),
        ("", DEFAULT_PARTITION),
    ],
)
def test_escape_partition_value_as_hive(value, escaped):
    assert escape_partition_value(value) == escaped


def test_traversal_value_stays_one_path_component():
    path = partition_path(["region"], ["../../x"])
    assert path == "region=..%2F..%2Fx"
    assert "/" not in path
    root = "/warehouse/t"
    assert posixpath.normpath(posixpath.join(root, path)).startswith(root + "/")
    assert parse_partition_path(["region"], path) == ("../../x",)


def test_partition_values_round_trip_random_strings():
    rng = random.Random(7)
    alphabet = [*HIVE_ESCAPED, *"abcXYZ019 -_.+~é中", "%", "%2F", "__HIVE"]
    for _ in range(500):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        escaped = escape_partition_value(value)
        assert not (set(escaped) & HIVE_ESCAPED - {"%"}), escaped
        assert "/" not in escaped
        assert unescape_partition_value(escaped) == value


def test_default_partition_round_trip():
    assert unescape_partition_value(DEFAULT_PARTITION) is None
    path = partition_path(["a", "b"], ["1", None])
    assert path == f"a=1/b={DEFAULT_PARTITION}"
    assert parse_partition_path(["a", "b"], path) == ("1", None)


def test_partition_path_several_columns():
    path = partition_path(["create_date", "store_id"], ["2024-01-01", "S/1"])
    assert path == "create_date=2024-01-01/store_id=S%2F1"
    assert parse_partition_path(["create_date", "store_id"], path) == ("2024-01-01", "S/1")
    # Column names match case-insensitively, as Hive resolves them.
    assert parse_partition_path(["Create_Date", "STORE_ID"], path) == ("2024-01-01", "S/1")


@pytest.mark.parametrize(
    ("columns", "relative"),
    [(["a"], "a=1/b=2"), (["a", "b"], "a=1"), (["a"], "b=1"), (["a"], "a1")],
)
def test_partition_path_not_matching_columns(columns, relative):
    with pytest.raises(UsageError, match="partition path"):
        parse_partition_path(columns, relative)


def test_partition_spec_from_command_line():
    cols = ["create_date", "store_id"]
    assert parse_partition_spec(["create_date=2024-01-01"], cols) == {"create_date": "2024-01-01"}
    assert parse_partition_spec(["CREATE_DATE=2024-01-01/store_id=S1"], cols) == {
        "create_date": "2024-01-01",
        "store_id": "S1",
    }
    assert parse_partition_spec([f"store_id={DEFAULT_PARTITION}"], cols) == {"store_id": None}
    with pytest.raises(UsageError, match="not a partition column"):
        parse_partition_spec(["region=x"], cols)
    with pytest.raises(UsageError, match="expected col=value"):
        parse_partition_spec(["2024-01-01"], cols)
