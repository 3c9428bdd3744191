"""A load source's content hash and emptiness, and the malformed CSV line finder (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.storage.fs import storage_for
from lakectl.storage.source_files import digest_source, first_malformed_csv_line


def _digest(path: Path, fmt: str = "csv"):
    storage, local = storage_for(str(path))
    return digest_source(storage, local, fmt)


@pytest.mark.parametrize(
    ("fmt", "text", "empty"),
    [
        ("csv", "", True),
        ("csv", "id,v\n", True),
        ("csv", "id,v", True),
        ("csv", "id,v\r\n\r\n  \n", True),
        ("csv", "id,v\n1,a\n", False),
        ("csv", "id,v\n\n1,a", False),
        ("json", "\n \n", True),
        ("json", '{"id": 1}\n', False),
        ("parquet", "", True),
        ("parquet", "PAR1", False),
    ],
)
def test_a_source_without_rows_is_empty(tmp_path, fmt, text, empty):
    source = tmp_path / f"batch.{fmt}"
    source.write_text(text)
    assert _digest(source, fmt).empty is empty


def test_a_folder_is_empty_when_each_of_its_files_is(tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    assert _digest(folder).empty and _digest(folder).files == 0
    (folder / "a.csv").write_text("id,v\n")
    (folder / "_SUCCESS").write_text("1,2,3\n4,5,6\n")  # readers skip it: so does the check
    assert _digest(folder).empty
    (folder / "b.csv").write_text("id,v\n1,a\n")
    assert not _digest(folder).empty and _digest(folder).files == 2


def test_the_hash_follows_the_content_and_the_location_is_absolute(tmp_path):
    source = tmp_path / "batch.csv"
    source.write_text("id,v\n1,a\n")
    first = _digest(source)
    assert first.url == f"file://{source}" or first.url == str(source)
    assert first.digest.startswith("sha256:") and _digest(source) == first
    source.write_text("id,v\n1,b\n")  # same size, other bytes
    assert _digest(source).digest != first.digest


def test_the_first_record_of_the_wrong_width_is_found_by_its_line(tmp_path):
    source = tmp_path / "batch.csv"
    source.write_text('id,v\n1,"a\nb"\n2,b,extra\n3\n')
    storage, path = storage_for(str(source))
    found = first_malformed_csv_line(storage, path, "batch.csv")
    assert found is not None
    assert found.describe() == "batch.csv, line 4: 3 field(s) where the header has 2"
    source.write_text("id,v\n1,a\n\n2,b\n")
    assert first_malformed_csv_line(storage, path, "batch.csv") is None
    folder = tmp_path / "landing"
    folder.mkdir()
    (folder / "a.csv").write_text("id,v\n1,a\n")
    (folder / "b.csv").write_text("id,v\n1\n")
    storage, path = storage_for(str(folder))
    found = first_malformed_csv_line(storage, path, "landing")
    assert found is not None and found.describe().startswith("landing/b.csv, line 2: 1 field(s)")
