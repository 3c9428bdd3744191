"""A table created by the command that first writes into it (``load --create``, a stream's
first batch), removed again when that write does not commit: a failed command changes nothing.

Only what creating the table made is removed: the table's directory when it did not exist
before, else the entries it did not hold before (the ``_lakectl`` directory, the data
directories of the aborted write), each found by listing the table's directory (a listing
leaves symbolic links out, so nothing outside the table is reached). A table another writer
committed into meanwhile is kept: it is no longer this command's alone.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator
from typing import Any

from lakectl.failpoints import is_crash
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import META_DIR
from lakectl.table.store import TableStore


@contextlib.contextmanager
def table_to_write(
    store: TableStore,
    state: TableState | None,
    meta: TableMetadata,
    info: dict[str, Any] | None = None,
) -> Iterator[TableState]:
    """``with table_to_write(store, state, meta) as state:`` the state a write reads: ``state``
    when the table exists, else (``None``) the table created now from ``meta`` with ``info``.

    When the block raises and the table was created here, what creating it made is removed
    unless a commit followed the creation (a killed process, or a simulated crash, leaves it
    as it is: ``clean`` and a new ``--create`` find it)."""
    if state is not None:
        yield state
        return
    before = _entries_before(store)
    store.create(meta, info)
    try:
        yield store.read_state()
    except BaseException as exc:
        if not is_crash(exc):
            with contextlib.suppress(Exception):  # the error the block raised is the one shown
                _remove_created(store, before)
        raise


def _entries_before(store: TableStore) -> tuple[set[str], set[str]] | None:
    """The names directly under the table's directory and every path under its ``_lakectl``
    directory before the table is created; ``None`` when the table's directory does not
    exist."""
    storage = store.storage
    if not storage.isdir(store.root):
        return None
    return set(storage.list_names(store.root)), _tree(store, "")


def _tree(store: TableStore, relative: str) -> set[str]:
    """The paths under ``_lakectl/relative`` (relative to ``_lakectl``), from listings."""
    out: set[str] = set()
    for entry in store.storage.list_entries(store.path(META_DIR, relative)):
        path = posixpath.join(relative, entry["name"]) if relative else entry["name"]
        out.add(path)
        if entry["type"] == "directory":
            out |= _tree(store, path)
    return out


def _remove_created(store: TableStore, before: tuple[set[str], set[str]] | None) -> None:
    """Remove what creating the table made (see the module), unless something committed
    after the creation."""
    storage = store.storage
    if store.read_state().last_seq != 0:
        return
    if before is None:
        if not storage.is_link(store.root):
            storage.delete(store.root, recursive=True)
        return
    in_root, in_meta = before
    if META_DIR in in_root:  # only what is new inside it, the topmost new paths
        made = _tree(store, "") - in_meta
        for path in sorted(made):
            if posixpath.dirname(path) not in made:
                storage.delete(store.path(META_DIR, path), recursive=True)
    for name in set(storage.list_names(store.root)) - in_root:
        storage.delete(store.path(name), recursive=True)


__all__ = ["table_to_write"]
