"""``lakectl delete`` and ``lakectl update``: one-off DELETE and UPDATE, applied at once.

The request becomes one statement of the same language as Type 7 statements and passes the same
checks (only the table's columns, the vetted functions; nothing reaches Spark as text). It is
then applied to the stored rows exactly as ``apply-updates --materialize`` folds statements
(:mod:`lakectl.spark.statement_fold`): delete events for the rows it deletes or changes, new
rows for the changed ones, written as one transaction, as a load writes them. Rows it does not
touch are not rewritten. Installed Type 7 statements still apply on top when reading.

``--where`` on partition columns (and list-bucketed columns) prunes what is read. The commit
conflicts with a concurrent data commit to a partition it read, as a merge load does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lakectl.errors import UsageError
from lakectl.expr.check import CheckedStatement
from lakectl.ops.context import Context
from lakectl.ops.results import brief
from lakectl.scan.pruning import prune_target
from lakectl.scan.statements import check_reader_costs
from lakectl.scan.target import ReadTarget, plan_lakectl
from lakectl.table.layout import partition_path
from lakectl.table.log import ALWAYS, Operation
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_stored_statement

if TYPE_CHECKING:
    from lakectl.arrow.acid_writer import PartitionChanges
    from lakectl.arrow.row_changes import StatementChanges
    from lakectl.arrow.statements import CompiledStatement
    from lakectl.engine import EngineChoice
    from lakectl.expr.tree import Node
    from lakectl.table.log import TableState
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.schema import Schema
    from lakectl.table.store import TableStore
    from lakectl.table.transaction import WriteTransaction

DmlKind = Literal[Operation.DELETE, Operation.UPDATE]
"""The operations ``delete`` and ``update`` commit as."""
SOURCE = "<command line>"


@dataclass(frozen=True)
class DmlRequest:
    """``delete`` with ``where``, or ``update`` with ``assignments`` (``c = expr, ...``) and an
    optional ``where``; ``dry_run`` counts what would change and writes nothing."""

    kind: DmlKind
    where: str | None = None
    assignments: str | None = None
    dry_run: bool = False
    engine: str | None = None  # spark, arrow or auto; None: the configured engine

    def __post_init__(self) -> None:
        kind = Operation(self.kind)  # the text ("delete") is accepted, the enum is kept
        if kind not in (Operation.DELETE, Operation.UPDATE):
            raise ValueError(f"a row change is a delete or an update, not {kind}")
        object.__setattr__(self, "kind", kind)


@dataclass(frozen=True)
class PartitionChange:
    """Rows one partition would lose (``deleted``) or see rewritten (``updated``)."""

    partition: str
    deleted: int
    updated: int

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "deleted": self.deleted, "updated": self.updated}


@dataclass
class DmlResult:
    table: str
    kind: DmlKind
    statement: str
    dry_run: bool
    version: int | None = None  # None for a dry run or when no row matched
    deleted: int = 0
    updated: int = 0
    partitions: list[PartitionChange] = field(default_factory=list)
    partitions_read: int = 0
    partitions_total: int = 0
    seconds: float = 0.0
    engine: str = "spark"  # the engine that found and wrote the changes
    engine_reason: str = ""
    peak_memory_bytes: int | None = None  # the Arrow engine's: this process's peak memory

    def __repr__(self) -> str:
        return brief(self, "table", "kind", "version", "deleted", "updated", "dry_run")

    @property
    def operation(self) -> DmlKind:
        """delete or update (``kind``)."""
        return self.kind

    @property
    def counts(self) -> dict[str, int]:
        """Rows deleted and updated, as load and history count them."""
        return {"deleted": self.deleted, "updated": self.updated}

    @property
    def scan(self) -> dict[str, int]:
        """Partitions in the table and partitions read (after pruning on ``--where``)."""
        return {"partitions": self.partitions_total, "partitions_read": self.partitions_read}

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "operation": self.operation,
            "statement": self.statement,
            "dry_run": self.dry_run,
            "version": self.version,
            "counts": self.counts,
            "partitions": [p.to_dict() for p in self.partitions],
            "scan": self.scan,
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "peak_memory_bytes": self.peak_memory_bytes,
            "seconds": round(self.seconds, 3),
        }


def statement_text(table: str, request: DmlRequest) -> str:
    """The request as one SQL statement (checked afterwards like any Type 7 statement). The
    ``--set`` text is parsed as a list of assignments and the ``--where`` text as one
    condition, each on its own, and the statement is built from the two trees: neither text
    can end the statement or hide the other."""
    from sqlglot import exp

    from lakectl.expr.check import render_sql
    from lakectl.expr.parse import parse_assignments, parse_condition
    from lakectl.updates.validate import remember_parse

    def rendered(tree: exp.Expression) -> str:
        text = render_sql(tree)
        remember_parse(text, tree)  # checking the statement does not parse --where again
        return text

    where = (request.where or "").strip()
    if request.kind is Operation.DELETE:
        if request.assignments:
            raise UsageError("delete takes no --set; use `lakectl update`")
        if not where:
            raise UsageError(
                "delete needs --where: which rows to delete",
                hint="--where \"store_id = 'S01'\" (to empty a table, say --where true)",
            )
        condition = parse_condition(where, "--where")
        tree: exp.Expression = exp.Delete(this=exp.to_table(table), where=exp.Where(this=condition))
        return rendered(tree)
    assignments = (request.assignments or "").strip()
    if not assignments:
        raise UsageError('update needs --set "column = expression, ..."')
    if request.where is not None and not where:
        raise UsageError("--where is empty: leave it out to update every row")
    update = exp.Update(this=exp.to_table(table), expressions=parse_assignments(assignments))
    if where:
        update.set("where", exp.Where(this=parse_condition(where, "--where")))
    return rendered(update)


def run_dml(ctx: Context, table_ref: str | None, request: DmlRequest) -> DmlResult:
    """Check the statement, then apply it to the current rows as one transaction (or count what
    it would change, for a dry run)."""
    started = time.time()
    store = ctx.table(table_ref)
    store.require_log()
    state = store.read_state()
    meta = state.metadata
    name = "t"
    text = statement_text(name, request)
    statement = Statement(
        effective_ms=0, sql=text, kind=request.kind, table=name, line=1, source=SOURCE
    )
    checked = check_stored_statement(statement, meta.schema)
    check_reader_costs([statement], meta)
    result = DmlResult(store.name or store.url, request.kind, text, request.dry_run)
    valid, plans, _ = plan_lakectl(store, state)
    where = _bound_where(checked, meta.schema)
    target, scan = prune_target(ReadTarget(store, meta, state, valid, tuple(plans)), where)
    result.partitions_total, result.partitions_read = scan.partitions, scan.partitions_read
    choice, compiled = _choose_engine(ctx, request, statement, meta, target)

    def in_arrow(choice: EngineChoice) -> None:
        result.engine, result.engine_reason = choice.engine.value, choice.reason
        if target.plans and compiled is not None:
            _apply_arrow(ctx, store, state, target, compiled, result)

    def in_spark(choice: EngineChoice) -> None:
        result.engine, result.engine_reason = choice.engine.value, choice.reason
        if target.plans:
            _apply_spark(ctx, store, state, target, statement, result)

    from lakectl.engine import run_in_engine

    requested = request.engine or ctx.config.engine
    run_in_engine(requested, choice, in_arrow, in_spark)
    result.seconds = time.time() - started
    return result


def _choose_engine(
    ctx: Context,
    request: DmlRequest,
    statement: Statement,
    meta: TableMetadata,
    target: ReadTarget,
) -> tuple[EngineChoice, CompiledStatement | None]:
    """The engine that applies the statement (``choose_engine``: by the size of the partitions
    it reads) and, for the Arrow engine, the statement compiled for it. Under ``auto`` a
    statement the Arrow engine cannot evaluate as Spark does goes to Spark; asked for by name,
    the Arrow engine refuses it, naming the construct."""
    from lakectl.arrow.acid_writer import unsupported_reason
    from lakectl.engine import Engine, EngineChoice, choose_engine, parse_engine

    requested = parse_engine(request.engine or ctx.config.engine)
    unsupported = unsupported_reason(meta)
    work = sum(d.size for p in target.plans for d in (*p.data_dirs, *p.delete_deltas))
    work += sum(f.size for p in target.plans for f in p.originals)
    choice = choose_engine(requested, work_bytes=work, meta=meta, arrow_unsupported=unsupported)
    if choice.engine is not Engine.ARROW:
        return choice, None
    from lakectl.arrow.statements import compile_statements

    try:
        return choice, compile_statements([statement], meta.schema)[0]
    except UsageError as exc:
        if requested is not Engine.AUTO:
            raise
        reason = f"the Arrow engine cannot evaluate the statement: {exc.message}"
        return EngineChoice(Engine.SPARK, reason), None


def _apply_spark(
    ctx: Context,
    store: TableStore,
    state: TableState,
    target: ReadTarget,
    statement: Statement,
    result: DmlResult,
) -> None:
    """Find the changes with Spark (:mod:`lakectl.spark.statement_fold`) and commit them."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.ops.rewrite import write_transaction_events
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.spark import statement_fold

    meta = target.metadata
    ctx.progress("finding the rows the statement changes")
    rows = snapshot_frame(ctx, target, SnapshotRequest(), with_identity=True)
    changes = statement_fold.fold_changes(rows, [statement], meta).persist()
    try:
        result.partitions = _per_partition(changes, meta.partition_by)

        def write(txn: WriteTransaction) -> None:
            events = statement_fold.changes_to_write(changes, meta)
            changed = result.deleted + result.updated
            write_transaction_events(ctx, txn, meta, events, changed, len(result.partitions))

        _commit(ctx, store, state, target, result, write)
    finally:
        changes.unpersist()


def _apply_arrow(
    ctx: Context,
    store: TableStore,
    state: TableState,
    target: ReadTarget,
    compiled: CompiledStatement,
    result: DmlResult,
) -> None:
    """Find the changes partition by partition in Arrow (:mod:`lakectl.arrow.row_changes`) and
    commit them, written by :func:`lakectl.arrow.acid_writer.write_transaction_changes` as
    each partition's are found: memory holds a few partitions' changes, not the table's. An
    UPDATE that sets a partition column (rows may move to a partition read later) gathers
    the changes of every partition first."""
    from lakectl.arrow.acid_writer import write_transaction_changes
    from lakectl.arrow.bucket_compaction import peak_memory_bytes
    from lakectl.arrow.row_changes import (
        grouped_changes,
        moves_rows,
        own_partition_changes,
        streamed_changes,
        target_merge_spec,
    )

    meta = target.metadata
    ctx.progress("finding the rows the statement changes")
    found = _counted(meta, streamed_changes(target_merge_spec(target), target.plans, compiled))
    if result.dry_run:
        result.partitions = [counted for counted, _ in found]
    elif moves_rows(meta, compiled):
        held = list(found)
        result.partitions = [counted for counted, _ in held]

        def write(txn: WriteTransaction) -> None:
            ctx.progress(f"writing {result.deleted + result.updated:,} change(s)")
            write_transaction_changes(txn, meta, grouped_changes(meta, (c for _, c in held)))

        _commit(ctx, store, state, target, result, write)
    else:
        first = next(found, None)
        if first is not None:
            result.partitions = [first[0]]

            def each() -> Iterator[PartitionChanges]:
                yield own_partition_changes(meta, first[1])
                for counted, change in found:
                    result.partitions.append(counted)
                    yield own_partition_changes(meta, change)

            def write(txn: WriteTransaction) -> None:
                ctx.progress("writing the changes of each partition as it is read")
                write_transaction_changes(txn, meta, each())

            _commit(ctx, store, state, target, result, write)
    result.partitions.sort(key=lambda p: p.partition)
    _count(result)
    result.peak_memory_bytes = peak_memory_bytes()


def _counted(
    meta: TableMetadata, found: Iterator[StatementChanges]
) -> Iterator[tuple[PartitionChange, StatementChanges]]:
    """Each partition's changes with what they count (the partition as read)."""
    from lakectl.arrow.partition_reader import partition_values

    for change in found:
        values = [None if v is None else str(v) for v in partition_values(meta, change.plan)]
        rel = partition_path(list(meta.partition_by), values)
        yield PartitionChange(rel, change.deleted, change.updated), change


def _count(result: DmlResult) -> None:
    """The result's totals from its partitions' counts."""
    result.deleted = sum(p.deleted for p in result.partitions)
    result.updated = sum(p.updated for p in result.partitions)


def _commit(
    ctx: Context,
    store: TableStore,
    state: TableState,
    target: ReadTarget,
    result: DmlResult,
    write: Callable[[WriteTransaction], None],
) -> None:
    """Count the changes found (``result.partitions``) and, unless this is a dry run or
    nothing changes, write them (``write``, which may add the partitions it finds as it
    writes) and commit them as one transaction."""
    _count(result)
    if result.dry_run or not result.partitions:
        return
    with store.transaction(result.kind, read=state) as txn:
        write(txn)
        _count(result)
        ctx.progress("committing")
        txn.commit(
            effective_at=ALWAYS,
            partitions={p.relative for p in target.plans},
            counts={"deleted": result.deleted, "updated": result.updated},
            info={"source": SOURCE, "statement": result.statement},
        )
    result.version = txn.write_id


def _bound_where(checked: CheckedStatement, schema: Schema) -> Node | None:
    """The statement's condition bound to ``schema`` (the tree its rows are chosen by), for
    pruning; None without one."""
    from lakectl.expr.bind import Binder

    if checked.where is None:
        return None
    return Binder(schema, checked.location.at(), checked.location).condition(checked.where)


def _per_partition(
    changes: Any, partition_by: tuple[str, ...] | list[str]
) -> list[PartitionChange]:
    """Deleted and updated rows per partition the rows were read from."""
    from lakectl.spark.statement_fold import CHANGE_COL, OLD

    keys = [OLD + p for p in partition_by]
    counted = changes.groupBy(*keys, CHANGE_COL).count().collect()
    per: dict[str, dict[str, int]] = {}
    for row in counted:
        values = [None if row[k] is None else str(row[k]) for k in keys]
        rel = partition_path(list(partition_by), values)
        per.setdefault(rel, {"delete": 0, "update": 0})[row[CHANGE_COL]] += row["count"]
    return [
        PartitionChange(rel, counts["delete"], counts["update"])
        for rel, counts in sorted(per.items())
    ]
