"""One write transaction: a write id from its allocation to its commit or abort.

Every operation that writes data or statements goes through :class:`WriteTransaction`, so the
steps are the same everywhere: reserve a write id (put-if-absent, as Hive's metastore would),
write invisible files under the table, commit one log record, and on any failure before the
commit mark the write id aborted and remove what it wrote. A failure after the commit changes
nothing: the record is the truth.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from lakectl.failpoints import is_crash
from lakectl.table.log import CommitRecord
from lakectl.table.paths import Shape, table_path

if TYPE_CHECKING:
    from lakectl.table.store import TableStore


class WriteTransaction:
    """A reserved write id and what its writer has put on storage so far.

    Use as::

        txn = WriteTransaction.begin(store, "upsert")
        try:
            ...write under txn.staging, add each new directory with txn.added.append(rel)...
            txn.commit(record)
        except BaseException as exc:
            txn.abort(exc)
            raise
    """

    def __init__(self, store: TableStore, write_id: int) -> None:
        self.store = store
        self.write_id = write_id
        self.added: list[str] = []
        """Directories (relative to the table) this writer created; removed on abort."""
        self.committed: CommitRecord | None = None
        self._staging: str | None = None

    @classmethod
    def begin(cls, store: TableStore, operation: str) -> WriteTransaction:
        """Reserve the table's next write id for ``operation``."""
        return cls(store, store.allocate_write_id(operation))

    @property
    def staging(self) -> str:
        """A private staging directory for this writer (created by whoever writes into it)."""
        if self._staging is None:
            self._staging = self.store.staging_path(self.write_id)
        return self._staging

    def commit(self, record: CommitRecord) -> CommitRecord:
        """Append ``record`` to the log; from here on the transaction's files are visible."""
        self.committed = self.store.commit(record)
        return self.committed

    def abort(self, cause: BaseException | str) -> None:
        """Mark the write id aborted and remove what it wrote; nothing once it has committed.

        A Ctrl-C aborts like an error does; a test's simulated crash does nothing, so it leaves
        what a killed writer leaves (``clean`` aborts the write id and removes its files).
        """
        if self.committed is not None or (not isinstance(cause, str) and is_crash(cause)):
            return
        reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        # Each step on its own: when storage is failing (a full disk), the others still run.
        # ``clean`` finishes whatever is left, as it does for a writer that died.
        with contextlib.suppress(Exception):
            self.store.mark_aborted(self.write_id, reason[:500])
        source = f"the directories of write id {self.write_id}"
        storage, root = self.store.storage, self.store.root
        for rel in [*self.added, None]:
            with contextlib.suppress(Exception):
                path = (
                    self._staging
                    if rel is None
                    else table_path(
                        storage, root, rel, Shape.DATA_DIR, source=source, deleting=True
                    )
                )
                if path is not None:
                    storage.delete(path, recursive=True)
