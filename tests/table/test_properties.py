"""Table properties: parsing durations and sizes, validating `lakectl set` input."""

from __future__ import annotations

import pytest

from lakectl.errors import UsageError
from lakectl.table.properties import (
    ORC_CODECS,
    known_keys,
    parse_duration,
    parse_size,
    pyarrow_orc_codec,
    validate,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("7d", 604_800_000),
        ("12h", 43_200_000),
        ("30m", 1_800_000),
        ("0s", 0),
        ("1d12h", 129_600_000),
        ("500ms", 500),
        ("1.5h", 5_400_000),
        ("2w", 1_209_600_000),
    ],
)
def test_durations(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "7", "d7", "7 days", "-1d", "1d-2h"])
def test_bad_durations(text):
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "size"), [("128MB", 128 << 20), ("1gb", 1 << 30), ("512K", 512 << 10), ("4096", 4096)]
)
def test_sizes(text, size):
    assert parse_size(text) == size


def test_unknown_key_lists_the_known_ones():
    with pytest.raises(UsageError) as err:
        validate("compactor.delta.num", "3")
    assert err.value.message == "unknown table property 'compactor.delta.num'"
    assert err.value.hint == "known properties: " + ", ".join(known_keys())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "compactor.delta.num.threshold",
            "ten",
            "compactor.delta.num.threshold=ten: 'ten' is not a whole number",
        ),
        (
            "compactor.delta.pct.threshold",
            "-0.5",
            "compactor.delta.pct.threshold=-0.5: '-0.5' must not be negative",
        ),
        ("clean.retain", "forever", "clean.retain=forever: 'forever' is not a duration"),
        (
            "clean.retain",
            "99999999999d",
            "clean.retain=99999999999d: '99999999999d' is longer than 100 years",
        ),
        (
            "compactor.delta.pct.threshold",
            "nan",
            "compactor.delta.pct.threshold=nan: 'nan' is not a finite number (e.g. 0.1 for 10%)",
        ),
        (
            "compactor.delta.pct.threshold",
            "inf",
            "compactor.delta.pct.threshold=inf: 'inf' is not a finite number (e.g. 0.1 for 10%)",
        ),
        ("write.target-file-size", "big", "write.target-file-size=big: 'big' is not a size"),
        (
            "orc.compress",
            "lzo",  # pyarrow's ORC writer (compaction, S3 without hadoop-aws) has no LZO
            "orc.compress=lzo: 'lzo' is not an ORC codec (use one of NONE, ZLIB, SNAPPY, LZ4, ZSTD)",
        ),
        (
            "orc.compress",
            "brotli",
            "orc.compress=brotli: 'brotli' is not an ORC codec (use one of NONE, ZLIB, SNAPPY, LZ4, ZSTD)",
        ),
    ],
)
def test_bad_values_say_what_is_wrong(key, value, message):
    with pytest.raises(UsageError) as err:
        validate(key, value)
    assert err.value.message == message


def test_values_are_normalised():
    assert validate("orc.compress", "zstd") == "ZSTD"
    assert validate("clean.retain", " 3d ") == "3d"


@pytest.mark.parametrize("codec", ORC_CODECS)
def test_every_accepted_codec_is_one_pyarrow_writes_and_reads(tmp_path, codec):
    import pyarrow as pa
    import pyarrow.orc as orc

    table = pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]})
    path = tmp_path / "f.orc"
    orc.write_table(table, path, compression=pyarrow_orc_codec(validate("orc.compress", codec)))
    assert orc.ORCFile(path).compression == ("UNCOMPRESSED" if codec == "NONE" else codec)
    assert orc.read_table(path).equals(table)
