"""``lakectl restore``: a new commit after which the table reads as it did at an earlier version.

Nothing is rewritten and history is kept: the versions between the restored one and now stay
reachable by time travel until ``clean`` removes their files. The commit holds

- delete events for the rows live now that were not live then (added since),
- the rows live then that are not live now (deleted or replaced since), written again as new
  rows, and
- the Type 7 statement changes: statements installed since are retired, statements retired
  since (by ``--materialize``) are active again.

Rows are matched by their ACID identity (originalTransaction, bucket, rowId) within their
partition, which compaction keeps, so a restore across compactions writes only the difference.
It reads the whole table twice (now and then). It conflicts with every concurrent data commit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lakectl.errors import UsageError
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.reading import ReadTarget, choose_state, plan_lakectl
from lakectl.ops.updates import installed_statements, statement_keys, write_updates_file
from lakectl.table.log import ALWAYS, CommitRecord, Operation, TableState
from lakectl.table.store import TableStore
from lakectl.table.transaction import WriteTransaction

_KIND = "__lakectl_restore"


@dataclass
class RestoreResult:
    table: str
    restored_version: int
    dry_run: bool
    version: int | None = None  # the new commit; None for a dry run or when nothing differs
    deleted: int = 0
    reinserted: int = 0
    statements_retired: int = 0
    statements_reactivated: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "restored_version": self.restored_version,
            "dry_run": self.dry_run,
            "version": self.version,
            "counts": {"deleted": self.deleted, "reinserted": self.reinserted},
            "statements": {
                "retired": self.statements_retired,
                "reactivated": self.statements_reactivated,
            },
            "seconds": round(self.seconds, 3),
        }


def restore_version(full: TableState, version: int | None, at: int | None) -> int:
    """The write id to restore: ``version``, or the newest one committed at or before ``at``."""
    if (version is None) == (at is None):
        raise UsageError("restore needs one of --version N or --as-of TIME")
    if version is not None:
        if not 0 <= version <= full.max_write_id:
            raise UsageError(
                f"--version {version}: the table's versions are 0 to {full.max_write_id}"
            )
        return version
    assert at is not None
    return full.known_at(at).max_write_id  # raises TimeTravelError before the table existed


def restore(
    ctx: Context,
    table_ref: str | None,
    *,
    version: int | None = None,
    at: int | None = None,
    dry_run: bool = False,
) -> RestoreResult:
    """Make the table read as it did right after ``version`` (or at commit time ``at``)."""
    started = time.time()
    store = ctx.table(table_ref)
    store.require_log()
    full = store.read_state()
    target_version = restore_version(full, version, at)
    then = choose_state(full, version=target_version)
    result = RestoreResult(store.name or store.url, target_version, dry_run)
    retire, reactivate = _statement_changes(full, then)
    result.statements_retired, result.statements_reactivated = len(retire), len(reactivate)

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)

    ctx.progress(f"comparing the table now with version {target_version}")
    changes = _row_changes(ctx, store, full, then).persist()
    try:
        counts = {r[0]: r[1] for r in changes.groupBy(_KIND).count().collect()}
        result.deleted, result.reinserted = counts.get("delete", 0), counts.get("insert", 0)
        nothing = not (result.deleted or result.reinserted or retire or reactivate)
        if not dry_run and not nothing:
            counts = {"deleted": result.deleted, "reinserted": result.reinserted}
            result.version = _commit(
                ctx, store, full, target_version, changes, counts, retire, reactivate
            )
            write_updates_file(
                store, [i.statement for i in installed_statements(store.read_state())]
            )
    finally:
        changes.unpersist()
    result.seconds = time.time() - started
    return result


def _statement_changes(
    now: TableState, then: TableState
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Statement keys (install version, index) to retire and to make active again."""
    active_now = statement_keys(installed_statements(now))
    active_then = statement_keys(installed_statements(then))
    retire = [list(k) for k in active_now if k not in active_then]
    reactivate = [list(k) for k in active_then if k not in active_now]
    return retire, reactivate


def _row_changes(ctx: Context, store: TableStore, now: TableState, then: TableState) -> Any:
    """Rows to delete (live now, not then) and to write again (live then, not now)."""
    from pyspark.sql import functions as F

    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.spark.types import IDENTITY_COLUMNS

    def rows(state: TableState) -> Any:
        valid, plans, _ = plan_lakectl(store, state)
        target = ReadTarget(store, state.metadata, state, valid, tuple(plans))
        return snapshot_frame(ctx, target, SnapshotRequest(raw=True), with_identity=True)

    meta = now.metadata
    keys = [*IDENTITY_COLUMNS, *meta.partition_by]
    current, earlier = rows(now), rows(then)
    added = current.join(earlier.select(*keys), keys, "left_anti").withColumn(
        _KIND, F.lit("delete")
    )
    gone = earlier.join(current.select(*keys), keys, "left_anti").withColumn(_KIND, F.lit("insert"))
    return added.unionByName(gone)


def _commit(
    ctx: Context,
    store: TableStore,
    full: TableState,
    target_version: int,
    changes: Any,
    counts: dict[str, int],
    retire: list[list[Any]],
    reactivate: list[list[Any]],
) -> int:
    from pyspark.sql import functions as F

    from lakectl.ops.rewrite import touched_partitions, write_transaction_events
    from lakectl.spark import acid_write

    meta = full.metadata
    txn = WriteTransaction.begin(store, Operation.RESTORE)
    try:
        kind = F.col(_KIND)
        events = acid_write.change_events(
            changes,
            meta,
            insert=kind == "insert",
            delete=kind == "delete",
            old=lambda c: F.col(f"`{c}`"),
        )
        rows = counts["deleted"] + counts["reinserted"]
        if rows:
            write_transaction_events(ctx, txn, meta, events, rows)
        failpoint("restore.before_commit")
        ctx.progress("committing")
        touched = touched_partitions(txn.added)
        txn.commit(
            CommitRecord.draft(
                operation=Operation.RESTORE,
                write_id=txn.write_id,
                read_seq=full.last_seq,
                effective_at=ALWAYS,
                partitions=tuple(sorted(touched)),
                added=tuple(sorted(txn.added)),
                counts=counts,
                info={
                    "restored_version": target_version,
                    "retired": retire,
                    "reactivated": reactivate,
                },
            )
        )
    except BaseException as exc:
        txn.abort(exc)
        raise
    return txn.write_id
