"""What is in a table's directory tree: partitions, ACID directories, files. Storage reads only."""

from __future__ import annotations

from dataclasses import dataclass, field

from lakectl.storage.fs import Storage
from lakectl.table.layout import (
    ACID_VERSION_FILE,
    AcidDir,
    is_list_bucketing_segment,
    parse_acid_dir,
)


@dataclass(frozen=True)
class FileEntry:
    """A data file. ``subdir`` is its list-bucketing directory inside the ACID directory
    (``x=6``, ``x=10/y=a`` or the default dir), ``""`` for a file directly in it."""

    path: str
    name: str
    size: int
    subdir: str = ""


@dataclass(frozen=True)
class DirListing:
    acid: AcidDir
    path: str
    relative: str
    files: tuple[FileEntry, ...]
    has_version_file: bool

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class PartitionListing:
    """One partition directory (``relative`` is ``""`` for an unpartitioned table)."""

    relative: str
    values: tuple[str | None, ...] = ()
    dirs: list[DirListing] = field(default_factory=list)
    originals: list[FileEntry] = field(default_factory=list)


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _list_acid_files(storage: Storage, path: str, subdir: str, out: list[FileEntry]) -> bool:
    """Collect the data files of an ACID directory, descending into list-bucketing directories
    (``x=6/``, ``HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME/``); returns whether the version file is
    there."""
    has_version = False
    for f in storage.list_entries(path):
        name = f["name"]
        if f["type"] == "directory":
            if not _hidden(name) and is_list_bucketing_segment(name):
                _list_acid_files(storage, f["path"], f"{subdir}/{name}" if subdir else name, out)
            continue
        if name == ACID_VERSION_FILE:
            has_version = True
        if _hidden(name):
            continue
        out.append(FileEntry(f["path"], name, f["size"], subdir))
    return has_version


def list_partition(storage: Storage, root: str, relative: str) -> PartitionListing:
    """List one partition directory: its ACID directories and any original (pre-ACID) files."""
    path = storage.join(root, relative) if relative else root
    listing = PartitionListing(relative=relative)
    for entry in storage.list_entries(path):
        name = entry["name"]
        if _hidden(name):
            continue
        if entry["type"] == "directory":
            acid = parse_acid_dir(name)
            if acid is None:
                continue
            files: list[FileEntry] = []
            has_version = _list_acid_files(storage, entry["path"], "", files)
            rel = f"{relative}/{name}" if relative else name
            listing.dirs.append(DirListing(acid, entry["path"], rel, tuple(files), has_version))
        elif entry["size"] > 0:
            listing.originals.append(FileEntry(entry["path"], name, entry["size"]))
    return listing


def find_partition_dirs(
    storage: Storage, root: str, depth: int | None
) -> list[tuple[str, list[str]]]:
    """Relative partition paths under ``root`` with their ``col`` names.

    ``depth`` is the number of partition columns when known (lakectl tables); ``None`` infers it
    from ``col=value`` directory names (Hive tables without lakectl metadata).
    """
    results: list[tuple[str, list[str]]] = []

    def walk(path: str, relative: str, cols: list[str]) -> None:
        if depth is not None and len(cols) == depth:
            results.append((relative, cols))
            return
        children = [
            e
            for e in storage.list_entries(path)
            if e["type"] == "directory" and not _hidden(e["name"]) and "=" in e["name"]
        ]
        if not children:
            if depth is None or len(cols) == depth:
                results.append((relative, cols))
            return
        for child in children:
            col = child["name"].split("=", 1)[0]
            rel = f"{relative}/{child['name']}" if relative else child["name"]
            walk(child["path"], rel, [*cols, col])

    walk(root, "", [])
    if depth == 0:
        return [("", [])]
    return results


def list_table(
    storage: Storage, root: str, partition_columns: list[str] | None, only: set[str] | None = None
) -> list[PartitionListing]:
    """List every partition (or only the relative paths in ``only``) of a table."""
    from lakectl.table.layout import parse_partition_path

    depth = None if partition_columns is None else len(partition_columns)
    out = []
    for relative, cols in find_partition_dirs(storage, root, depth):
        if only is not None and relative not in only:
            continue
        listing = list_partition(storage, root, relative)
        if relative:
            listing.values = parse_partition_path(partition_columns or cols, relative)
        out.append(listing)
    return out
