"""Listings of a table leave out symbolic links and special files; a user's source keeps links."""

from __future__ import annotations

import os

from lakectl.storage.fs import storage_for
from lakectl.table.listing import list_partition


def test_links_fifos_and_linked_folders_are_left_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    table = tmp_path / "t"
    delta = table / "delta_0000001_0000001_0000"
    delta.mkdir(parents=True)
    (delta / "bucket_00000").write_bytes(b"ORC")
    (delta / "bucket_00001").symlink_to(outside / "secret")
    (delta / "bucket_00002").symlink_to("/etc/passwd")
    (delta / "x=1").symlink_to(outside, target_is_directory=True)
    os.mkfifo(delta / "bucket_00003")
    (table / "base_0000001").symlink_to(outside, target_is_directory=True)
    storage, root = storage_for(str(table))

    names = [e["name"] for e in storage.list_entries(str(delta))]
    assert names == ["bucket_00000"]
    assert storage.list_names_after(str(delta)) == ["bucket_00000"]
    listing = list_partition(storage, root, "")
    assert [d.relative for d in listing.dirs] == ["delta_0000001_0000001_0000"]
    assert [f.name for f in listing.dirs[0].files] == ["bucket_00000"]
    assert listing.originals == []

    kept = {e["name"]: e["type"] for e in storage.list_entries(str(delta), links=True)}
    assert kept == {
        "bucket_00000": "file",
        "bucket_00001": "file",
        "bucket_00002": "file",
        "bucket_00003": "file",
        "x=1": "file",
    }
