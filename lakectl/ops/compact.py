"""``lakectl compact`` and ``lakectl compactions``: Hive's minor and major compaction.

Plan (pure, :mod:`lakectl.planning.compaction_plan`), execute (the chosen directories are
rewritten, rows keeping their identity: by Spark, or by the Arrow engine in this process, one
(partition, bucket) at a time, :mod:`lakectl.arrow.bucket_compaction`), commit (one ``compact`` record listing the new
directories and the ones they make obsolete). Until that record exists the new directories are
invisible, so a crash at any point leaves the table reading the same; a rerun redoes the work.
A compaction conflicts with nothing: it keeps every row's (originalTransaction, bucket, rowId),
so delete events written by loads running at the same time still apply. Deleting the obsolete
directories is ``clean``'s job.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field, replace
from typing import Any

from lakectl.engine import Engine, EngineChoice, choose_engine, run_in_engine
from lakectl.errors import CommitConflictError, FormatError, UsageError
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.results import Listing, brief, iso_time
from lakectl.ops.rewrite import (
    arrow_unsupported,
    lowest_open_write_id,
    partition_values,
    rewrite_partitions,
    select_partitions,
    target_file_size,
)
from lakectl.planning.compaction_plan import (
    KINDS,
    MAJOR,
    PartitionCompaction,
    Thresholds,
    aborted_write_ids,
    plan_compaction,
)
from lakectl.planning.list_bucket_plan import kept_layouts, layout_info
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.target import committed_dirs, plan_lakectl
from lakectl.table import compaction_runs
from lakectl.table.layout import (
    parse_partition_spec,
)
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.open_writers import recover_gone_writers
from lakectl.table.orc_files import read_footer
from lakectl.table.paths import Shape, check_name, table_path
from lakectl.table.retention import cleaned_dirs
from lakectl.table.store import TableStore, now_millis
from lakectl.table.transaction import WriteTransaction
from lakectl.times import utc

OPERATION = Operation.COMPACT
STATES = ("planned", "working", "ready for cleaning", "cleaned", "failed", "damaged")


@dataclass(frozen=True)
class CompactOptions:
    kind: str = "auto"
    partitions: tuple[str, ...] = ()
    dry_run: bool = False
    delta_num_threshold: int | None = None
    delta_pct_threshold: float | None = None
    aborted_threshold: int | None = None
    target_file_size: str | None = None  # e.g. "128MB"; default: write.target-file-size
    engine: str | None = None  # spark, arrow or auto; None: spark


@dataclass
class CompactResult:
    table: str
    kind: str
    dry_run: bool
    lowest_open_write_id: int | None
    thresholds: Thresholds
    partitions: list[PartitionCompaction]
    log_seq: int | None = None
    added: tuple[str, ...] = ()
    obsolete: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    engine: str = "spark"
    engine_reason: str = ""
    peak_memory_bytes: int | None = None  # the Arrow engine's peak resident memory

    def __repr__(self) -> str:
        return brief(self, "table", "kind", "dry_run", "log_seq")

    @property
    def committed(self) -> bool:
        """Whether this run committed (``log_seq`` is its log entry)."""
        return self.log_seq is not None

    @property
    def requested(self) -> str:
        """What was asked for: auto, minor or major (``kind``)."""
        return self.kind

    @property
    def chosen(self) -> list[PartitionCompaction]:
        return [p for p in self.partitions if p.chosen]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "requested": self.kind,
            "dry_run": self.dry_run,
            "lowest_open_write_id": self.lowest_open_write_id,
            "thresholds": self.thresholds.to_json(),
            "committed": self.committed,
            "log_seq": self.log_seq,
            "partitions": [p.to_json() for p in self.partitions],
            "added": list(self.added),
            "obsolete": list(self.obsolete),
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "peak_memory_bytes": self.peak_memory_bytes,
        }


def _row_counts(store: TableStore, plans: list[PartitionReadPlan]) -> dict[str, int]:
    """Events per directory, from ORC footers (no Spark)."""
    out: dict[str, int] = {}
    for plan in plans:
        for d in (*plan.data_dirs, *plan.delete_deltas):
            out[d.relative] = sum(read_footer(store.storage, f.path).rows for f in d.files)
    return out


def plan(ctx: Context, table_ref: str | None, options: CompactOptions) -> CompactResult:
    """Read the log and the listing; decide per partition (nothing is written)."""
    store = ctx.table(table_ref)
    result, _, _ = _plan(store, options)
    return result


def _plan(
    store: TableStore, options: CompactOptions, recover: bool = False
) -> tuple[CompactResult, TableState, list[PartitionReadPlan]]:
    """The decision; with ``recover``, writers that crashed are marked aborted first
    (:mod:`lakectl.table.open_writers`), so they no longer hold back what may be folded."""
    if options.kind not in KINDS:
        raise UsageError(f"compaction kind {options.kind!r}: use one of {', '.join(KINDS)}")
    # The log first, then the allocations: a write id allocated in between counts as open.
    state = store.read_state()
    allocated = store.allocated_write_ids()
    if recover:
        recover_gone_writers(store, state, "compact", allocated)
    lowest_open = lowest_open_write_id(store, state, allocated)
    meta = state.metadata
    thresholds = Thresholds.from_metadata(
        meta,
        options.delta_num_threshold,
        options.delta_pct_threshold,
        options.aborted_threshold,
    )
    target_file_size(meta, options.target_file_size)  # a bad size fails before any work
    _, plans, listings = plan_lakectl(store, state)
    plans = select_partitions(meta, plans, options.partitions)
    # The compactor base's visibility id: the highest write id ever allocated.
    visibility = max(max(allocated, default=0), state.max_write_id)
    aborted = [w for w, entry in allocated.items() if entry.get("aborted")]
    decisions = plan_compaction(
        plans,
        options.kind,
        thresholds,
        lowest_open=lowest_open,
        # Only --auto decides on row counts; reading every footer costs seconds on big tables.
        rows=_row_counts(store, plans) if options.kind == "auto" else {},
        visibility_txn=visibility,
        aborted=aborted_write_ids(listings, aborted),
    )
    result = CompactResult(
        table=store.name or store.url,
        kind=options.kind,
        dry_run=options.dry_run,
        lowest_open_write_id=lowest_open,
        thresholds=thresholds,
        partitions=decisions,
    )
    return result, state, plans


def compact(ctx: Context, table_ref: str | None, options: CompactOptions) -> CompactResult:
    """Plan, and unless ``dry_run``, rewrite the chosen partitions and commit one record."""
    started = time.time()
    store = ctx.table(table_ref)
    result, state, _ = _plan(store, options, recover=not options.dry_run)
    chosen = result.chosen
    if options.dry_run or not chosen:
        result.seconds = time.time() - started
        return result
    requested = options.engine or ctx.config.engine or Engine.SPARK
    choice = choose_engine(
        requested,
        work_bytes=sum(d.size for p in chosen for d in p.inputs),
        meta=state.metadata,
        arrow_unsupported=arrow_unsupported(store, state.metadata, state, chosen),
    )

    def in_engine(choice: EngineChoice) -> CommitRecord:
        result.engine, result.engine_reason = choice.engine.value, choice.reason
        run = compaction_runs.new_run(options.kind, [p.to_json() for p in chosen])
        with store.transaction(OPERATION, read=state, run=run) as txn:
            return _run(ctx, txn, state, result, options, chosen, started)

    final = run_in_engine(requested, choice, in_engine, in_engine)
    result.log_seq = final.seq
    result.added = final.added
    result.obsolete = final.obsolete
    result.counts = dict(final.counts)
    result.seconds = time.time() - started
    return result


def _run(
    ctx: Context,
    txn: WriteTransaction,
    state: TableState,
    result: CompactResult,
    options: CompactOptions,
    chosen: list[PartitionCompaction],
    started: float,
) -> CommitRecord:
    """Rewrite the chosen partitions and commit; returns the committed record."""
    failpoint("compact.after_status")
    store, run_id = txn.store, txn.run[0].id if txn.run else ""
    meta = state.metadata
    visible = committed_dirs(state)
    for p in chosen:
        for name in p.outputs:
            rel = p.output_path(name)
            if rel in visible:  # the planner never picks a committed output; guard anyway
                raise CommitConflictError(f"{rel} is already committed; run compact again")
            # What a crashed compaction left there is invisible: replaced, and removed on abort.
            txn.claim(rel, source="the compaction plan")
    ctx.progress(f"compacting {len(chosen)} partition(s)")
    target_size = target_file_size(meta, options.target_file_size)
    added, counts = rewrite_partitions(
        ctx, store, meta, state, chosen, run_id, target_size=target_size, engine=result.engine
    )
    if "peak_memory_bytes" in counts:  # the run's, not the table's: not in the log
        result.peak_memory_bytes = counts.pop("peak_memory_bytes")
    obsolete = sorted(d.relative for p in chosen for d in p.inputs if _shadowed(d, p, added))
    info = {
        "requested": options.kind,
        "types": sorted({p.kind for p in chosen if p.kind}),
        "max_write_id": max(p.max_write_id for p in chosen),
        "lowest_open_write_id": result.lowest_open_write_id,
        "started_at": int(started * 1000),
        "run_id": run_id,
        "list_bucketing": layout_info(chosen, kept_layouts(state.records, chosen)),
        "compactions": [
            {
                **p.to_json(),
                "outputs": [p.output_path(n) for n in p.outputs if p.output_path(n) in added],
                "bytes_in": sum(d.size for d in p.inputs),
                "bytes_out": _bytes(store, [p.output_path(n) for n in p.outputs]),
            }
            for p in chosen
        ],
    }
    return txn.commit(
        added=added,
        partitions={p.relative for p in chosen},
        obsolete=obsolete,
        counts=counts,
        info=info,
    )


def _shadowed(d: Any, p: PartitionCompaction, added: set[str]) -> bool:
    """Is input ``d`` replaced by an output that was actually written?"""
    if p.kind == MAJOR:
        return p.output_base is not None and p.output_path(p.output_base) in added
    name = p.output_delete_delta if d.acid.is_delete else p.output_delta
    return name is not None and p.output_path(name) in added


def _bytes(store: TableStore, rels: list[str]) -> int:
    total = 0
    for rel in rels:
        path = table_path(store.storage, store.root, rel, Shape.DATA_DIR, source="a compaction")
        if store.storage.exists(path):
            total += store.storage.du(path)
    return total


# --- compactions (SHOW COMPACTIONS) -------------------------------------------------------------


@dataclass(frozen=True)
class CompactionEntry:
    """One partition of one compaction, as ``lakectl compactions`` lists it."""

    seq: int | None
    partition: str | None  # None (and ``type`` None) for a damaged status file
    type: str | None
    state: str
    requested: str
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    bytes_in: int
    bytes_out: int
    reason: str
    run_id: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "run_id": self.run_id,
            "partition": self.partition,
            "type": self.type,
            "state": self.state,
            "requested": self.requested,
            "started_at": iso_time(self.started_at),
            "ended_at": iso_time(self.ended_at),
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "reason": self.reason,
            "error": self.error,
        }


class Compactions(Listing[CompactionEntry]):
    """The entries ``compactions`` lists (``compactions``): one per partition of a compaction."""

    items_key = "compactions"
    columns = (
        "seq",
        "run_id",
        "partition",
        "type",
        "state",
        "requested",
        "started_at",
        "ended_at",
        "inputs",
        "outputs",
        "bytes_in",
        "bytes_out",
        "reason",
        "error",
    )

    @property
    def compactions(self) -> list[CompactionEntry]:
        return list(self)


def compactions(
    store: TableStore, states: tuple[str, ...] = (), partitions: tuple[str, ...] = ()
) -> Compactions:
    """Every compaction, one entry per partition, oldest first (no Spark).

    From the log: ``ready for cleaning`` while any replaced directory is still on storage and not
    recorded as deleted by ``clean``, ``cleaned`` after. From the status files of runs that did
    not commit: ``working``, or ``failed`` (raised, or the process is gone). ``planned`` (what
    ``compact --auto`` would do now) only when asked for, as it reads ORC footers.
    """
    for s in states:
        if s not in STATES:
            raise UsageError(f"--state {s!r}: use one of {', '.join(STATES)}")
    log_state = store.read_state()
    meta = log_state.metadata
    wanted_parts = (
        parse_partition_spec(list(partitions), list(meta.partition_by)) if partitions else {}
    )
    index = {c: i for i, c in enumerate(meta.partition_by)}

    def wanted(rel: str) -> bool:
        values = partition_values(meta, rel) if rel else ()
        return all(values[index[c]] == v for c, v in wanted_parts.items())

    gone = cleaned_dirs(log_state.records)
    out: list[CompactionEntry] = []
    for record in log_state.records:
        if record.operation != OPERATION:
            continue
        source = store.log_entry_url(record.seq)
        items = record.info.get("compactions", [])
        for item in items if isinstance(items, list) else [items]:
            entry = _checked_entry(
                item,
                source,
                "cleaned",
                seq=record.seq,
                requested=str(record.info.get("requested", "")),
                started_at=record.info.get("started_at"),
                ended_at=record.committed_at,
                run_id=record.info.get("run_id"),
            )
            left = any(
                d not in gone
                and store.storage.exists(
                    table_path(store.storage, store.root, d, Shape.DATA_DIR, source=source)
                )
                for d in entry.inputs
            )
            out.append(replace(entry, state="ready for cleaning") if left else entry)
    now = now_millis()
    committed_runs = {r.info.get("run_id") for r in log_state.records if r.operation == OPERATION}
    status_files = compaction_runs.read_status_files(store)
    bad_runs: list[compaction_runs.DamagedStatus] = []
    for run in status_files.runs:
        if run.state == "committed" or run.id in committed_runs:  # crashed right after commit
            continue
        state = run.shown_state(now)
        source = store.storage.url(store.path(compaction_runs.status_file(run.id, source="")))
        try:
            out += [
                _checked_entry(
                    item,
                    source,
                    state,
                    requested=run.requested,
                    started_at=utc(run.started_at),
                    ended_at=utc(run.ended_at) if state == "failed" else None,
                    run_id=run.id,
                    error=run.error or ("its process is gone" if state == "failed" else None),
                )
                for item in run.compactions
            ]
        except FormatError as exc:
            name = source.rsplit("/", 1)[-1]
            reason = exc.message.removeprefix(f"{source}: ").split("; the table")[0]
            bad_runs.append(compaction_runs.DamagedStatus(name, source, reason, True))
    damaged = [_damaged_entry(d) for d in status_files.damaged + bad_runs]
    if "planned" in states:
        result, _, _ = _plan(store, CompactOptions(kind="auto"))
        for p in result.chosen:
            out.append(_entry(p.to_json(), "planned", requested="auto"))
    listed = [
        e
        for e in out
        if wanted("" if e.partition == "(table)" else e.partition or "")
        and (not states or e.state in states)
    ] + [e for e in damaged if not states or e.state in states]
    return Compactions(listed, table=store.name or store.url)


def _damaged_entry(damaged: compaction_runs.DamagedStatus) -> CompactionEntry:
    """A status file lakectl cannot use, listed so that nobody mistakes it for no compaction."""
    return CompactionEntry(
        seq=None,
        partition=None,
        type=None,
        state="damaged",
        requested="",
        started_at=None,
        ended_at=None,
        inputs=(),
        outputs=(),
        bytes_in=0,
        bytes_out=0,
        reason=f"status file {damaged.name}: {damaged.reason}",
        run_id=None,
        error=f"{damaged.url}: {damaged.reason}",
    )


def _checked_entry(item: object, source: str, state: str, **kw: Any) -> CompactionEntry:
    """:func:`_entry` for a compaction that ``source`` (a log entry or status file) lists; a
    :class:`FormatError` naming it when the compaction is malformed or names paths lakectl does
    not write."""
    try:
        if not isinstance(item, dict):
            raise TypeError(f"a {type(item).__name__}, not an object")
        check_name(item.get("partition") or "", Shape.PARTITION, source=source)
        for key in ("inputs", "outputs"):
            names = item.get(key, [])
            if not isinstance(names, list):
                raise TypeError(f"its {key} are a {type(names).__name__}, not a list")
            for name in names:
                check_name(name, Shape.DATA_DIR, source=source)
        return _entry(item, state, **kw)
    except (TypeError, ValueError, AttributeError) as exc:
        raise FormatError(
            f"{source}: a compaction it lists is malformed ({str(exc)[:200]})",
            hint="restore the file from a backup, or remove it if it is a status file",
        ) from exc


def _entry(item: dict[str, Any], state: str, **kw: Any) -> CompactionEntry:
    stats = item.get("stats", {})
    bytes_in = item.get("bytes_in")
    if bytes_in is None:  # a plan: what the reader uses now
        bytes_in = int(stats.get("base_bytes", 0)) + int(stats.get("delta_bytes", 0))
    return CompactionEntry(
        seq=kw.get("seq"),
        partition=item.get("partition") or "(table)",
        type=str(item.get("type")),
        state=state,
        requested=kw.get("requested", ""),
        started_at=kw.get("started_at"),
        ended_at=kw.get("ended_at"),
        inputs=tuple(item.get("inputs", ())),
        outputs=tuple(item.get("outputs", ())),
        bytes_in=int(bytes_in),
        bytes_out=int(item.get("bytes_out", 0)),
        reason=str(item.get("reason", "")),
        run_id=kw.get("run_id"),
        error=kw.get("error"),
    )


__all__ = [
    "CompactOptions",
    "CompactResult",
    "CompactionEntry",
    "compact",
    "compactions",
    "plan",
]
