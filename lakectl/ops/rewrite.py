"""The rewrite engine: compaction, list bucketing and materializing rewrite stored rows with it.

:func:`rewrite_partitions` rewrites chosen partitions as Hive's compactor does (a major
compaction merges each bucket's base and deltas into a new base, split by list bucketing when
asked; a minor one merges deltas), rows keeping their identity. The helpers say how many Spark
tasks a rewrite or a write takes, which partitions an option names, and which write id is the
lowest still open (nothing from it up may be rewritten).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.failpoints import is_crash
from lakectl.ops.compactor_outputs import (
    add_empty_bases,
    arrow_compactor,
    kept_write_ids,
    major_read_plans,
    write_compactor_markers,
)
from lakectl.ops.context import Context
from lakectl.planning.compaction_plan import MAJOR, PartitionCompaction
from lakectl.planning.list_bucket_plan import ListBucketing, kept_layouts
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import parse_partition_path, parse_partition_spec
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import read_footer
from lakectl.table.paths import STAGING_DIR, Shape, table_path
from lakectl.table.properties import parse_size, property_value
from lakectl.table.store import TableStore
from lakectl.table.transaction import WriteTransaction

if TYPE_CHECKING:
    from lakectl.arrow.bucket_compaction import BucketGroup


def lowest_open_write_id(
    store: TableStore, state: TableState, allocated: dict[int, dict[str, Any]] | None = None
) -> int | None:
    """The lowest write id allocated but neither committed nor marked aborted (``allocated``:
    the store's allocations, when already read)."""
    committed = state.committed_write_ids
    allocated = store.allocated_write_ids() if allocated is None else allocated
    open_ids = [
        w for w, entry in allocated.items() if w not in committed and not entry.get("aborted")
    ]
    return min(open_ids, default=None)


def select_partitions(
    meta: TableMetadata, plans: list[PartitionReadPlan], specs: tuple[str, ...]
) -> list[PartitionReadPlan]:
    """The plans of the partitions ``specs`` (``col=value`` texts) name; all when none."""
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


def write_tasks(rows: int, partitions: int, parallelism: int) -> int:
    """Spark tasks for writing ``rows`` new events into ``partitions`` partitions (0: unknown):
    about one per million rows, at most two per core, never more than the partitions."""
    by_rows = max(1, math.ceil(rows / 1_000_000))
    if partitions:
        return max(1, min(partitions, max(parallelism * 2, by_rows)))
    return max(1, min(parallelism * 2, by_rows))


def rewrite_tasks(ctx: Context, bytes_in: int, target_size: int, partitions: int) -> int:
    """Spark tasks for the rewrite: about one per ``target_size`` bytes of input.

    Every (partition, bucket) goes to one task and becomes one file, as Hive's ACID readers
    require (``bucket_N`` is the file of bucket N; Hive 3 cannot read a second file of a bucket),
    so a compaction writes at most one file per bucket of its inputs: never more files than
    before, and no file is split to meet the target.
    """
    parallelism = int(ctx.spark().conf.get("spark.sql.shuffle.partitions") or 8)
    by_size = max(1, -(-bytes_in // target_size))
    return max(1, min(max(partitions, by_size), max(parallelism * 2, by_size)))


def target_file_size(meta: TableMetadata, option: str | None) -> int:
    """Bytes per output file: the option, else the table's ``write.target-file-size``."""
    return parse_size(option) if option else int(property_value(meta, "write.target-file-size"))


def rows_under(store: TableStore, rels: list[str]) -> int:
    """Rows in the bucket files under these directories (list-bucketing subdirectories too)."""
    total = 0
    for rel in rels:
        for path in store.storage.fs.find(_dir_path(store, rel)):
            if path.rsplit("/", 1)[-1].startswith("bucket_"):
                total += read_footer(store.storage, path).rows
    return total


def _dir_path(store: TableStore, rel: str) -> str:
    """The path of a data directory a rewrite plans or wrote."""
    return table_path(store.storage, store.root, rel, Shape.DATA_DIR, source="the rewrite plan")


def arrow_unsupported(
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
    layouts: Mapping[str, ListBucketing] | None = None,
) -> str | None:
    """Why the Arrow engine cannot rewrite ``chosen`` as Spark does, as a phrase for
    :func:`lakectl.engine.choose_engine`; None when it can."""
    from lakectl.arrow.bucket_compaction import unsafe_type

    unsafe = unsafe_type(meta.data_schema)
    if unsafe is not None:
        return (
            f"{unsafe}; its compaction rewrites numbers, strings, booleans, dates, timestamps, "
            "binary and decimals"
        )
    majors = [p for p in chosen if p.kind == MAJOR]
    split = kept_layouts(state.records, majors) if layouts is None else layouts
    listed = [p.relative or "(table)" for p in majors if p.relative in split]
    if listed:
        return f"partition {listed[0]} keeps a list-bucketed base (split into directories)"
    if any(groups is None for groups in _bucket_groups(store, meta, chosen)):
        return "a data file to rewrite is not named bucket_N"
    return None


def _bucket_groups(
    store: TableStore, meta: TableMetadata, chosen: list[PartitionCompaction]
) -> tuple[list[BucketGroup] | None, list[BucketGroup] | None]:
    """The files each (partition, bucket) of ``chosen`` rewrites: the major compactions', then
    the minor ones' (None: a file is not named ``bucket_N``)."""
    from lakectl.arrow.bucket_compaction import bucket_groups, minor_groups

    majors = [p for p in chosen if p.kind == MAJOR]
    minors = [p for p in chosen if p.kind != MAJOR]
    out_dirs = {p.relative: p.output_base or "" for p in majors}
    return bucket_groups(store.storage, store.root, major_read_plans(meta, majors), out_dirs), (
        minor_groups(
            store.storage,
            store.root,
            _minor_plans(meta, minors),
            {p.relative: p.output_delta or "" for p in minors},
            {p.relative: p.output_delete_delta or "" for p in minors},
        )
    )


def _minor_plans(meta: TableMetadata, chosen: list[PartitionCompaction]) -> list[PartitionReadPlan]:
    """The minor compactions' inputs: deltas and delete deltas (no base)."""
    return [
        PartitionReadPlan(
            p.relative, partition_values(meta, p.relative), None, p.deltas, p.delete_deltas, ()
        )
        for p in chosen
        if p.kind != MAJOR and (p.deltas or p.delete_deltas)
    ]


def rewrite_partitions(
    ctx: Context,
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
    run_id: str,
    layouts: Mapping[str, ListBucketing] | None = None,
    *,
    target_size: int = 128 << 20,
    engine: str = "spark",
) -> tuple[set[str], dict[str, int]]:
    """Rewrite the chosen partitions; returns the directories written and row counts.

    A major compaction writes the new base split like the old one (list bucketing), or as
    ``layouts`` (partition -> mapping) says when given (``lakectl list-bucket``). ``engine``
    ``"arrow"`` rewrites in this process, one (partition, bucket) at a time, without Spark
    (:func:`arrow_unsupported` must have said it can)."""
    added: set[str] = set()
    counts: dict[str, int] = {"partitions": len(chosen)}
    if engine == "arrow":
        _rewrite_with_arrow(store, meta, state, chosen, added, counts)
        write_compactor_markers(store, added)
    else:
        staging = table_path(
            store.storage,
            store.root,
            f"{STAGING_DIR}/compact-{run_id}",
            Shape.STAGING,
            source="a new compaction",
        )
        try:
            _rewrite_with_spark(
                ctx, store, meta, state, chosen, staging, layouts, target_size, added, counts
            )
            write_compactor_markers(store, added)
        except BaseException as exc:
            if not is_crash(exc):  # a simulated crash leaves the staging a killed run leaves
                store.storage.delete(staging, recursive=True)
            raise
        store.storage.delete(staging, recursive=True)
    counts["dirs_in"] = sum(len(p.inputs) for p in chosen)
    counts["dirs_out"] = len(added)
    return added, counts


def _rewrite_with_arrow(
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
    added: set[str],
    counts: dict[str, int],
) -> None:
    """The Arrow engine: every (partition, bucket) in this process, one after the other."""
    from lakectl.arrow.bucket_compaction import compact_groups

    compactor = arrow_compactor(store, meta, state, chosen)
    majors = [p for p in chosen if p.kind == MAJOR]
    major_groups, minor_groups = _bucket_groups(store, meta, chosen)
    cpu_ms = peak = 0
    if majors:
        merged = compact_groups(compactor, store.root, major_groups or [])
        added |= merged.dirs
        cpu_ms, peak = merged.task_cpu_ms, merged.peak_memory_bytes
        add_empty_bases(store, majors, added)
        counts["rows_written"] = merged.rows
    if minor_groups:
        merged = compact_groups(compactor, store.root, minor_groups)
        added |= merged.dirs
        cpu_ms, peak = cpu_ms + merged.task_cpu_ms, merged.peak_memory_bytes
    counts["merge_task_cpu_ms"] = cpu_ms
    counts["peak_memory_bytes"] = peak


def _rewrite_with_spark(
    ctx: Context,
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
    staging: str,
    layouts: Mapping[str, ListBucketing] | None,
    target_size: int,
    added: set[str],
    counts: dict[str, int],
) -> None:
    """The Spark engine: one task per (partition, bucket) where it applies, else Spark's
    rewrite (shuffle and sort)."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.scan.target import with_written_schemas
    from lakectl.spark import acid_write, bucket_rewrite, kernel_read, list_bucket, snapshot_rows

    spark = ctx.spark()
    valid, key = kept_write_ids(meta, state, chosen)
    spec = snapshot_rows.ReadSpec(
        store.storage,
        store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        valid,
        key,
    )
    target = acid_write.WriteTarget(store.storage, store.root, staging, meta)
    bytes_in = sum(d.size for p in chosen for d in p.inputs)
    tasks = rewrite_tasks(ctx, bytes_in, target_size, len(chosen))
    compression = meta.property("orc.compress") or "snappy"
    cpu_ms: int | None = None
    majors = [p for p in chosen if p.kind == MAJOR]
    minors = [p for p in chosen if p.kind != MAJOR]
    if majors:
        plans = with_written_schemas(major_read_plans(meta, majors), state)
        out_dirs = {p.relative: p.output_base or "" for p in majors}
        split = kept_layouts(state.records, majors) if layouts is None else layouts
        merged = None
        if not any(p.relative in split for p in majors):
            # Inputs are already in the output's order: one task per bucket, no shuffle.
            ctx.progress("major: merging each bucket's files into the new base")
            merged = bucket_rewrite.merge_major(
                spark,
                store.storage,
                store.root,
                plans,
                out_dirs,
                meta.data_schema,
                valid,
                key=key,
                compression=compression,
            )
        live = (
            kernel_read.kernel_events(spark, plans, spec, kernel_read.LIVE)
            if merged is None
            else None
        )
        if merged is not None:
            added |= merged.dirs
            cpu_ms = merged.task_cpu_ms
        elif live is not None:
            # One pass: rows are counted from the written files' footers afterwards.
            ctx.progress("major: writing the new base")
            events, subdirs = list_bucket.split_events(
                spark, live, meta, split, [p.relative for p in majors]
            )
            added |= set(
                acid_write.write_compacted(
                    events,
                    target,
                    tasks,
                    out_dirs,
                    bloom=True,
                    staging_name="base",
                    subdir_names=subdirs,
                )
            )
        add_empty_bases(store, majors, added)
        counts["rows_written"] = (
            merged.rows
            if merged is not None
            else rows_under(store, [p.output_path(p.output_base or "") for p in majors])
        )
    if minors:
        plans = with_written_schemas(_minor_plans(meta, minors), state)
        merged = None
        if plans:
            ctx.progress("minor: merging each bucket's deltas")
            merged = bucket_rewrite.merge_minor(
                spark,
                store.storage,
                store.root,
                plans,
                {p.relative: p.output_delta or "" for p in minors},
                {p.relative: p.output_delete_delta or "" for p in minors},
                meta.data_schema,
                valid,
                key=key,
                compression=compression,
            )
        if merged is not None:
            added |= merged.dirs
            cpu_ms = (cpu_ms or 0) + merged.task_cpu_ms
        else:
            _minor_with_spark(spark, spec, target, tasks, plans, minors, added)
    if cpu_ms is not None:
        counts["merge_task_cpu_ms"] = cpu_ms


def _minor_with_spark(
    spark: Any,
    spec: Any,
    target: Any,
    tasks: int,
    plans: list[PartitionReadPlan],
    minors: list[PartitionCompaction],
    added: set[str],
) -> None:
    """A minor compaction through Spark's rewrite (shuffle and sort) of the events the kernel
    reads in Spark tasks: for types the per-bucket merge does not write as Spark does
    (timestamps), files not named ``bucket_N``, buckets holding events of other buckets."""
    from lakectl.spark import acid_write, kernel_read

    inserts = kernel_read.kernel_events(spark, plans, spec, kernel_read.INSERTS)
    if inserts is not None:
        added |= set(
            acid_write.write_compacted(
                inserts,
                target,
                tasks,
                {p.relative: p.output_delta or "" for p in minors},
                bloom=True,
                staging_name="delta",
            )
        )
    deletes = kernel_read.kernel_events(spark, plans, spec, kernel_read.DELETES)
    if deletes is not None:
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


def partition_values(meta: TableMetadata, relative: str) -> tuple[str | None, ...]:
    """The raw partition values a partition directory's path names."""
    return parse_partition_path(list(meta.partition_by), relative) if relative else ()


def write_transaction_events(
    ctx: Context,
    txn: WriteTransaction,
    meta: TableMetadata,
    events: Any,
    rows: int,
    partitions: int = 0,
) -> list[str]:
    """Write a transaction's change events (:func:`lakectl.spark.event_write.change_events`)
    into its ``delta_W_W`` and ``delete_delta_W_W`` directories with the Arrow engine's ORC
    event writer in Spark tasks (:func:`lakectl.spark.event_write.write_transaction_events`);
    they join ``txn.added``.

    ``rows`` (changes to write) and ``partitions`` (how many they touch; 0: unknown) size the
    Spark tasks. Returns the new directories (relative to the table).
    """
    from lakectl.spark import event_write

    parallelism = int(ctx.spark().conf.get("spark.sql.shuffle.partitions") or 8)
    ctx.progress(f"writing {rows:,} change(s)")
    tasks = write_tasks(rows, partitions, parallelism)
    return event_write.write_transaction_events(txn, meta, events, tasks=tasks).directories
