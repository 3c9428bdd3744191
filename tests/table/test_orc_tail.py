"""Patching hive.acid.* metadata into finished ORC files: the data must read back unchanged."""

from __future__ import annotations

import hashlib
import os

import pyorc
import pytest
from pyarrow import orc

from lakectl.errors import FormatError
from lakectl.storage.fs import storage_for
from lakectl.table.orc_files import add_acid_metadata
from lakectl.table.orc_tail import TAIL_BYTES, acid_stats, metadata_patch, parse_acid_stats

ACID = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
    "currentTransaction:bigint,row:struct<id:bigint,name:string>>"
)
BUCKET0 = 536870912


def _write(path, rows, compression, stripe_size=64 * 1024, metadata=None):
    with open(path, "wb") as handle:
        writer = pyorc.Writer(
            handle,
            ACID,
            compression=compression,
            stripe_size=stripe_size,
        )
        for key, value in (metadata or {}).items():
            writer.set_user_metadata(**{key: value})
        writer.writerows(rows)
        writer.close()


def _rows(n, op=0, txn=3):
    # sha1 names barely compress, so even zstd files have several stripes.
    return [
        (op, txn, BUCKET0, i, txn, (i, hashlib.sha1(str(i).encode()).hexdigest())) for i in range(n)
    ]


def _read(path):
    with open(path, "rb") as handle:
        reader = pyorc.Reader(handle)
        return list(reader), dict(reader.user_metadata), reader.num_of_stripes


@pytest.mark.parametrize(
    "compression",
    [
        pyorc.CompressionKind.NONE,
        pyorc.CompressionKind.ZLIB,
        pyorc.CompressionKind.SNAPPY,
        pyorc.CompressionKind.ZSTD,
    ],
)
def test_metadata_added_and_rows_unchanged(tmp_path, compression):
    path = str(tmp_path / "bucket_00000")
    rows = _rows(20_000)
    _write(path, rows, compression, metadata={"org.example": b"kept"})
    before_rows, before_meta, stripes = _read(path)
    assert stripes > 1  # the key index must list several stripes
    storage, root = storage_for(path)
    items = add_acid_metadata(storage, root)
    after_rows, after_meta, after_stripes = _read(path)
    assert after_rows == before_rows == rows
    assert after_stripes == stripes
    assert after_meta == {**before_meta, **items}
    assert after_meta["org.example"] == b"kept"
    assert after_meta["hive.acid.stats"] == b"20000,0,0"
    assert after_meta["hive.acid.version"] == b"2"
    # Independent oracle: the last identity of each stripe, read row by row with pyorc.
    expected = []
    with open(path, "rb") as handle:
        reader = pyorc.Reader(handle)
        for i in range(reader.num_of_stripes):
            last = list(reader.read_stripe(i))[-1]
            expected.append(f"{last[1]},{last[2]},{last[3]};")
    assert after_meta["hive.acid.key.index"].decode() == "".join(expected)
    # pyarrow (ORC's C++ reader, as Spark's Java one, parses the same protobuf) agrees.
    table = orc.ORCFile(path).read()
    assert table.num_rows == len(rows)
    assert table.column("rowId").to_pylist() == [r[3] for r in rows]


def test_delete_events_counted_as_deletes(tmp_path):
    path = str(tmp_path / "bucket_00000")
    _write(path, [(2, 1, BUCKET0, i, 5, None) for i in range(10)], pyorc.CompressionKind.ZLIB)
    storage, root = storage_for(path)
    items = add_acid_metadata(storage, root)
    assert items["hive.acid.stats"] == b"0,0,10"
    assert items["hive.acid.key.index"] == f"1,{BUCKET0},9;".encode()
    assert _read(path)[1]["hive.acid.stats"] == b"0,0,10"


def test_not_orc_is_a_format_error(tmp_path):
    with pytest.raises(FormatError):
        metadata_patch(b"\x05abc", 4, {"a": b"b"})
    with pytest.raises(FormatError):
        metadata_patch(b"", 0, {"a": b"b"})


def test_patch_only_rewrites_the_tail(tmp_path):
    path = tmp_path / "bucket_00000"
    _write(str(path), _rows(5_000), pyorc.CompressionKind.ZLIB)
    data = path.read_bytes()
    patch = metadata_patch(data[-TAIL_BYTES:], len(data), {"k": b"v"})
    assert patch.offset > len(data) - TAIL_BYTES
    assert patch.data.endswith(bytes([patch.data[-1]]))
    patched = data[: patch.offset] + patch.data
    assert patched[: patch.offset] == data[: patch.offset]


def test_mixed_operations_counted_and_rerun_is_a_no_op(tmp_path):
    path = str(tmp_path / "bucket_00000")
    rows = [(0, 1, BUCKET0, i, 1, (i, "a")) for i in range(7)]
    rows += [(2, 1, BUCKET0, 7 + i, 2, None) for i in range(3)]
    _write(path, rows, pyorc.CompressionKind.SNAPPY)
    storage, root = storage_for(path)
    first = add_acid_metadata(storage, root)
    assert first["hive.acid.stats"] == b"7,0,3"
    size = os.path.getsize(path)
    assert add_acid_metadata(storage, root) == first
    assert os.path.getsize(path) == size
    assert _read(path)[0] == rows


def test_acid_stats_round_trip():
    assert parse_acid_stats(acid_stats(4, 0, 9)) == (4, 0, 9)
    assert parse_acid_stats(b"0,0,1000") == (0, 0, 1000)  # as in a Hive-written delete delta
    with pytest.raises(ValueError, match=r"not a hive\.acid\.stats value"):
        parse_acid_stats(b"1,2")
