"""The rewrite engine: compaction, list bucketing and materializing rewrite stored rows with it.

:func:`rewrite_partitions` rewrites chosen partitions as Hive's compactor does (a major
compaction merges each bucket's base and deltas into a new base, split by list bucketing when
asked; a minor one merges deltas), rows keeping their identity. The helpers say how many Spark
tasks a rewrite or a write takes, which partitions an option names, and which write id is the
lowest still open (nothing from it up may be rewritten).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from lakectl.errors import UsageError
from lakectl.failpoints import failpoint, is_crash
from lakectl.ops.context import Context
from lakectl.planning.compaction_plan import MAJOR, PartitionCompaction
from lakectl.planning.list_bucket_plan import ListBucketing, kept_layouts
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    COMPACTOR_METADATA_FILE,
    delta_dir_name,
    parse_partition_path,
    parse_partition_spec,
)
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import read_footer
from lakectl.table.paths import STAGING_DIR, Shape, table_path
from lakectl.table.properties import parse_size, property_value
from lakectl.table.store import TableStore
from lakectl.table.transaction import WriteTransaction
from lakectl.table.validity import ValidWriteIds

# Hive's AcidUtils.MetaDataFile marker of a compactor-written directory.
COMPACTOR_MARKER = json.dumps({"thisFileVersion": "0", "dataFormat": "compacted"})


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
) -> tuple[set[str], dict[str, int]]:
    """Rewrite the chosen partitions; returns the directories written and row counts.

    A major compaction writes the new base split like the old one (list bucketing), or as
    ``layouts`` (partition -> mapping) says when given (``lakectl list-bucket``)."""

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.scan.target import with_written_schemas
    from lakectl.spark import acid_read, acid_write, bucket_rewrite, list_bucket

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
    staging = table_path(
        store.storage,
        store.root,
        f"{STAGING_DIR}/compact-{run_id}",
        Shape.STAGING,
        source="a new compaction",
    )
    target = acid_write.WriteTarget(store.storage, store.root, staging, meta)
    event_cols = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"]
    cols = [*event_cols, "row", *[f"`{c}`" for c in meta.partition_by]]
    bytes_in = sum(d.size for p in chosen for d in p.inputs)
    tasks = rewrite_tasks(ctx, bytes_in, target_size, len(chosen))
    added: set[str] = set()
    counts: dict[str, int] = {"partitions": len(chosen)}
    try:
        majors = [p for p in chosen if p.kind == MAJOR]
        minors = [p for p in chosen if p.kind != MAJOR]
        if majors:
            plans = [
                PartitionReadPlan(
                    p.relative,
                    partition_values(meta, p.relative),
                    p.base,
                    p.deltas,
                    p.delete_deltas,
                    (),
                )
                for p in majors
            ]
            plans = with_written_schemas(plans, state)
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
                    compression=meta.property("orc.compress") or "snappy",
                )
            live = acid_read.live_events(spark, plans, spec) if merged is None else None
            if merged is not None:
                added |= merged.dirs
                counts["merge_task_cpu_ms"] = merged.task_cpu_ms
            elif live is not None:
                # One pass: rows are counted from the written files' footers afterwards.
                live = live.select(*cols)
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
            # A partition whose rows were all deleted still gets its (empty) base.
            for p in majors:
                rel = p.output_path(p.output_base or "")
                if rel not in added:
                    store.storage.makedirs(_dir_path(store, rel))
                    added.add(rel)
            counts["rows_written"] = (
                merged.rows
                if merged is not None
                else rows_under(store, [p.output_path(p.output_base or "") for p in majors])
            )
        if minors:
            plans = [
                PartitionReadPlan(
                    p.relative, partition_values(meta, p.relative), None, p.deltas, (), ()
                )
                for p in minors
                if p.deltas
            ]
            plans = with_written_schemas(plans, state)
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
            delete_files = [f for p in minors for d in p.delete_deltas for f in d.files]
            if delete_files:
                ctx.progress("minor: merging delete deltas")
                deletes = acid_read.delete_event_rows(spark, spec, delete_files).select(*cols)
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
        failpoint("compact.before_markers")
        for rel in added:
            directory = _dir_path(store, rel)
            store.storage.write_bytes(
                store.storage.join(directory, ACID_VERSION_FILE), ACID_VERSION.encode()
            )
            store.storage.write_bytes(
                store.storage.join(directory, COMPACTOR_METADATA_FILE),
                COMPACTOR_MARKER.encode(),
            )
    except BaseException as exc:
        if not is_crash(exc):  # a simulated crash leaves the staging a killed run leaves
            store.storage.delete(staging, recursive=True)
        raise
    store.storage.delete(staging, recursive=True)
    counts["dirs_in"] = sum(len(p.inputs) for p in chosen)
    counts["dirs_out"] = len(added)
    return added, counts


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
    """Write a transaction's change events (:func:`lakectl.spark.acid_write.change_events`) into
    its ``delta_W_W`` and ``delete_delta_W_W`` directories; they join ``txn.added``.

    ``rows`` (changes to write) and ``partitions`` (how many they touch; 0: unknown) size the
    Spark tasks. Returns the new directories (relative to the table).
    """
    from lakectl.spark import acid_write

    store = txn.store
    parallelism = int(ctx.spark().conf.get("spark.sql.shuffle.partitions") or 8)
    target = acid_write.WriteTarget(store.storage, store.root, txn.staging, meta)
    ctx.progress(f"writing {rows:,} change(s)")
    written = acid_write.write_changes(
        events,
        target,
        txn.version,
        write_tasks(rows, partitions, parallelism),
        delta_dir=delta_dir_name(txn.version),
        delete_dir=delta_dir_name(txn.version, delete=True),
    ).directories
    txn.added += written
    return written
