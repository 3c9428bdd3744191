"""Tables whose names are close to one that does not exist: the "did you mean" of a typo."""

from __future__ import annotations

import difflib
import posixpath

from lakectl.table.store import TableStore


def close_table_names(store: TableStore, limit: int = 3) -> list[str]:
    """Names of the tables next to ``store``'s root (same parent folder) closest to its name,
    best first: one listing of the parent, then one existence check per close name."""
    root = store.root.rstrip("/")
    parent, name = posixpath.split(root)
    if not name or not parent or not store.storage.isdir(parent):
        return []
    siblings = [n for n in store.storage.list_names(parent) if n != name]
    close = difflib.get_close_matches(name, siblings, n=limit, cutoff=0.6)
    found = []
    for candidate in close:
        sibling = TableStore(store.storage, store.storage.join(parent, candidate), candidate)
        if sibling.has_log():
            found.append(candidate)
    return found
