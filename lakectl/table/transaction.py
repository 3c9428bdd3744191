"""One write transaction: from its start to its commit or abort, the same for every writer.

Every change to a table goes through :func:`transaction` (``with store.transaction(op) as txn``),
so the steps are the same everywhere:

1. begin: an operation that makes a version (:data:`VERSIONED_OPS`) reserves a write id
   (put-if-absent, as Hive's metastore would); a compaction writes its status file;
2. the body writes invisible files under the table (``txn.staging``, ``txn.claim``,
   ``txn.added``) and calls :meth:`WriteTransaction.commit` with the fields only it knows;
3. commit: one log record, built here from what the transaction knows (operation, write id,
   the log position it read, the directories it added and their partitions) plus those fields,
   appended with the conflict check of :meth:`TableStore.commit`;
4. on any failure before the commit: the write id is marked aborted (a compaction's status
   failed) and what the transaction wrote is removed. A failure after the commit changes
   nothing: the record is the truth.

Failpoints (:mod:`lakectl.failpoints`), named after the writer (:data:`FAILPOINT_PREFIX`):
``<writer>.after_begin``, ``<writer>.before_commit``, ``store.before_commit`` (the log append)
and ``<writer>.after_commit``. A simulated crash at any of them skips every cleanup, so storage
is left as a killed writer leaves it. A writer that crashed is recovered by one rule for both
kinds (a write id, a compaction's run), in one place: :mod:`lakectl.table.open_writers` (at
``clean`` and at the start of ``compact`` and ``stream``): it is marked aborted, then ``clean``
deletes its files. A transaction marked aborted from outside refuses to commit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lakectl.errors import CommitConflictError
from lakectl.failpoints import failpoint, is_crash
from lakectl.table.log import DATA_OPS, CommitRecord, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import STAGING_DIR, Shape, check_name, table_path

if TYPE_CHECKING:
    from lakectl.table.compaction_runs import RunStatus
    from lakectl.table.store import TableStore

# Operations that make a version: each reserves a write id, which its record carries.
VERSIONED_OPS = DATA_OPS | frozenset({Operation.APPLY_UPDATES, Operation.LIST_BUCKET})

FAILPOINT_PREFIX: dict[Operation, str] = {
    Operation.APPEND: "load",
    Operation.UPSERT: "load",
    Operation.CDC: "load",
    Operation.DELETE: "dml",
    Operation.UPDATE: "dml",
    Operation.RESTORE: "restore",
    Operation.MATERIALIZE: "materialize",
    Operation.APPLY_UPDATES: "apply_updates",
    Operation.SET_PROPERTIES: "set",
    Operation.ALTER: "alter",
    Operation.COMPACT: "compact",
    Operation.LIST_BUCKET: "list_bucket",
    Operation.CLEAN: "clean",
}
"""The name a writer's failpoints start with (``load.before_commit``, ...)."""


def failpoints_of(operation: Operation) -> tuple[str, ...]:
    """The failpoints a transaction of ``operation`` passes, in order."""
    prefix = FAILPOINT_PREFIX[operation]
    return (
        f"{prefix}.after_begin",
        f"{prefix}.before_commit",
        "store.before_commit",
        f"{prefix}.after_commit",
    )


def touched_partitions(added: list[str] | tuple[str, ...]) -> set[str]:
    """The partitions (``""`` for an unpartitioned table) of directories a writer added."""
    return {a.rsplit("/", 1)[0] if "/" in a else "" for a in added}


class WriteTransaction:
    """A writer between its start and its commit or abort: its write id (``None`` for an
    operation that makes no version), its staging directory, what it has put on storage so far.

    Use through :func:`transaction`, which aborts it on error.
    """

    def __init__(
        self,
        store: TableStore,
        write_id: int | None,
        operation: Operation | str = Operation.APPEND,
        read_seq: int | None = None,
        run: list[RunStatus] | None = None,
    ) -> None:
        self.store = store
        self.write_id = write_id
        self.operation = Operation(operation)
        self.read_seq = read_seq
        """The log position the writer read (``None``: it read nothing it could conflict on)."""
        self.run = run
        """A compaction's status, as :func:`lakectl.table.compaction_runs.tracked` holds it."""
        self.added: list[str] = []
        """Directories (relative to the table) this writer created; removed on abort."""
        self.committed: CommitRecord | None = None
        self._staging: str | None = None

    @classmethod
    def begin(
        cls,
        store: TableStore,
        operation: Operation | str,
        read_seq: int | None = None,
        run: list[RunStatus] | None = None,
    ) -> WriteTransaction:
        """Start ``operation``: reserve the table's next write id when it makes a version."""
        operation = Operation(operation)
        write_id = store.allocate_write_id(operation) if operation in VERSIONED_OPS else None
        return cls(store, write_id, operation, read_seq, run)

    @property
    def version(self) -> int:
        """The write id: the version this transaction makes (operations of
        :data:`VERSIONED_OPS` only)."""
        if self.write_id is None:
            raise ValueError(f"a {self.operation} transaction makes no version")
        return self.write_id

    @property
    def failpoint_prefix(self) -> str:
        return FAILPOINT_PREFIX[self.operation]

    @property
    def staging(self) -> str:
        """A private staging directory for this writer (created by whoever writes into it)."""
        if self._staging is None:
            if self.write_id is not None:
                self._staging = self.store.staging_path(self.write_id)
            elif self.run is not None:
                run_id = check_name(self.run[0].id, Shape.RUN_ID, source="the compaction's id")
                self._staging = self.store.path(STAGING_DIR, f"compact-{run_id}")
            else:
                raise ValueError(f"a {self.operation} transaction writes no files")
        return self._staging

    def claim(self, rel: str, *, source: str) -> None:
        """Take the output directory ``rel`` (not committed, so invisible): whatever a crashed
        writer left there is removed now, and what this one writes there goes if it aborts."""
        path = table_path(
            self.store.storage, self.store.root, rel, Shape.DATA_DIR, source=source, deleting=True
        )
        self.store.storage.delete(path, recursive=True)
        self.added.append(rel)

    def commit(
        self,
        *,
        added: list[str] | tuple[str, ...] | set[str] | None = None,
        partitions: set[str] | tuple[str, ...] = (),
        obsolete: tuple[str, ...] | list[str] = (),
        effective_at: int | None = None,
        counts: dict[str, int] | None = None,
        metadata: TableMetadata | None = None,
        info: dict[str, Any] | None = None,
    ) -> CommitRecord:
        """Commit one record: this transaction's operation, write id, read position and added
        directories (``added`` when only some of those it claimed were written), the partitions
        those lie in plus ``partitions`` (the ones it read), and the operation's own fields.
        From here on its files are visible."""
        failpoint(f"{self.failpoint_prefix}.before_commit")
        self._refuse_when_marked_gone()
        dirs = tuple(sorted(self.added if added is None else added))
        record = CommitRecord.draft(
            operation=self.operation,
            write_id=self.write_id,
            read_seq=self.read_seq,
            effective_at=effective_at,
            partitions=tuple(sorted(set(partitions) | touched_partitions(dirs))),
            added=dirs,
            obsolete=tuple(sorted(obsolete)),
            counts=dict(counts or {}),
            metadata=metadata,
            info=dict(info or {}),
        )
        self.committed = self.store.commit(record)
        if self.run is not None:
            final = self.committed
            self.run[0] = replace(
                self.run[0], state="committed", ended_at=final.committed_at, log_seq=final.seq
            )
        failpoint(f"{self.failpoint_prefix}.after_commit")
        return self.committed

    def _refuse_when_marked_gone(self) -> None:
        """A writer judged gone and marked aborted from outside (:mod:`lakectl.table.
        open_writers`) never commits: what it wrote may be deleted already."""
        if self.write_id is not None:
            marked = self.store.write_id_aborted(self.write_id)
        elif self.run is not None:
            from lakectl.table.compaction_runs import read_status

            current = read_status(self.store, self.run[0].id)
            marked = current is not None and current.state == "failed"
        else:
            return
        if marked:
            raise CommitConflictError(
                f"{self._who()} was marked aborted while this {self.operation} ran (its writer "
                f"was judged gone); nothing of it is visible in {self.store.name or self.store.url}",
                hint="run the command again; a writer is judged gone when its process has ended "
                "or it gave no sign of life for long (see `lakectl clean --dry-run`)",
            )

    def abort(self, cause: BaseException | str) -> None:
        """Mark the write id aborted and remove what the writer wrote; nothing once it has
        committed (a compaction's status is marked failed by its tracker).

        A Ctrl-C aborts like an error does; a test's simulated crash does nothing, so it leaves
        what a killed writer leaves (``clean`` aborts the write id and removes its files).
        """
        if self.committed is not None or (not isinstance(cause, str) and is_crash(cause)):
            return
        reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        # Each step on its own: when storage is failing (a full disk), the others still run.
        # ``clean`` finishes whatever is left, as it does for a writer that died.
        if self.write_id is not None:
            with contextlib.suppress(Exception):
                self.store.mark_aborted(self.write_id, reason[:500])
        source = f"the directories of {self._who()}"
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

    def _who(self) -> str:
        if self.write_id is not None:
            return f"write id {self.write_id}"
        return f"compaction {self.run[0].id}" if self.run is not None else f"a {self.operation}"


@contextlib.contextmanager
def transaction(
    store: TableStore,
    operation: Operation | str,
    *,
    read: TableState | None = None,
    run: RunStatus | None = None,
) -> Iterator[WriteTransaction]:
    """``with transaction(store, op, read=state) as txn: ... txn.commit(...)``: the one way a
    table changes.

    ``read`` is the state the writer read: conflicts are checked against what committed after
    it. ``run`` is a compaction's status: written ``working`` now (with a heartbeat), then
    ``committed`` or ``failed``. Any exception in the block aborts the transaction (see
    :meth:`WriteTransaction.abort`) and goes on; a block that ends without committing aborts
    it too.
    """
    operation = Operation(operation)
    read_seq = read.last_seq if read is not None else None
    with contextlib.ExitStack() as stack:
        holder = None
        if run is not None:
            from lakectl.table.compaction_runs import tracked

            holder = stack.enter_context(tracked(store, run))
        txn = WriteTransaction.begin(store, operation, read_seq, holder)
        try:
            failpoint(f"{txn.failpoint_prefix}.after_begin")
            yield txn
        except BaseException as exc:
            txn.abort(exc)
            raise
        if txn.committed is None:
            txn.abort(f"the {operation} ended without a commit")


def writer_gone(alive: bool | None, last_sign: int | None, now: int, silence: int) -> bool:
    """Has a writer that never committed stopped for good, a load's write id or a compaction's
    run alike? Its process is known to have ended (``alive`` False); or it cannot be checked
    from here and gave no sign of life (allocation, heartbeat) for ``silence`` ms. Every crashed
    writer is judged by this one rule (:meth:`lakectl.table.open_writers.OpenWriter.gone_reason`)."""
    if alive is not None:
        return not alive
    return last_sign is not None and now - last_sign >= silence


def abort_write_id(store: TableStore, write_id: int, reason: str) -> None:
    """Mark the write id of a writer that is gone aborted, from outside it (``clean``): it can
    never commit afterwards, and compactions stop waiting for it."""
    store.mark_aborted(write_id, reason[:500])


__all__ = [
    "FAILPOINT_PREFIX",
    "VERSIONED_OPS",
    "WriteTransaction",
    "abort_write_id",
    "failpoints_of",
    "touched_partitions",
    "transaction",
    "writer_gone",
]
