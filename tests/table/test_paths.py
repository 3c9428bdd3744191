"""Names from a table's files become paths only in the shapes lakectl writes, inside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakectl.errors import FormatError
from lakectl.storage.fs import storage_for
from lakectl.table.compaction_runs import new_run, status_file
from lakectl.table.layout import (
    base_dir_name,
    delta_dir_name,
    delta_range_dir_name,
    list_bucketing_dir,
    partition_path,
)
from lakectl.table.paths import Shape, check_name, name_flaw, table_path
from lakectl.table.store import TableStore

ODD_VALUES = [
    "",
    None,
    "..",
    ".",
    "a/b",
    "../../x",
    "c:\\d",
    "x=y",
    "%2F",
    "\x01\x1f\x7f",
    "ä 日本",
]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_every_partition_and_data_directory_lakectl_writes_is_accepted(value):
    partition = partition_path(["region", "day"], [value, "2024-01-01"])
    assert check_name(partition, Shape.PARTITION, source="s") == partition
    for acid in (
        delta_dir_name(7),
        delta_dir_name(7, delete=True),
        delta_range_dir_name(3, 9),
        base_dir_name(12),
        base_dir_name(12, 13),
    ):
        for rel in (acid, f"{partition}/{acid}"):
            assert check_name(rel, Shape.DATA_DIR, source="s") == rel
    layout = list_bucketing_dir(("x", "y"), (value or "v", "b"))
    assert check_name(layout, Shape.LIST_BUCKETING, source="s") == layout
    default = list_bucketing_dir(("x", "y"), None)
    assert check_name(default, Shape.LIST_BUCKETING, source="s") == default


def test_ids_status_files_and_staging_entries_lakectl_writes_are_accepted(tmp_path):
    run = new_run("major", [])
    assert check_name(run.id, Shape.RUN_ID, source="s") == run.id
    assert status_file(run.id, source="s") == f"_lakectl/compactions/{run.id}.json"
    storage, root = storage_for(str(tmp_path / "t"))
    staging = os.path.relpath(TableStore(storage, root).staging_path(12345678), root)
    for rel in (
        staging,
        f"_lakectl/staging/compact-{run.id}",
        "_lakectl/staging/compact-list-bucket-12",  # lakectl list-bucket's rewrite
    ):
        assert check_name(rel, Shape.STAGING, source="s") == rel


HOSTILE = [
    ("../victim/base_0000001", "'..' segment"),
    ("p=1/../../base_0000001", "'..' segment"),
    ("/etc/base_0000001", "an absolute path"),
    ("s3://bucket/t/base_0000001", "a URL"),
    ("file:base_0000001", "a URL"),
    ("p=1\\..\\base_0000001", "a backslash"),
    ("p=1/\x00/base_0000001", "a control character"),
    ("p=1//base_0000001", "an empty, '.' or '..' segment"),
    ("./base_0000001", "an empty, '.' or '..' segment"),
    ("p=1/base_0000001/", "an empty, '.' or '..' segment"),
    ("base_" + "1" * 2000, "2,005 characters long"),
    ("p=1/base_\u0661", None),  # an Arabic-Indic digit: not a name lakectl writes
    ("p=1/notes", None),
    ("_lakectl/log/00000000000000000001.json", None),
    ("", None),
    (7, "a int, not a string"),
    (["base_0000001"], "a list, not a string"),
    (None, "a NoneType, not a string"),
]


@pytest.mark.parametrize(("name", "why"), HOSTILE)
def test_anything_else_is_a_format_error_naming_the_file(name, why):
    with pytest.raises(FormatError) as caught:
        check_name(name, Shape.DATA_DIR, source="file:///t/_lakectl/log/00000000000000000003.json")
    message = caught.value.message
    assert message.startswith("file:///t/_lakectl/log/00000000000000000003.json: ")
    assert "is not a data directory lakectl writes" in message
    if why:
        assert why in message
    assert len(message) < 400  # a huge name is cut, not echoed


@pytest.mark.parametrize(
    "run_id",
    ["../../../victim/important", "x", "1700000000000-ABCDEF", "1700000000000-abc12", 170, ""],
)
def test_a_compaction_id_must_be_one_new_run_gives(run_id):
    assert name_flaw(run_id, Shape.RUN_ID) is not None
    with pytest.raises(FormatError):
        status_file(run_id, source="x.json")


def test_table_path_joins_only_checked_names(tmp_path):
    storage, root = storage_for(str(tmp_path / "t"))
    path = table_path(storage, root, "p=1/delta_0000001_0000001_0000", Shape.DATA_DIR, source="s")
    assert path == f"{root}/p=1/delta_0000001_0000001_0000"
    assert table_path(storage, root, "", Shape.PARTITION, source="s") == root
    with pytest.raises(FormatError, match=r"^log: '\.\./x' is not a partition path"):
        table_path(storage, root, "../x", Shape.PARTITION, source="log")


def test_a_delete_never_follows_a_link_out_of_the_table(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious")
    table = tmp_path / "t"
    table.mkdir()
    (table / "p=1").symlink_to(victim, target_is_directory=True)
    storage, root = storage_for(str(table))
    rel = "p=1/base_0000001"
    assert table_path(storage, root, rel, Shape.DATA_DIR, source="s")  # a read path is fine
    with pytest.raises(FormatError, match="leads outside the table"):
        table_path(storage, root, rel, Shape.DATA_DIR, source="s", deleting=True)
    assert (victim / "keep").read_text() == "precious"


PIECES = [
    "base_",
    "delta_",
    "delete_delta_",
    "0000001",
    "_",
    "_v",
    "p",
    "=",
    "/",
    ".",
    "..",
    "\\",
    ":",
    "//",
    "s3:",
    "\x00",
    "\n",
    "é",
    "\u2215",
    "_lakectl",
    "compactions",
    "-",
]


@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(PIECES), max_size=12).map("".join)))
def test_no_accepted_name_leaves_the_root(name):
    """Whatever the text, an accepted name is relative, has no '..' and joins under the root."""
    root = Path("/lake/t")
    for shape in Shape:
        if name_flaw(name, shape) is None:
            joined = os.path.normpath(root / name)
            assert joined == str(root) or joined.startswith(f"{root}/"), (shape, name)
            assert ".." not in name.split("/") and "\\" not in name and "://" not in name
