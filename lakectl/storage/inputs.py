"""Input files a command reads (a statement file, a load source): regular files only.

A device (``/dev/zero``: endless), a FIFO (blocks until someone writes) or a socket given as an
input would make lakectl hang or run out of memory; they are refused before anything is read,
naming the path and what it is. Folders are refused where a file is needed, and where a folder of
files is accepted (a load source) each of its files is checked the same way.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from lakectl.errors import BadInputError
from lakectl.storage.fs import Storage

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _local_kind(path: str) -> str | None:
    """What a local path is when it is neither a regular file nor a folder (following links)."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(what: str, shown: str, kind: str) -> BadInputError:
    return BadInputError(
        f"{what} {shown} is {kind}, not a regular file: nothing was read",
        hint="give a regular file (copy the data into one first)",
    )


def require_input_file(storage: Storage, path: str, what: str, shown: str) -> None:
    """Refuse an input that must be one regular file: a folder, device, FIFO or socket.
    ``what`` names the input ("updates file"), ``shown`` is the path as the user gave it."""
    kind = _kind(storage, path, folder_ok=False)
    if kind is not None:
        raise _refuse(what, shown, kind)


def require_local_input_file(path: str, what: str) -> None:
    """:func:`require_input_file` for a path on this machine."""
    kind = _local_kind(path) or ("a folder" if os.path.isdir(path) else None)
    if kind is not None:
        raise _refuse(what, path, kind)


def require_input_files(storage: Storage, path: str, what: str, shown: str) -> None:
    """Refuse an input that may be a regular file or a folder of them, when it (or, locally, an
    entry of the folder that a reader would open: not ``_`` or ``.`` names) is a device, FIFO
    or socket."""
    kind = _kind(storage, path, folder_ok=True)
    if kind is not None:
        raise _refuse(what, shown, kind)
    if storage.scheme != "file" or not os.path.isdir(path):
        return
    for folder, subfolders, names in os.walk(path):
        subfolders[:] = [d for d in subfolders if not d.startswith(("_", "."))]
        for name in names:
            if name.startswith(("_", ".")):
                continue
            entry = os.path.join(folder, name)
            kind = _local_kind(entry) if os.path.exists(entry) else None
            if kind is not None:
                raise _refuse(f"{what} {shown}: its entry", os.path.relpath(entry, path), kind)


def _kind(storage: Storage, path: str, *, folder_ok: bool) -> str | None:
    if storage.scheme == "file":
        kind = _local_kind(path)
        if kind is None and not folder_ok and os.path.isdir(path):
            return "a folder"
        return kind
    info: dict[str, Any] = storage.fs.info(path)
    kind_name = info.get("type")
    if kind_name == "directory":
        return None if folder_ok else "a folder"
    return None if kind_name == "file" else f"not a regular file ({kind_name})"
