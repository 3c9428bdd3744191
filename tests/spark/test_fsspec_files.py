"""The pure parts of reading line files in byte ranges (no JVM): every line is read exactly once,
whole and in order, however the file is cut, as Hadoop's line reader splits files."""

from __future__ import annotations

import random

import pytest

from lakectl.spark.fsspec_files import (
    _csv_field,
    _read_range,
    line_splits,
    lines_in_range,
    source_files,
)
from lakectl.storage.fs import storage_for


def expected_lines(data: bytes) -> list[bytes]:
    lines = [line.removesuffix(b"\r") for line in data.split(b"\n")]
    return [line for line in lines if line]


@pytest.mark.parametrize("seed", range(5))
def test_ranges_read_every_line_once_in_order(tmp_path, seed):
    rng = random.Random(seed)
    storage, root = storage_for(str(tmp_path))
    for trial in range(60):
        lines = [
            bytes(rng.choice(b'ab,"') for _ in range(rng.randint(0, 9)))
            for _ in range(rng.randint(0, 15))
        ]
        data = rng.choice([b"\n", b"\r\n"]).join(lines) + rng.choice([b"", b"\n"])
        path = storage.join(root, f"f{trial}.csv")
        storage.write_bytes(path, data)
        split = rng.randint(1, 12)
        got = []
        for file, start, end, size in line_splits([(path, len(data))], split):
            got += lines_in_range(_read_range(storage, file, start, end, size), start, end)
        assert got == expected_lines(data), (data, split)


def test_splits_cover_files_and_empty_files_get_one_range():
    assert line_splits([("a", 10), ("b", 0)], 4) == [
        ["a", 0, 4, 10],
        ["a", 4, 8, 10],
        ["a", 8, 10, 10],
        ["b", 0, 0, 0],
    ]
    assert lines_in_range(b"", 0, 0) == []


def test_a_line_longer_than_the_range_belongs_to_the_range_it_starts_in():
    data = b"x" * 50 + b"\nend\n"
    assert lines_in_range(data, 0, 10) == [b"x" * 50]
    assert lines_in_range(data[9:], 10, 20) == []  # starts mid-line, no line starts in it
    assert lines_in_range(data[49:], 50, 60) == [b"end"]


@pytest.mark.parametrize(
    ("name", "field"),
    [("sell_id", "sell_id"), ("a,b", '"a,b"'), ('say "hi"', '"say ""hi"""'), (" x", '" x"')],
)
def test_csv_header_fields_are_quoted_only_when_needed(name, field):
    assert _csv_field(name) == field


def test_a_folders_files_are_read_in_name_order_whatever_the_listing_order(tmp_path):
    """The rows' order in the source (which decides between two changes of one key) is the
    files' name order: sizes and creation order do not change it."""
    storage, root = storage_for(str(tmp_path))
    for name, size in (("b.csv", 50), ("c d.csv", 5), ("_SUCCESS", 0), ("a%1.csv", 500)):
        storage.write_bytes(storage.join(root, name), b"x" * size)
    names = [path.rsplit("/", 1)[-1] for path, _ in source_files(storage, root)]
    assert names == ["a%1.csv", "b.csv", "c d.csv"]
