"""``lakectl apply-updates TABLE --materialize --until T``: fold Type 7 statements into the data.

Compacts the updates into a new version: the active statements effective at or before
T are applied to the stored rows as one ordinary transaction (delete events for the rows they
change or delete, new rows for the changed ones) and retired from the active list by the same
commit, so no reader ever sees both the folded rows and the statements.

What each read sees:

- at any time >= T (and with no ``--as-of``): exactly what it saw before materializing;
- ``--as-of`` before the commit's effective time, or ``--known-at`` before it committed: the
  commit is not part of the state read, so the statements are still active there and the rows
  are the original ones - the same answer as before, by construction.

Decisions:

- Only the leading run of active statements (install order) effective <= T is retired: a
  statement effective <= T that comes after one effective later is applied after it on read, so
  folding it first would change the result. Such statements stay active and are reported.
- The commit's effective time is T, or the latest effective time of any data commit if that is
  later: a load effective after T is dropped by ``--as-of`` reads before its time, and the folded
  rows derived from it must disappear with it.
- T after now is refused: statements not yet effective must not become visible now.
- Rows loaded after materializing are not touched by retired statements (their effect is data
  now, as after any compaction of history); statements still active apply to them as before.

Engines: Spark (:mod:`lakectl.spark.statement_fold`) or, with ``--engine arrow``, the lakectl
process without a JVM (:mod:`lakectl.arrow.statement_fold`, one partition at a time): the same
rule, files and commit record. ``auto`` picks Arrow when the table's files are at most its
``engine.auto.max-bytes`` and the Arrow engine can apply the statements.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from lakectl.engine import Engine, EngineChoice, choose_engine, parse_engine, run_in_engine
from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.results import brief, iso_time
from lakectl.ops.updates import MATERIALIZE_OPERATION, write_updates_file
from lakectl.scan.statements import InstalledStatement, installed_statements, require_usable
from lakectl.table.log import DATA_OPS, TableState
from lakectl.table.store import TableStore, now_millis
from lakectl.times import format_millis, utc

OPERATION = MATERIALIZE_OPERATION


@dataclass(frozen=True)
class MaterializePlan:
    """Which statements a materialize retires, and the commit's effective time (pure)."""

    until: int
    retire: tuple[InstalledStatement, ...]
    held_back: tuple[InstalledStatement, ...]  # effective <= until, after a later one
    remaining: int  # active statements after the commit
    effective_at: int


def plan_materialize(state: TableState, until: int, now: int) -> MaterializePlan:
    """Decide what ``--materialize --until until`` retires in ``state`` (no I/O)."""
    if until > now:
        raise UsageError(
            f"--until {format_millis(until)} is in the future: statements not yet effective "
            "cannot be folded into the data",
            hint="use a time at or before now; `lakectl updates TABLE` lists effective times",
        )
    active = installed_statements(state)
    count = 0
    while count < len(active) and active[count].statement.effective_ms <= until:
        count += 1
    later = active[count:]
    latest_data = max(
        (r.effective_time for r in state.records if r.operation in DATA_OPS), default=until
    )
    return MaterializePlan(
        until=until,
        retire=tuple(active[:count]),
        held_back=tuple(s for s in later if s.statement.effective_ms <= until),
        remaining=len(later),
        effective_at=max(until, latest_data),
    )


@dataclass(frozen=True)
class MaterializeResult:
    table: str
    until: dt.datetime  # UTC
    version: int | None  # None when there was nothing to materialize
    retired_statements: int
    active_statements: int  # still active after the commit
    held_back: int
    counts: dict[str, int] = field(default_factory=dict)
    effective_at: dt.datetime | None = None  # UTC
    added: tuple[str, ...] = ()
    engine: str = "spark"
    engine_reason: str = ""

    def __repr__(self) -> str:
        return brief(self, "table", "version", "retired_statements", "active_statements")

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "until": iso_time(self.until),
            "version": self.version,
            "effective_at": iso_time(self.effective_at),
            "retired_statements": self.retired_statements,
            "active_statements": self.active_statements,
            "held_back": self.held_back,
            "counts": self.counts,
            "added": list(self.added),
            "engine": self.engine,
            "engine_reason": self.engine_reason,
        }


def materialize(
    ctx: Context, table_ref: str | None, until: int, engine: str | None = None
) -> MaterializeResult:
    """Fold the active statements effective at or before ``until`` into the data; retire them.
    ``engine``: ``spark``, ``arrow`` or ``auto`` (default: the configured engine)."""
    store = ctx.table(table_ref)
    store.require_log()
    state = store.read_state()
    plan = plan_materialize(state, until, now_millis())
    name = store.name or store.url
    if not plan.retire:
        return MaterializeResult(name, utc(until), None, 0, plan.remaining, len(plan.held_back))
    requested = parse_engine(engine or ctx.config.engine)
    choice, version, counts, added = _fold_and_commit(ctx, store, state, plan, requested)
    write_updates_file(store, [i.statement for i in installed_statements(store.read_state())])
    return MaterializeResult(
        name,
        utc(until),
        version,
        len(plan.retire),
        plan.remaining,
        len(plan.held_back),
        counts,
        utc(plan.effective_at),
        added,
        choice.engine.value,
        choice.reason,
    )


def _commit_info(plan: MaterializePlan) -> dict[str, Any]:
    """The commit record's ``info``: the statements retired (the same with either engine)."""
    return {
        "source": f"statements effective <= {format_millis(plan.until)}",
        "until": plan.until,
        "retired": [[i.version, i.index] for i in plan.retire],
        "retired_sql": [i.statement.sql for i in plan.retire],
    }


def _fold_and_commit(
    ctx: Context, store: TableStore, state: TableState, plan: MaterializePlan, requested: Engine
) -> tuple[EngineChoice, int, dict[str, int], tuple[str, ...]]:
    """Write the folded rows as a new write id and commit it with the retirement, in the
    engine ``requested`` (or, ``auto``, chosen by size)."""
    from lakectl.scan.target import ReadTarget, plan_lakectl

    meta = state.metadata
    statements = require_usable(list(plan.retire), meta)
    valid, plans, _ = plan_lakectl(store, state)
    target = ReadTarget(store, meta, state, valid, tuple(plans))
    problem = None
    if requested is not Engine.SPARK:
        from lakectl.ops.materialize_arrow import arrow_problem

        problem = arrow_problem(meta, statements)
    choice = choose_engine(
        requested,
        work_bytes=sum(f.size for p in plans for d in p.data_dirs for f in d.files),
        meta=meta,
        arrow_unsupported=problem,
    )

    def in_arrow(choice: EngineChoice) -> tuple[EngineChoice, int, dict[str, int], tuple[str, ...]]:
        from lakectl.ops.materialize_arrow import fold_and_commit_arrow

        ctx.progress(f"folding {len(plan.retire)} statement(s) into the rows")
        version, counts, added = fold_and_commit_arrow(
            store, state, target, statements, plan.effective_at, _commit_info(plan)
        )
        return choice, version, counts, added

    def in_spark(choice: EngineChoice) -> tuple[EngineChoice, int, dict[str, int], tuple[str, ...]]:
        return (choice, *_fold_and_commit_spark(ctx, store, state, target, plan, statements))

    return run_in_engine(requested, choice, in_arrow, in_spark)


def _fold_and_commit_spark(
    ctx: Context,
    store: TableStore,
    state: TableState,
    target: Any,
    plan: MaterializePlan,
    statements: list[Any],
) -> tuple[int, dict[str, int], tuple[str, ...]]:
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.ops.rewrite import write_transaction_events
    from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
    from lakectl.spark import statement_fold

    meta = state.metadata
    ctx.progress(f"folding {len(plan.retire)} statement(s) into the rows")
    rows = snapshot_frame(ctx, target, SnapshotRequest(), with_identity=True)
    changes = statement_fold.fold_changes(rows, statements, meta).persist()
    try:
        with store.transaction(OPERATION, read=state) as txn:
            write_id, added = txn.version, txn.added
            by_kind = {
                r[0]: r[1] for r in changes.groupBy(statement_fold.CHANGE_COL).count().collect()
            }
            counts = {
                "rewritten": by_kind.get("update", 0),
                "deleted": by_kind.get("delete", 0),
                "retired": len(plan.retire),
            }
            if by_kind:
                events = statement_fold.changes_to_write(changes, meta)
                write_transaction_events(ctx, txn, meta, events, sum(by_kind.values()))
            ctx.progress("committing")
            txn.commit(effective_at=plan.effective_at, counts=counts, info=_commit_info(plan))
    finally:
        changes.unpersist()
    return write_id, counts, tuple(sorted(added))
