"""``lakectl compact`` and ``lakectl compactions``: Hive's minor and major compaction.

Plan (pure, :mod:`lakectl.planning.compaction_plan`), execute (Spark rewrites the chosen
directories, rows keeping their identity), commit (one ``compact`` record listing the new
directories and the ones they make obsolete). Until that record exists the new directories are
invisible, so a crash at any point leaves the table reading the same; a rerun redoes the work.
A compaction conflicts with nothing: it keeps every row's (originalTransaction, bucket, rowId),
so delete events written by loads running at the same time still apply. Deleting the obsolete
directories is ``clean``'s job.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from lakectl.errors import CommitConflictError, UsageError
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.reading import committed_dirs, plan_lakectl
from lakectl.planning.compaction_plan import (
    KINDS,
    MAJOR,
    PartitionCompaction,
    Thresholds,
    plan_compaction,
)
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    COMPACTOR_METADATA_FILE,
    parse_partition_path,
    parse_partition_spec,
)
from lakectl.table.log import CommitRecord, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import read_footer
from lakectl.table.store import TableStore, now_millis
from lakectl.table.validity import ValidWriteIds

OPERATION = "compact"
# Hive's AcidUtils.MetaDataFile marker of a compactor-written directory.
COMPACTOR_MARKER = json.dumps({"thisFileVersion": "0", "dataFormat": "compacted"})
STATES = ("ready for cleaning", "cleaned")


@dataclass(frozen=True)
class CompactOptions:
    kind: str = "auto"
    partitions: tuple[str, ...] = ()
    dry_run: bool = False
    delta_num_threshold: int | None = None
    delta_pct_threshold: float | None = None


@dataclass
class CompactResult:
    table: str
    kind: str
    dry_run: bool
    lowest_open_write_id: int | None
    thresholds: Thresholds
    partitions: list[PartitionCompaction]
    committed_seq: int | None = None
    added: tuple[str, ...] = ()
    obsolete: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def chosen(self) -> list[PartitionCompaction]:
        return [p for p in self.partitions if p.chosen]

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "requested": self.kind,
            "dry_run": self.dry_run,
            "lowest_open_write_id": self.lowest_open_write_id,
            "thresholds": {
                "compactor.delta.num.threshold": self.thresholds.delta_num,
                "compactor.delta.pct.threshold": self.thresholds.delta_pct,
            },
            "committed": self.committed_seq is not None,
            "log_seq": self.committed_seq,
            "partitions": [p.to_json() for p in self.partitions],
            "added": list(self.added),
            "obsolete": list(self.obsolete),
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
        }


def lowest_open_write_id(store: TableStore, state: TableState) -> int | None:
    """The lowest write id allocated but neither committed nor marked aborted."""
    committed = state.committed_write_ids
    open_ids = [
        w
        for w, entry in store.allocated_write_ids().items()
        if w not in committed and not entry.get("aborted")
    ]
    return min(open_ids, default=None)


def _select_partitions(
    meta: TableMetadata, plans: list[PartitionReadPlan], specs: tuple[str, ...]
) -> list[PartitionReadPlan]:
    if not specs:
        return plans
    wanted = parse_partition_spec(list(specs), list(meta.partition_by))
    index = {c: i for i, c in enumerate(meta.partition_by)}
    chosen = [p for p in plans if all(p.values[index[c]] == value for c, value in wanted.items())]
    if not chosen:
        known = ", ".join(p.relative for p in plans[:10]) or "none"
        raise UsageError(
            f"--partition {' '.join(specs)}: no such partition in the table",
            hint=f"partitions: {known}",
        )
    return chosen


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
    store: TableStore, options: CompactOptions
) -> tuple[CompactResult, TableState, list[PartitionReadPlan]]:
    if options.kind not in KINDS:
        raise UsageError(f"compaction kind {options.kind!r}: use one of {', '.join(KINDS)}")
    # The log first, then the allocations: a write id allocated in between counts as open.
    state = store.read_state()
    lowest_open = lowest_open_write_id(store, state)
    meta = state.metadata
    thresholds = Thresholds.from_metadata(
        meta, options.delta_num_threshold, options.delta_pct_threshold
    )
    _, plans, _ = plan_lakectl(store, state)
    plans = _select_partitions(meta, plans, options.partitions)
    visibility = max(store_hwm(store), state.max_write_id)
    decisions = plan_compaction(
        plans,
        options.kind,
        thresholds,
        lowest_open=lowest_open,
        rows=_row_counts(store, plans),
        visibility_txn=visibility,
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


def store_hwm(store: TableStore) -> int:
    """The highest write id ever allocated (the compactor base's visibility id)."""
    return max(store.allocated_write_ids(), default=0)


def compact(ctx: Context, table_ref: str | None, options: CompactOptions) -> CompactResult:
    """Plan, and unless ``dry_run``, rewrite the chosen partitions and commit one record."""
    started = time.time()
    store = ctx.table(table_ref)
    result, state, _ = _plan(store, options)
    chosen = result.chosen
    if options.dry_run or not chosen:
        result.seconds = time.time() - started
        return result
    meta = state.metadata
    visible = committed_dirs(state)
    for p in chosen:
        for name in p.outputs:
            rel = p.output_path(name)
            if rel in visible:  # the planner never picks a committed output; guard anyway
                raise CommitConflictError(f"{rel} is already committed; run compact again")
            # Leftover of a crashed compaction: invisible, so safe to replace.
            store.storage.delete(store.path(rel), recursive=True)
    ctx.progress(f"compacting {len(chosen)} partition(s)")
    added, counts = _execute(ctx, store, meta, state, chosen)
    failpoint("compact.before_commit")
    obsolete = sorted(d.relative for p in chosen for d in p.inputs if _shadowed(d, p, added))
    info = {
        "requested": options.kind,
        "types": sorted({p.kind for p in chosen if p.kind}),
        "max_write_id": max(p.max_write_id for p in chosen),
        "lowest_open_write_id": result.lowest_open_write_id,
        "started_at": int(started * 1000),
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
    record = CommitRecord(
        seq=-1,
        operation=OPERATION,
        committed_at=0,
        write_id=None,
        read_seq=state.last_seq,
        partitions=tuple(sorted(p.relative for p in chosen)),
        added=tuple(sorted(added)),
        obsolete=tuple(obsolete),
        counts=counts,
        info=info,
    )
    final = store.commit(record)
    failpoint("compact.after_commit")
    result.committed_seq = final.seq
    result.added = final.added
    result.obsolete = final.obsolete
    result.counts = counts
    result.seconds = time.time() - started
    return result


def _shadowed(d: Any, p: PartitionCompaction, added: set[str]) -> bool:
    """Is input ``d`` replaced by an output that was actually written?"""
    if p.kind == MAJOR:
        return p.output_base is not None and p.output_path(p.output_base) in added
    name = p.output_delete_delta if d.acid.is_delete else p.output_delta
    return name is not None and p.output_path(name) in added


def _bytes(store: TableStore, rels: list[str]) -> int:
    total = 0
    for rel in rels:
        path = store.path(rel)
        if store.storage.exists(path):
            total += store.storage.du(path)
    return total


def _num_tasks(ctx: Context, rows: int, partitions: int) -> int:
    parallelism = int(ctx.spark().conf.get("spark.sql.shuffle.partitions") or 8)
    by_rows = max(1, rows // 1_000_000 + 1)
    return max(1, min(max(partitions, by_rows), max(parallelism * 2, by_rows)))


def _execute(
    ctx: Context,
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
) -> tuple[set[str], dict[str, int]]:
    """Rewrite the chosen partitions; returns the directories written and row counts."""
    from pyspark.sql import functions as F

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark import acid_read, acid_write

    spark = ctx.spark()
    top = max(p.max_write_id for p in chosen)
    committed = state.committed_write_ids
    valid = ValidWriteIds(top, frozenset(w for w in range(1, top + 1) if w not in committed))
    key = next((k for k in meta.primary_key if k not in meta.partition_by), None)
    spec = acid_read.ReadSpec(
        store.storage,
        store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        valid,
        key,
    )
    staging = store.path("_lakectl", "staging", f"compact-{now_millis()}")
    target = acid_write.WriteTarget(store.storage, store.root, staging, meta)
    event_cols = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"]
    cols = [*event_cols, "row", *[f"`{c}`" for c in meta.partition_by]]
    rows_in = sum(
        int(p.stats.get("delta_rows", 0)) + int(p.stats.get("base_rows", 0)) for p in chosen
    )
    tasks = _num_tasks(ctx, rows_in, len(chosen))
    added: set[str] = set()
    counts: dict[str, int] = {"partitions": len(chosen)}
    try:
        majors = [p for p in chosen if p.kind == MAJOR]
        minors = [p for p in chosen if p.kind != MAJOR]
        if majors:
            plans = [
                PartitionReadPlan(
                    p.relative, _values(meta, p.relative), p.base, p.deltas, p.delete_deltas, ()
                )
                for p in majors
            ]
            live = acid_read.live_events(spark, plans, spec)
            if live is not None:
                live = live.select(*cols).persist()
                counts["rows_written"] = live.count()
                ctx.progress(f"major: writing {counts['rows_written']:,} rows")
                added |= set(
                    acid_write.write_compacted(
                        live,
                        target,
                        tasks,
                        {p.relative: p.output_base or "" for p in majors},
                        bloom=True,
                        staging_name="base",
                    )
                )
                live.unpersist()
            # A partition whose rows were all deleted still gets its (empty) base.
            for p in majors:
                rel = p.output_path(p.output_base or "")
                if rel not in added:
                    store.storage.makedirs(store.path(rel))
                    added.add(rel)
        if minors:
            plans = [
                PartitionReadPlan(p.relative, _values(meta, p.relative), None, p.deltas, (), ())
                for p in minors
                if p.deltas
            ]
            inserts = acid_read.insert_events(spark, plans, spec) if plans else None
            if inserts is not None:
                ctx.progress("minor: merging deltas")
                added |= set(
                    acid_write.write_compacted(
                        inserts.select(*cols),
                        target,
                        tasks,
                        {p.relative: p.output_delta or "" for p in minors},
                        bloom=True,
                        staging_name="delta",
                    )
                )
            delete_files = [f.path for p in minors for d in p.delete_deltas for f in d.files]
            if delete_files:
                ctx.progress("minor: merging delete deltas")
                # acid_read.delete_events keeps only identities; a merged delete delta also
                # keeps each event's currentTransaction, which time travel filters on.
                guard = acid_read._guard(F.col("row").isNull()) & (F.col("operation") == 2)
                deletes = (
                    acid_read._scan(spark, spec, delete_files)
                    .where(guard & acid_read._valid_filter(valid))
                    .select(*cols)
                )
                added |= set(
                    acid_write.write_compacted(
                        deletes,
                        target,
                        tasks,
                        {p.relative: p.output_delete_delta or "" for p in minors},
                        bloom=False,
                        staging_name="delete_delta",
                    )
                )
        for rel in added:
            store.storage.write_bytes(
                store.storage.join(store.path(rel), ACID_VERSION_FILE), ACID_VERSION.encode()
            )
            store.storage.write_bytes(
                store.storage.join(store.path(rel), COMPACTOR_METADATA_FILE),
                COMPACTOR_MARKER.encode(),
            )
    finally:
        store.storage.delete(staging, recursive=True)
    counts["dirs_in"] = sum(len(p.inputs) for p in chosen)
    counts["dirs_out"] = len(added)
    return added, counts


def _values(meta: TableMetadata, relative: str) -> tuple[str | None, ...]:
    return parse_partition_path(list(meta.partition_by), relative) if relative else ()


# --- compactions (SHOW COMPACTIONS) -------------------------------------------------------------


@dataclass(frozen=True)
class CompactionEntry:
    seq: int
    partition: str
    type: str
    state: str
    requested: str
    started_at: int | None
    committed_at: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    bytes_in: int
    bytes_out: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "partition": self.partition,
            "type": self.type,
            "state": self.state,
            "requested": self.requested,
            "started_at": self.started_at,
            "committed_at": self.committed_at,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "reason": self.reason,
        }


def compactions(
    store: TableStore, states: tuple[str, ...] = (), partitions: tuple[str, ...] = ()
) -> list[CompactionEntry]:
    """Every committed compaction, one entry per partition, oldest first (no Spark).

    ``ready for cleaning`` while any input directory is still on storage, ``cleaned`` after.
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
    out: list[CompactionEntry] = []
    for record in log_state.records:
        if record.operation != OPERATION:
            continue
        for item in record.info.get("compactions", []):
            rel = item.get("partition", "")
            if wanted_parts:
                values = _values(meta, rel)
                if any(values[index[c]] != v for c, v in wanted_parts.items()):
                    continue
            inputs = tuple(item.get("inputs", ()))
            left = any(store.storage.exists(store.path(d)) for d in inputs)
            entry = CompactionEntry(
                seq=record.seq,
                partition=rel or "(table)",
                type=str(item.get("type")),
                state="ready for cleaning" if left else "cleaned",
                requested=str(record.info.get("requested", "")),
                started_at=record.info.get("started_at"),
                committed_at=record.committed_at,
                inputs=inputs,
                outputs=tuple(item.get("outputs", ())),
                bytes_in=int(item.get("bytes_in", 0)),
                bytes_out=int(item.get("bytes_out", 0)),
                reason=str(item.get("reason", "")),
            )
            if states and entry.state not in states:
                continue
            out.append(entry)
    return out


__all__ = [
    "CompactOptions",
    "CompactResult",
    "CompactionEntry",
    "compact",
    "compactions",
    "lowest_open_write_id",
    "plan",
]
