"""Names read from a table's own files, turned into paths that stay inside the table root.

A table's files are data, not instructions: log records (``added``, ``obsolete``,
``partitions``), checkpoints, compaction status files (``id``, ``outputs``) and the layouts in
the log name directories, and anyone who can write to the table can write those names. Every
path lakectl builds from such a name goes through :func:`table_path` (or, for a name that is
only checked, :func:`check_name`): the name must have one of the shapes lakectl itself writes,

* a partition: ``""`` or ``col=value`` segments (``store_id=7/create_date=2024-01-01``);
* a data directory: a partition, then an ACID directory (``base_0000007``,
  ``base_0000007_v0000009``, ``delta_0000003_0000003_0000``, ``delete_delta_...``);
* list-bucketing directories inside a data directory (``x=6/y=a``,
  ``HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME``);
* a compaction id (``1767225600000-4f2a9c``), its status file
  ``_lakectl/compactions/<id>.json``, and staging entries
  ``_lakectl/staging/w0000007-<pid>-<ms>``, ``_lakectl/staging/compact-<id>`` or
  ``_lakectl/staging/compact-list-bucket-<write id>``;

and never ``..``, an absolute path, another scheme or bucket, a backslash, a control character
or an empty segment. Anything else is a :class:`~lakectl.errors.FormatError` naming the file the
name came from, raised before anything is read or deleted.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from enum import StrEnum

from lakectl.errors import FormatError
from lakectl.storage.fs import Storage
from lakectl.table.layout import LIST_BUCKETING_DEFAULT_DIR
from lakectl.table.log import CommitRecord

META_DIR = "_lakectl"
RUNS_DIR = f"{META_DIR}/compactions"
STAGING_DIR = f"{META_DIR}/staging"

# Longer names are not ones lakectl writes (object stores cap keys at 1,024 bytes).
MAX_NAME_CHARS = 1024

# The shapes as regular expressions over the whole name (``fullmatch``). A segment ``col=value``
# holds no ``/``, backslash or control character and always an ``=``, so ``.``, ``..``, empty
# segments, absolute paths and URLs never match; numbers are ASCII digits only.
_SEGMENT = r"[^/=\\\x00-\x1f\x7f]+=[^/\\\x00-\x1f\x7f]*"
_ACID_DIR = r"(?:base_[0-9]+(?:_v[0-9]+)?|(?:delete_)?delta_[0-9]+_[0-9]+(?:_[0-9]+)?(?:_v[0-9]+)?)"
_LB_SEGMENT = rf"(?:{_SEGMENT}|{LIST_BUCKETING_DEFAULT_DIR})"
_RUN_ID = r"[0-9]{1,19}-[0-9a-f]{6}"


class Shape(StrEnum):
    """The shapes of the names a table's files may hold (see the module docstring)."""

    PARTITION = "partition path"
    DATA_DIR = "data directory"
    LIST_BUCKETING = "list-bucketing directory"
    RUN_ID = "compaction id"
    STATUS_FILE = "compaction status file"
    STAGING = "staging entry"


_SHAPES = {
    Shape.PARTITION: re.compile(rf"(?:{_SEGMENT}(?:/{_SEGMENT})*)?"),
    Shape.DATA_DIR: re.compile(rf"(?:{_SEGMENT}/)*{_ACID_DIR}"),
    Shape.LIST_BUCKETING: re.compile(rf"{_LB_SEGMENT}(?:/{_LB_SEGMENT})*"),
    Shape.RUN_ID: re.compile(_RUN_ID),
    Shape.STATUS_FILE: re.compile(rf"{RUNS_DIR}/{_RUN_ID}\.json"),
    Shape.STAGING: re.compile(
        rf"{STAGING_DIR}/(?:w[0-9]{{7,19}}-[0-9]{{1,19}}-[0-9]{{1,19}}"
        rf"|compact-(?:{_RUN_ID}|list-bucket-[0-9]{{1,19}}))"
    ),
}
_DATA_DIR = _SHAPES[Shape.DATA_DIR]
_PARTITION = _SHAPES[Shape.PARTITION]


def _has_shape(name: object, wanted: tuple[Shape, ...]) -> bool:
    return (
        isinstance(name, str)
        and len(name) <= MAX_NAME_CHARS
        and any(_SHAPES[s].fullmatch(name) for s in wanted)
    )


def _flaw(name: object) -> str | None:
    """What makes ``name`` unsafe as a relative path whatever its shape; ``None`` if nothing."""
    if not isinstance(name, str):
        return f"a {type(name).__name__}, not a string"
    if len(name) > MAX_NAME_CHARS:
        return f"{len(name):,} characters long"
    if name.startswith("/"):
        return "an absolute path"
    if "://" in name or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", name):
        return "a URL"
    if "\\" in name:
        return "a backslash"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        return "a control character"
    if name and any(s in ("", ".", "..") for s in name.split("/")):
        return "an empty, '.' or '..' segment"
    return None


def shown(name: object, limit: int = 80) -> str:
    """``name`` for a message: quoted, escaped, and cut to ``limit`` characters."""
    text = repr(name)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def name_flaw(name: object, shapes: Shape | Iterable[Shape]) -> str | None:
    """Why ``name`` has none of ``shapes`` (``'../x' is not a data directory lakectl writes
    (an empty, '.' or '..' segment)``); ``None`` when it has one."""
    wanted = (shapes,) if isinstance(shapes, Shape) else tuple(shapes)
    if _has_shape(name, wanted):
        return None
    what = " or ".join(s.value for s in wanted)
    flaw = _flaw(name)
    return f"{shown(name)} is not a {what} lakectl writes{f' ({flaw})' if flaw else ''}"


def check_name(name: object, shapes: Shape | Iterable[Shape], *, source: str) -> str:
    """``name`` when it has one of ``shapes``; a :class:`FormatError` naming ``source`` (the
    file the name was read from) otherwise."""
    flaw = name_flaw(name, shapes)
    if flaw is None:
        return str(name)
    raise FormatError(
        f"{source}: {flaw}; the table's files are damaged or were tampered with, and nothing "
        "was read or deleted",
        hint="restore the file from a backup, or remove it if it is not lakectl's; table "
        "contents never name paths outside the table",
    )


def table_path(
    storage: Storage,
    root: str,
    name: object,
    shapes: Shape | Iterable[Shape],
    *,
    source: str,
    deleting: bool = False,
) -> str:
    """The storage path of ``name`` (read from ``source``) under ``root``, once
    :func:`check_name` accepts it; the one way lakectl turns table contents into paths.

    ``deleting``: the path is about to be deleted; on a local filesystem it must also stay
    inside the table once symbolic links are resolved (a link planted inside the table never
    leads a delete elsewhere).
    """
    relative = check_name(name, shapes, source=source)
    path = storage.join(root, relative) if relative else root
    if storage.scheme != "file":
        return path
    inside = _inside(root, path)  # always, after the check above
    if inside and deleting:
        inside = _inside(os.path.realpath(root), os.path.realpath(path))
    if not inside:
        raise FormatError(
            f"{source}: {shown(name)} leads outside the table {storage.url(root)} (through a "
            "symbolic link); nothing was deleted",
            hint="replace the link inside the table by the directory it stands for, or remove "
            "it; lakectl never follows links out of a table",
        )
    return path


def check_record_names(record: CommitRecord, *, source: str) -> None:
    """Check the directory names of a log record (``partitions``, ``added``, ``obsolete``) as
    it is read from ``source``, its log entry or checkpoint."""
    data_dir, partition = _DATA_DIR.fullmatch, _PARTITION.fullmatch
    for field, shape, match in (
        ("partitions", Shape.PARTITION, partition),
        ("added", Shape.DATA_DIR, data_dir),
        ("obsolete", Shape.DATA_DIR, data_dir),
    ):
        for name in getattr(record, field):
            if not (isinstance(name, str) and len(name) <= MAX_NAME_CHARS and match(name)):
                check_name(name, shape, source=f"{source} ({field} of log record {record.seq})")


def _inside(root: str, path: str) -> bool:
    base = posixpath.normpath(root)
    return os.path.commonpath([base, posixpath.normpath(path)]) == base


__all__ = [
    "MAX_NAME_CHARS",
    "META_DIR",
    "RUNS_DIR",
    "STAGING_DIR",
    "Shape",
    "check_name",
    "check_record_names",
    "name_flaw",
    "shown",
    "table_path",
]
