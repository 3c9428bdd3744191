"""``lakectl restore``: a new commit after which the table reads as it did at an earlier version.

Nothing is rewritten and history is kept: the versions between the restored one and now stay
reachable by time travel until ``clean`` removes their files. The commit holds

- delete events for the rows live now that were not live then (added since),
- the rows live then that are not live now (deleted or replaced since), written again as new
  rows, with a delete event for the original, and a delete event for each row added and deleted
  since (both repeat a deletion, so that ``--raw`` reads, which leave out ``materialize``
  commits, read as at the restored version too), and
- the Type 7 statement changes: statements installed since are retired, statements retired
  since (by ``--materialize``) are active again.

Rows are matched by their ACID identity (originalTransaction, bucket, rowId) within their
partition, which compaction keeps, so a restore across compactions writes only the difference.

What it reads follows the change since the restored version (:func:`change_scope`): the rows
added since live in the directories committed since, and the rows deleted since are the ones
the delete events committed since name, read from the files that held them then (only the
partitions those events touch, only the directories whose write ids they name). When a
compaction or a schema change since then moved rows to other files, it compares the whole table
now and then instead. It conflicts with every concurrent data commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.results import brief
from lakectl.ops.updates import write_updates_file
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.statements import installed_statements, statement_keys
from lakectl.scan.target import ReadTarget, choose_state, plan_lakectl, with_written_schemas
from lakectl.table.listing import DirListing
from lakectl.table.log import ALWAYS, COMPACT_OPS, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    from lakectl.arrow.restore_diff import PartitionDiff
    from lakectl.engine import EngineChoice
    from lakectl.table.transaction import WriteTransaction

_KIND = "__lakectl_restore"
# A row added and deleted since the restored version: it gets a delete event of the restore's
# too (see _deleted_since); not counted.
_AGAIN = "delete again"

# How a restore found the difference: from the changes since the restored version, or by
# comparing the whole table now and then.
Method = Literal["changes", "full"]


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
    method: Method = "full"
    directories_read: int = 0  # ACID directories the comparison read (data and delete)
    bytes_read: int = 0  # the size of their files
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    engine: str = "spark"  # the engine that found and wrote the difference
    engine_reason: str = ""

    def __repr__(self) -> str:
        return brief(
            self, "table", "restored_version", "version", "deleted", "reinserted", "dry_run"
        )

    @property
    def counts(self) -> dict[str, int]:
        """Rows deleted and reinserted."""
        return {"deleted": self.deleted, "reinserted": self.reinserted}

    @property
    def statements(self) -> dict[str, int]:
        """Type 7 statements retired and reactivated."""
        return {"retired": self.statements_retired, "reactivated": self.statements_reactivated}

    @property
    def read(self) -> dict[str, Any]:
        """How the change was found (``method``) and what it read."""
        return {
            "method": self.method,
            "directories": self.directories_read,
            "bytes": self.bytes_read,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "restored_version": self.restored_version,
            "dry_run": self.dry_run,
            "version": self.version,
            "counts": self.counts,
            "statements": self.statements,
            "read": self.read,
            "notes": list(self.notes),
            "engine": self.engine,
            "engine_reason": self.engine_reason,
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
    engine: str | None = None,
) -> RestoreResult:
    """Make the table read as it did right after ``version`` (or at commit time ``at``), with
    ``engine`` (spark, arrow or auto; default: the configured one)."""
    started = time.time()
    store = ctx.table(table_ref)
    store.require_log()
    full = store.read_state()
    target_version = restore_version(full, version, at)
    then = choose_state(full, version=target_version)
    result = RestoreResult(store.name or store.url, target_version, dry_run)
    retire, reactivate = _statement_changes(full, then)
    _check_reactivated(full, then, reactivate)
    result.statements_retired, result.statements_reactivated = len(retire), len(reactivate)

    scope = change_scope(full, then)
    choice = _choose_engine(ctx, engine, store, full, then, scope)
    if scope.fallback is None:
        ctx.progress(f"reading the changes since version {target_version}")
        result.method = "changes"
    else:
        ctx.progress(f"comparing the table now with version {target_version}")
        result.notes.append(f"compared the whole table: {scope.fallback}")

    def run(restore_in: Callable[..., None]) -> Callable[[EngineChoice], None]:
        def in_engine(choice: EngineChoice) -> None:
            result.engine, result.engine_reason = choice.engine.value, choice.reason
            restore_in(ctx, store, full, then, scope, result, retire, reactivate)

        return in_engine

    from lakectl.engine import run_in_engine

    run_in_engine(engine or ctx.config.engine, choice, run(_restore_arrow), run(_restore_spark))
    result.seconds = time.time() - started
    return result


def _choose_engine(
    ctx: Context,
    engine: str | None,
    store: TableStore,
    now: TableState,
    then: TableState,
    scope: ChangeScope,
) -> EngineChoice:
    """The engine that finds and writes the difference (``choose_engine``; the work is the
    size of the partitions the restore reads, as they are now)."""
    from lakectl.arrow.acid_writer import unsupported_reason
    from lakectl.engine import Engine, choose_engine, parse_engine

    meta = now.metadata
    unsupported = unsupported_reason(meta)
    if unsupported is None and tuple(then.metadata.partition_by) != tuple(meta.partition_by):
        unsupported = "a restore across a change of the partition columns"
    requested = parse_engine(engine or ctx.config.engine)
    work = 0
    if requested is Engine.AUTO:  # only auto weighs the work (a listing of the table)
        plans = _target(store, now).plans
        if scope.fallback is None:
            touched = {
                p.relative
                for p in (_since_only(p, scope.since) for p in plans)
                if p.data_dirs or p.delete_deltas
            }
            plans = tuple(p for p in plans if p.relative in touched)
        work = _Read.of(plans).bytes
    return choose_engine(requested, work_bytes=work, meta=meta, arrow_unsupported=unsupported)


def _restore_spark(
    ctx: Context,
    store: TableStore,
    full: TableState,
    then: TableState,
    scope: ChangeScope,
    result: RestoreResult,
    retire: list[list[Any]],
    reactivate: list[list[Any]],
) -> None:
    """Find the difference with Spark and commit it."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)

    if scope.fallback is None:
        found = _changes_since(ctx, store, full, then, scope.since)
    else:
        found = _row_changes(ctx, store, full, then)
    result.directories_read, result.bytes_read = found.read.directories, found.read.bytes
    changes = found.frame.persist()
    try:
        counts = {r[0]: r[1] for r in changes.groupBy(_KIND).count().collect()}
        result.deleted, result.reinserted = counts.get("delete", 0), counts.get("insert", 0)

        def write(txn: WriteTransaction) -> None:
            events = _spark_events(changes, full.metadata)
            rows = result.deleted + 2 * result.reinserted
            from lakectl.ops.rewrite import write_transaction_events

            write_transaction_events(ctx, txn, full.metadata, events, rows)

        _finish(ctx, store, full, result, retire, reactivate, write)
    finally:
        changes.unpersist()


def _restore_arrow(
    ctx: Context,
    store: TableStore,
    full: TableState,
    then: TableState,
    scope: ChangeScope,
    result: RestoreResult,
    retire: list[list[Any]],
    reactivate: list[list[Any]],
) -> None:
    """Find the difference partition by partition in Arrow (:mod:`lakectl.arrow.restore_diff`)
    and commit it, written by :func:`lakectl.arrow.acid_writer.write_transaction_changes`."""
    from lakectl.arrow.acid_writer import write_transaction_changes

    if scope.fallback is None:
        diffs, read = _arrow_changes_since(store, full, then, scope.since)
    else:
        diffs, read = _arrow_row_changes(store, full, then)
    result.directories_read, result.bytes_read = read.directories, read.bytes
    result.deleted = sum(d.deleted.num_rows for d in diffs)
    result.reinserted = sum(d.reinserted.num_rows for d in diffs)
    meta = full.metadata

    def write(txn: WriteTransaction) -> None:
        ctx.progress(f"writing {result.deleted + 2 * result.reinserted:,} change(s)")
        write_transaction_changes(txn, meta, (d.changes(meta) for d in diffs))

    _finish(ctx, store, full, result, retire, reactivate, write)


def _finish(
    ctx: Context,
    store: TableStore,
    full: TableState,
    result: RestoreResult,
    retire: list[list[Any]],
    reactivate: list[list[Any]],
    write: Callable[[WriteTransaction], None],
) -> None:
    """Commit the restore (unless this is a dry run or nothing differs) and write the
    statements file of the statements active after it."""
    nothing = not (result.deleted or result.reinserted or retire or reactivate)
    if result.dry_run or nothing:
        return
    counts = {"deleted": result.deleted, "reinserted": result.reinserted}
    result.version = _commit(
        ctx, store, full, result.restored_version, counts, retire, reactivate, write
    )
    write_updates_file(store, [i.statement for i in installed_statements(store.read_state())])


def _statement_changes(
    now: TableState, then: TableState
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Statement keys (install version, index) to retire and to make active again."""
    active_now = statement_keys(installed_statements(now))
    active_then = statement_keys(installed_statements(then))
    retire = [list(k) for k in active_now if k not in active_then]
    reactivate = [list(k) for k in active_then if k not in active_now]
    return retire, reactivate


def _check_reactivated(now: TableState, then: TableState, keys: list[list[Any]]) -> None:
    """Refuse a restore that would make a statement active again that no longer checks against
    today's schema (it names a column renamed since)."""
    from lakectl.errors import BadInputError
    from lakectl.updates.validate import check_stored_statement

    wanted = {tuple(k) for k in keys}
    for entry in installed_statements(then):
        if (entry.version, entry.index) not in wanted or entry.problem is not None:
            continue
        try:
            check_stored_statement(entry.statement, now.metadata.schema, entry.origin, True)
        except BadInputError as exc:
            raise UsageError(
                f"the restore would make {entry.origin} active again, but it no longer fits "
                f"the table's columns ({exc.message})",
                hint="restore a version after that statement was materialized, or rename the "
                "column back first",
            ) from exc


@dataclass(frozen=True)
class ChangeScope:
    """What a restore reads: ``since``, the directories committed after the restored version,
    or, when ``fallback`` says why, the whole table now and then."""

    since: frozenset[str]
    fallback: str | None = None


def change_scope(now: TableState, then: TableState) -> ChangeScope:
    """Whether the commits after ``then`` (a prefix of ``now``) tell the difference by
    themselves: every row added since lies in a directory they committed, and every row
    deleted since is named by a delete event they committed, as long as no compaction or list
    bucketing moved rows to other files and the schema is the one ``then`` reads with."""
    seqs = [r.seq for r in now.records]
    if seqs[: len(then.records)] != [r.seq for r in then.records]:
        return ChangeScope(frozenset(), "the restored version is not a prefix of the log")
    later = now.records[len(then.records) :]
    for record in later:
        if record.operation in COMPACT_OPS:
            return ChangeScope(frozenset(), f"{record.operation} rewrote files since then")
        if record.metadata is not None and (
            record.metadata.schema != then.metadata.schema
            or tuple(record.metadata.partition_by) != tuple(then.metadata.partition_by)
        ):
            return ChangeScope(frozenset(), "the schema changed since then")
    return ChangeScope(frozenset(d for r in later for d in r.added))


@dataclass(frozen=True)
class _Read:
    """ACID directories and bytes a comparison reads (a directory read twice counts twice)."""

    directories: int = 0
    bytes: int = 0

    @classmethod
    def of(cls, plans: Iterable[PartitionReadPlan]) -> _Read:
        dirs = [d for p in plans for d in (*p.data_dirs, *p.delete_deltas)]
        return cls(len(dirs), sum(d.size for d in dirs))

    def __add__(self, other: _Read) -> _Read:
        return _Read(self.directories + other.directories, self.bytes + other.bytes)


@dataclass(frozen=True)
class _Found:
    frame: Any  # rows with identity and _KIND: "delete" (live now only) or "insert" (then only)
    read: _Read  # what was read to find them


def _since_only(plan: PartitionReadPlan, since: frozenset[str]) -> PartitionReadPlan:
    """``plan`` with only the directories committed since the restored version."""
    return replace(
        plan,
        base=plan.base if plan.base is not None and plan.base.relative in since else None,
        deltas=tuple(d for d in plan.deltas if d.relative in since),
        delete_deltas=tuple(d for d in plan.delete_deltas if d.relative in since),
    )


def _identity_rows(ctx: Context, target: ReadTarget) -> Any:
    """The rows of ``target``'s plans with their ACID identity (no Type 7 statements)."""
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame

    return snapshot_frame(ctx, target, SnapshotRequest(raw=True), with_identity=True)


def _target(
    store: TableStore,
    state: TableState,
    only: set[str] | None = None,
    columns_of: TableState | None = None,
) -> ReadTarget:
    """A read of ``state``, in the columns of ``columns_of`` (a later state of the table;
    default: ``state`` itself): its rows as a read of that state shows them, columns added
    since at their default, renamed ones under their new name, widened ones cast."""
    valid, plans, _ = plan_lakectl(store, state, only)
    if columns_of is None:
        return ReadTarget(store, state.metadata, state, valid, tuple(plans))
    plans = with_written_schemas(plans, columns_of)
    return ReadTarget(store, columns_of.metadata, state, valid, tuple(plans))


def _row_changes(ctx: Context, store: TableStore, now: TableState, then: TableState) -> _Found:
    """Rows to delete (live now, not then) and to write again (live then, not now), by
    comparing the whole table now and then."""
    from pyspark.sql import functions as F

    from lakectl.spark.types import IDENTITY_COLUMNS

    meta = now.metadata
    keys = [*IDENTITY_COLUMNS, *meta.partition_by]
    current_target, earlier_target = _target(store, now), _target(store, then, columns_of=now)
    current, earlier = _identity_rows(ctx, current_target), _identity_rows(ctx, earlier_target)
    added = current.join(earlier.select(*keys), keys, "left_anti").withColumn(
        _KIND, F.lit("delete")
    )
    gone = earlier.join(current.select(*keys), keys, "left_anti").withColumn(_KIND, F.lit("insert"))
    read = _Read.of(current_target.plans) + _Read.of(earlier_target.plans)
    frame = added.unionByName(gone)
    replaced = _deleted_since(ctx, current_target, current, then)
    if replaced is not None:
        frame = frame.unionByName(replaced, allowMissingColumns=True)
    return _Found(frame, read)


def _changes_since(
    ctx: Context, store: TableStore, now: TableState, then: TableState, since: frozenset[str]
) -> _Found:
    """:func:`_row_changes` from the commits since ``then`` (see :func:`change_scope`)."""
    from pyspark.sql import functions as F

    from lakectl.spark.kernel_read import kernel_identities
    from lakectl.spark.snapshot_rows import target_spec
    from lakectl.spark.types import IDENTITY_COLUMNS

    meta = now.metadata
    current = _target(store, now)
    # Rows added since: the live rows of the data directories committed since (only delete
    # events committed since can name them).
    changed = [_since_only(p, since) for p in current.plans]
    written = [p for p in changed if p.data_dirs]
    added = _identity_rows(ctx, replace(current, plans=tuple(written)))
    replaced = _deleted_since(ctx, replace(current, plans=tuple(written)), added, then)
    # Rows deleted since: the delete events committed since name them.
    deleting = [replace(p, base=None, deltas=()) for p in changed if p.delete_deltas]
    read = _Read.of(written) + _Read.of(deleting)
    spec = target_spec(replace(current, plans=tuple(deleting)))
    events = kernel_identities(ctx.spark(), deleting, spec, deletes=True)
    earlier = _target(store, then, {p.relative for p in deleting})
    if events is None or not earlier.plans:
        gone = _identity_rows(ctx, replace(earlier, plans=()))
    else:
        named = {int(r[0]) for r in events.select("originalTransaction").distinct().collect()}
        holding = [_holding(p, named) for p in earlier.plans]
        holding = [p for p in holding if p.data_dirs]
        read += _Read.of(holding)
        rows = _identity_rows(ctx, replace(earlier, plans=tuple(holding))).alias("r")
        on = [F.col(f"r.{c}") == F.col(f"e.{c}") for c in IDENTITY_COLUMNS] + [
            F.col(f"r.`{c}`").eqNullSafe(F.col(f"e.`{c}`")) for c in meta.partition_by
        ]
        gone = rows.join(events.alias("e"), on, "left_semi")
    frame = added.withColumn(_KIND, F.lit("delete")).unionByName(
        gone.withColumn(_KIND, F.lit("insert"))
    )
    if replaced is not None:
        frame = frame.unionByName(replaced, allowMissingColumns=True)
    return _Found(frame, read)


def _deleted_since(ctx: Context, target: ReadTarget, live: Any, then: TableState) -> Any:
    """The rows of ``target`` added after ``then`` that are not ``live`` any more, by their
    identity, as :data:`_AGAIN` changes: deleted again by the restore, a no-op where the
    deleting commit is read, but what keeps a read that leaves that commit out (``--raw``
    leaves out a ``materialize``) from showing them. (A major compaction since dropped what it
    deleted: those rows are not found.)"""
    from pyspark.sql import functions as F

    from lakectl.spark.kernel_read import kernel_identities
    from lakectl.spark.snapshot_rows import target_spec
    from lakectl.spark.types import IDENTITY_COLUMNS

    first_new = then.max_write_id + 1
    spec = target_spec(target)
    events = kernel_identities(
        ctx.spark(), target.plans, spec, deletes=False, first_write_id=first_new
    )
    if events is None:
        return None
    parts = list(target.metadata.partition_by)
    ids = events.select(*IDENTITY_COLUMNS, *[F.col(f"`{c}`") for c in parts]).alias("e")
    on = [F.col(f"e.{c}") == F.col(f"l.{c}") for c in IDENTITY_COLUMNS] + [
        F.col(f"e.`{c}`").eqNullSafe(F.col(f"l.`{c}`")) for c in parts
    ]
    gone = ids.join(live.alias("l"), on, "left_anti")
    return gone.withColumn(_KIND, F.lit(_AGAIN))


def _holding(plan: PartitionReadPlan, write_ids: set[int]) -> PartitionReadPlan:
    """``plan`` with only the data directories that can hold rows first written by one of
    ``write_ids`` (a base: any write id up to its own; a delta: its range)."""

    def holds(d: DirListing) -> bool:
        low = 0 if d.acid.is_base else d.acid.min_write_id
        return any(low <= w <= d.acid.max_write_id for w in write_ids)

    base = plan.base if plan.base is not None and holds(plan.base) else None
    return replace(plan, base=base, deltas=tuple(d for d in plan.deltas if holds(d)))


def _spark_events(changes: Any, meta: TableMetadata) -> Any:
    """The events of the Spark path's changes: a delete event for every row (see
    :func:`_commit`), its values as a new row for a row written again."""
    from pyspark.sql import functions as F

    from lakectl.spark import event_write

    return event_write.change_events(
        changes,
        meta,
        insert=F.col(_KIND) == "insert",
        delete=F.lit(True),
        old=lambda c: F.col(f"`{c}`"),
    )


def _commit(
    ctx: Context,
    store: TableStore,
    full: TableState,
    target_version: int,
    counts: dict[str, int],
    retire: list[list[Any]],
    reactivate: list[list[Any]],
    write: Callable[[WriteTransaction], None],
) -> int:
    # A row written again also gets a delete event for its original identity, and a row
    # added and deleted since one of its own (_deleted_since). Both repeat a deletion (a
    # no-op), but a read that leaves the deleting commit out (``--raw`` leaves out a
    # ``materialize``) would otherwise see the original beside its copy, or a row added
    # after the restored version.
    with store.transaction(Operation.RESTORE, read=full) as txn:
        if counts["deleted"] + 2 * counts["reinserted"]:
            write(txn)
        ctx.progress("committing")
        txn.commit(
            effective_at=ALWAYS,
            counts=counts,
            info={
                "restored_version": target_version,
                "retired": retire,
                "reactivated": reactivate,
            },
        )
    return txn.version


def _arrow_changes_since(
    store: TableStore, now: TableState, then: TableState, since: frozenset[str]
) -> tuple[list[PartitionDiff], _Read]:
    """:func:`_changes_since` in Arrow, partition by partition: the same plans read, the same
    rows found."""
    import pyarrow.compute as pc

    from lakectl.arrow.partition_reader import partition_values
    from lakectl.arrow.restore_diff import event_ids, since_changes
    from lakectl.arrow.row_changes import target_merge_spec

    meta = now.metadata
    current = _target(store, now)
    changed = [_since_only(p, since) for p in current.plans]
    written = {p.relative: p for p in changed if p.data_dirs}
    deleting = {p.relative: replace(p, base=None, deltas=()) for p in changed if p.delete_deltas}
    read = _Read.of(written.values()) + _Read.of(deleting.values())
    now_spec = target_merge_spec(current)
    events = {rel: event_ids(now_spec, p, deletes=True) for rel, p in deleting.items()}
    holding: dict[str, PartitionReadPlan] = {}
    earlier = _target(store, then, set(deleting)) if deleting else None
    if earlier is not None and earlier.plans:
        named = {
            int(w) for t in events.values() for w in pc.unique(t["originalTransaction"]).to_pylist()
        }
        holding = {p.relative: h for p in earlier.plans if (h := _holding(p, named)).data_dirs}
        read += _Read.of(holding.values())
    then_spec = target_merge_spec(earlier) if earlier is not None else now_spec
    first_new = then.max_write_id + 1
    diffs = []
    for rel in sorted({*written, *deleting}):
        plan = written.get(rel) or deleting[rel]
        gone = events.get(rel)
        diff = since_changes(
            partition_values(meta, plan),
            (now_spec, written.get(rel)),
            (then_spec, holding.get(rel) if gone is not None else None),
            gone if gone is not None else event_ids(now_spec, None, deletes=True),
            first_new,
        )
        diffs.append(diff)
    return diffs, read


def _arrow_row_changes(
    store: TableStore, now: TableState, then: TableState
) -> tuple[list[PartitionDiff], _Read]:
    """:func:`_row_changes` in Arrow: each partition compared whole, now and then."""
    from lakectl.arrow.partition_reader import partition_values
    from lakectl.arrow.restore_diff import compared
    from lakectl.arrow.row_changes import target_merge_spec

    meta = now.metadata
    current_target, earlier_target = _target(store, now), _target(store, then, columns_of=now)
    read = _Read.of(current_target.plans) + _Read.of(earlier_target.plans)
    now_spec, then_spec = target_merge_spec(current_target), target_merge_spec(earlier_target)
    nows = {p.relative: p for p in current_target.plans}
    thens = {p.relative: p for p in earlier_target.plans}
    first_new = then.max_write_id + 1
    diffs = []
    for rel in sorted({*nows, *thens}):
        plan = nows.get(rel) or thens[rel]
        diffs.append(
            compared(
                partition_values(meta, plan),
                (now_spec, nows.get(rel)),
                (then_spec, thens.get(rel)),
                first_new,
            )
        )
    return diffs, read
