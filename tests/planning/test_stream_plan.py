"""The stream's bookkeeping without Spark: which landing files are still to apply."""

from __future__ import annotations

import pytest

from lakectl.errors import UsageError
from lakectl.planning.stream_plan import (
    LandingFile,
    applied_files,
    is_landing_name,
    parse_trigger,
    pending,
    relative_name,
    stream_info,
)
from lakectl.table.log import CommitRecord

SRC = "file:///land"


def record(seq: int, info: dict) -> CommitRecord:
    return CommitRecord(seq=seq, operation="cdc", committed_at=seq, write_id=seq, info=info)


def test_applied_files_come_from_the_records_of_this_source_only():
    records = [
        record(1, stream_info(SRC, "csv", ["a.csv", "b.csv"], [])),
        record(2, {"source": "/x.csv", "format": "csv"}),  # a plain load
        record(3, stream_info("file:///other", "csv", ["c.csv"], [])),
        record(4, stream_info(SRC, "csv", ["d.csv"], ["bad.csv"])),
    ]
    assert applied_files(records, SRC) == {"a.csv", "b.csv", "d.csv"}


def test_pending_skips_done_hidden_and_underscore_files_in_arrival_order():
    files = [
        LandingFile("b.csv", 1, 200),
        LandingFile("a.csv", 1, 200),
        LandingFile("z.csv", 1, 100),
        LandingFile(".c.csv.tmp", 1, 50),
        LandingFile("_bad", 0, 10),
        LandingFile("done.csv", 1, 1),
    ]
    assert [f.name for f in pending(files, {"done.csv"})] == ["z.csv", "a.csv", "b.csv"]
    assert not is_landing_name("_SUCCESS") and is_landing_name("part-0.csv")


@pytest.mark.parametrize(
    "url, expected",
    [
        ("file:///land/a.csv", "a.csv"),
        ("file:/land/a%20b.csv", "a b.csv"),
        ("file:///landing/a.csv", None),
        ("s3a://bucket/land/x.json", None),
    ],
)
def test_relative_name(url, expected):
    assert relative_name(url, "/land") == expected


def test_relative_name_on_object_stores():
    assert relative_name("s3a://bucket/land/x.json", "bucket/land") == "x.json"


@pytest.mark.parametrize(
    "text, seconds", [("5s", 5.0), ("500ms", 0.5), ("1m", 60.0), ("2", 2.0), ("1.5 s", 1.5)]
)
def test_parse_trigger(text, seconds):
    assert parse_trigger(text) == seconds


@pytest.mark.parametrize("text", ["fast", "10ms", "-1s"])
def test_parse_trigger_refuses(text):
    with pytest.raises(UsageError):
        parse_trigger(text)
