"""Symbolic links inside a table are ignored by both engines, like linked folders: a bucket file
linked to ``/etc/passwd`` or to another table's ORC file adds nothing to what is read, and
``clean`` never deletes through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SCHEMA = "id bigint, v string"
CDC = ("--mode", "cdc", "--op-column", "op", "--order-by", "id")


def _table(lakectl_cli, root: Path, name: str, ids: range) -> Path:
    path = root / name
    made = lakectl_cli("create", path, "--schema", SCHEMA, "--primary-key", "id")
    assert made.code == 0, made.err
    source = root / f"{name}.csv"
    source.write_text("op,id,v\n" + "".join(f"I,{i},{name}{i}\n" for i in ids))
    loaded = lakectl_cli("load", path, source, *CDC, "--json")
    assert loaded.code == 0, loaded.err
    return path


def _rows(lakectl_cli, table: Path, *engine: str) -> list[tuple[int, str]]:
    read = lakectl_cli("snapshot", table, *engine, "--json")
    assert read.code == 0, read.err
    return sorted((r["id"], r["v"]) for r in read.json["rows"])


@pytest.fixture(scope="module")
def tables(tmp_path_factory, lakectl_cli, spark) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("links")
    return _table(lakectl_cli, root, "t", range(1, 6)), _table(
        lakectl_cli, root, "other", range(100, 120)
    )


@pytest.mark.parametrize("engine", [(), ("--engine", "arrow")], ids=["spark", "arrow"])
def test_a_linked_bucket_file_is_not_read(tables, lakectl_cli, engine):
    table, other = tables
    expected = [(i, f"t{i}") for i in range(1, 6)]
    [delta] = [d for d in table.iterdir() if d.name.startswith("delta_")]
    [foreign] = [f for d in other.iterdir() if d.name.startswith("delta_") for f in d.iterdir()
                 if f.name.startswith("bucket_")]  # fmt: skip
    links = [delta / "bucket_00003", delta / "bucket_00004"]
    links[0].symlink_to(foreign)  # another table's rows
    links[1].symlink_to("/etc/passwd")
    try:
        assert _rows(lakectl_cli, table, *engine) == expected
        assert _rows(lakectl_cli, other, *engine)[:1] == [(100, "other100")]
    finally:
        for link in links:
            link.unlink()
    assert os.path.exists("/etc/passwd") and foreign.exists()
