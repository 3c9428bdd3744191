"""``lakectl list-bucket``: rewrite partitions into one directory per skewed value (or back).

Layout and rules: :mod:`lakectl.planning.list_bucket_plan`. The rewrite is a major compaction
with a split output: per chosen partition the base and the deltas below the lowest open write id
become ``base_<top>_v<W>/x=6/...``, ``.../HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME/...``, rows keeping
their identity (``W`` is a write id this command takes, so every rewrite has a fresh name). One
``list-bucket`` commit record adds every new base with its mapping and marks the inputs obsolete:
readers see all partitions rewritten or none.

Conflicts: like ``compact``, none. Rows keep their (originalTransaction, bucket, rowId), so the
delete events of a load committing meanwhile still find them; the load's own delta is above the
new base and is read on top of it. Valid-time reads (``--as-of``) skip the rewrite as they skip a
compaction that folded in write ids not yet effective.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.ops.skew import PartitionSkew, check_options, measure_skew, select_partitions
from lakectl.planning.list_bucket_plan import (
    INFO_KEY,
    OPERATION,
    ListBucketing,
    PartitionDecision,
    decide_rewrite,
    layout_of,
    layouts_by_dir,
    parse_keys,
    validate_columns,
    validate_partition,
)
from lakectl.scan.target import committed_dirs, plan_lakectl

if TYPE_CHECKING:
    from lakectl.engine import Engine, EngineChoice
    from lakectl.planning.compaction_plan import PartitionCompaction
    from lakectl.table.log import CommitRecord, TableState
    from lakectl.table.store import TableStore
    from lakectl.table.transaction import WriteTransaction


@dataclass(frozen=True)
class ListBucketOptions:
    """``keys`` (the ``--keys`` text), ``auto`` (take ``skew``'s recommendation) or ``off``."""

    columns: tuple[str, ...] = ()
    keys: str | None = None
    auto: bool = False
    off: bool = False
    partitions: tuple[str, ...] = ()
    min_share: float = 0.01
    max_values: int = 10
    dry_run: bool = False
    engine: str | None = None
    """``spark``, ``arrow`` or ``auto`` (:mod:`lakectl.engine`); ``None``: the configured one."""


@dataclass
class ListBucketResult:
    table: str
    decisions: list[PartitionDecision]
    skew: list[PartitionSkew] = field(default_factory=list)
    dry_run: bool = False
    version: int | None = None
    log_seq: int | None = None
    rows_written: int = 0
    seconds: float = 0.0
    engine: str = ""
    """The engine that rewrote the partitions (``spark`` or ``arrow``; empty: nothing
    rewritten); ``engine_reason`` says why."""
    engine_reason: str = ""

    @property
    def committed(self) -> bool:
        """Whether this run committed (``log_seq`` is its log entry)."""
        return self.log_seq is not None

    @property
    def partitions(self) -> list[PartitionDecision]:
        """The decision for each partition (``decisions``)."""
        return self.decisions

    @property
    def rewritten(self) -> list[PartitionDecision]:
        return [d for d in self.decisions if d.compaction is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "dry_run": self.dry_run,
            "committed": self.committed,
            "version": self.version,
            "log_seq": self.log_seq,
            "rows_written": self.rows_written,
            "partitions": [d.to_json() for d in self.decisions],
            "skew": [s.to_dict() for s in self.skew],
            "engine": self.engine or None,
            "engine_reason": self.engine_reason or None,
            "seconds": round(self.seconds, 3),
        }


def _check_options(options: ListBucketOptions) -> None:
    chosen = [
        name
        for name, on in (
            ("--keys", options.keys is not None),
            ("--auto", options.auto),
            ("--off", options.off),
        )
        if on
    ]
    if len(chosen) != 1:
        raise UsageError(
            "choose exactly one of --keys, --auto or --off"
            + (f" (got {' and '.join(chosen)})" if chosen else "")
        )
    if options.off and options.columns:
        raise UsageError("--off takes no --column: it rewrites the chosen partitions plain")
    if options.auto:
        check_options(1, options.min_share, options.max_values)


def list_bucket(
    ctx: Context, table_ref: str | None, options: ListBucketOptions
) -> ListBucketResult:
    """Decide per partition, rewrite the ones that change, commit once (nothing when dry run),
    in the engine ``options.engine`` names (else the configured one)."""
    from lakectl.engine import parse_engine, run_in_engine
    from lakectl.ops.rewrite import lowest_open_write_id

    started = time.time()
    _check_options(options)
    requested = parse_engine(options.engine or ctx.config.engine)
    store = ctx.table(table_ref)
    state = store.read_state()
    meta = state.metadata
    columns = () if options.off else validate_columns(meta, options.columns)
    _, plans, _ = plan_lakectl(store, state)
    plans = select_partitions(meta, plans, options.partitions)
    for plan in plans:
        validate_partition(plan)
    result = ListBucketResult(store.name or store.url, [], dry_run=options.dry_run)
    wanted: dict[str, ListBucketing | None] = {p.relative: None for p in plans}
    if options.keys is not None:
        types = [meta.schema[c].type for c in columns]
        keys = parse_keys(options.keys, columns, types)
        wanted = {p.relative: ListBucketing(columns, keys) for p in plans}
    elif options.auto:
        ctx.progress(f"measuring skew of {', '.join(columns)}")
        result.skew, _ = measure_skew(
            ctx,
            store,
            state,
            plans,
            columns,
            options.max_values,
            options.min_share,
            options.max_values,
            requested,
        )
        wanted = {
            s.partition: ListBucketing(columns, s.recommended) if s.recommended else None
            for s in result.skew
        }
    layouts = layouts_by_dir(state.records)
    # The log first, then the allocations: a write id allocated in between counts as open.
    lowest_open = lowest_open_write_id(store, state)

    def decide(visibility: int) -> list[PartitionDecision]:
        return [
            decide_rewrite(
                plan,
                layout_of(plan, layouts),
                wanted[plan.relative],
                lowest_open=lowest_open,
                visibility_txn=visibility,
            )
            for plan in plans
        ]

    # A write id is taken only when there is work: it names the new bases (``_v<W>``).
    result.decisions = decide(state.max_write_id + 1)
    if options.dry_run or not result.rewritten:
        result.seconds = time.time() - started
        return result
    rewritten = [d.compaction for d in result.rewritten if d.compaction is not None]
    choice = _choose_engine(store, state, rewritten, requested)

    def in_engine(choice: EngineChoice) -> tuple[CommitRecord, int]:
        result.engine, result.engine_reason = choice.engine.value, choice.reason
        with store.transaction(OPERATION, read=state) as txn:
            final = _rewrite_and_commit(ctx, txn, state, result, decide, lowest_open, started)
        return final, txn.version

    final, write_id = run_in_engine(requested, choice, in_engine, in_engine)
    result.log_seq = final.seq
    result.version = write_id
    result.rows_written = final.counts.get("rows_written", 0)
    result.seconds = time.time() - started
    return result


def _choose_engine(
    store: TableStore,
    state: TableState,
    chosen: list[PartitionCompaction],
    requested: Engine,
) -> EngineChoice:
    """The engine that rewrites ``chosen`` (:func:`~lakectl.engine.choose_engine`: the work is
    the bytes of the directories it rewrites)."""
    from lakectl.engine import Engine, choose_engine
    from lakectl.ops.rewrite import arrow_unsupported

    meta = state.metadata
    unsupported = None
    if requested is not Engine.SPARK:
        # No mapping given: the kept-layout rule of compaction does not apply to a re-split.
        unsupported = arrow_unsupported(store, meta, state, chosen, layouts={})
    return choose_engine(
        requested,
        work_bytes=sum(d.size for p in chosen for d in p.inputs),
        meta=meta,
        arrow_unsupported=unsupported,
    )


def _rewrite_and_commit(
    ctx: Context,
    txn: WriteTransaction,
    state: TableState,
    result: ListBucketResult,
    decide: Callable[[int], list[PartitionDecision]],
    lowest_open: int | None,
    started: float,
) -> CommitRecord:
    """Rewrite the partitions ``decide`` picks for this transaction's write id (which names the
    new bases) in ``result.engine``, and commit."""
    from lakectl.ops.rewrite import rewrite_partitions, target_file_size

    store, meta = txn.store, state.metadata
    write_id = txn.version
    result.decisions = decide(write_id)
    chosen = [d.compaction for d in result.rewritten if d.compaction is not None]
    visible = committed_dirs(state)
    for p in chosen:
        rel = p.output_path(p.output_base or "")
        if rel in visible:
            raise UsageError(f"{rel} is already committed; run list-bucket again")
        txn.claim(rel, source="the list-bucket plan")  # named after this write id
    ctx.progress(f"rewriting {len(chosen)} partition(s)")
    split = {d.relative: d.wanted for d in result.rewritten if d.wanted is not None}
    if result.engine == "arrow":
        from lakectl.ops.list_bucket_arrow import rewrite_split_arrow

        added, counts = rewrite_split_arrow(store, meta, state, chosen, split)
    else:
        added, counts = rewrite_partitions(
            ctx,
            store,
            meta,
            state,
            chosen,
            f"list-bucket-{write_id}",
            layouts=split,
            target_size=target_file_size(meta, None),
        )
    return txn.commit(
        added=added,
        partitions={p.relative for p in chosen},
        obsolete=[d.relative for p in chosen for d in p.inputs],
        counts=counts,
        info={
            "max_write_id": max(p.max_write_id for p in chosen),
            "lowest_open_write_id": lowest_open,
            "started_at": int(started * 1000),
            INFO_KEY: {
                p.output_path(p.output_base or ""): (
                    split[p.relative].to_json() if p.relative in split else None
                )
                for p in chosen
            },
        },
    )
