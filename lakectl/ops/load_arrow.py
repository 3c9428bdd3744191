"""``lakectl load`` in the Arrow engine: the batch read, checked, classified and written with
pyarrow in this process, without starting a JVM.

The same transaction as Spark's path (:func:`lakectl.ops.load.load_frame`): the same checks
before a write id is allocated, the same failpoints, the same commit record (counts, partitions,
the source and its hash, ``--evolve``'s schema change in the load's own commit), and files in the
same Hive 3 ACID layout (:mod:`lakectl.arrow.acid_writer`). The batch's changes are labelled by
the rule Spark's path applies (:mod:`lakectl.kernel.change_classify`).

Memory: the batch is read a part at a time and set aside on disk by target partition; the
changes are written a partition at a time. A load holds about its largest partition's rows of
the batch, the stored rows of that partition's keys, and each change's key, order value and
delete flag; an unpartitioned table is one partition, so its loads hold the batch. The result's
``peak_memory_bytes`` is the process's peak resident memory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from lakectl.engine import Engine, EngineChoice, choose_engine
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.load import (
    LoadOptions,
    LoadResult,
    batch_target,
    partition_key,
)
from lakectl.scan.target import plan_lakectl
from lakectl.table.created_table import table_to_write
from lakectl.table.log import ALWAYS, LoadMode, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges
    from lakectl.arrow.partitioned_batch import PartitionedBatch
    from lakectl.arrow.source import SourceBatches
    from lakectl.table.batch_checks import BatchStats
    from lakectl.table.transaction import WriteTransaction


def load_source_arrow(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    options: LoadOptions,
    requested: Engine,
    *,
    fmt: str,
    info: dict[str, Any],
    started: float,
    source_bytes: int,
    in_spark: Callable[[EngineChoice], LoadResult],
) -> LoadResult:
    """Load ``options.source`` with the Arrow engine (``requested`` arrow or auto); ``auto``
    hands a job over the size limit, or one the Arrow engine cannot do, to ``in_spark``."""
    from lakectl.arrow.source import read_source_batches

    meta = state.metadata if state is not None else None
    unsupported = _unsupported(meta, options)
    if unsupported is not None or requested is Engine.AUTO:
        # Before the source is read: a job Arrow cannot do, or a batch that alone is too big.
        early = choose_engine(
            requested, work_bytes=source_bytes, meta=meta, arrow_unsupported=unsupported
        )
        if not early.arrow:
            return in_spark(early)
    ctx.progress(f"reading {options.source}")
    infer = state is None and options.schema is None
    raw = read_source_batches(
        options.source, fmt, infer=infer, storage_options=ctx.config.storage_options
    )
    return load_table_arrow(
        ctx,
        store,
        state,
        raw,
        options,
        requested,
        fmt=fmt,
        info=info,
        started=started,
        source_bytes=source_bytes,
        in_spark=in_spark,
    )


def _unsupported(meta: TableMetadata | None, options: LoadOptions) -> str | None:
    """Why the Arrow engine cannot run this load (:func:`~lakectl.arrow.acid_writer.
    unsupported_reason`), or None; ``meta`` None: a table the load creates, not known yet
    beyond its bucket count."""
    from lakectl.arrow.acid_writer import unsupported_reason

    if meta is not None:
        return unsupported_reason(meta)
    return "a bucketed table (new rows need Spark's bucketing hash)" if options.buckets else None


def load_table_arrow(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    raw: pa.Table | SourceBatches,
    options: LoadOptions,
    requested: Engine = Engine.ARROW,
    *,
    fmt: str,
    info: dict[str, Any] | None = None,
    started: float | None = None,
    source_bytes: int | None = None,
    in_spark: Callable[[EngineChoice], LoadResult],
    before_commit: Callable[[], None] | None = None,
) -> LoadResult:
    """Load the parsed batch ``raw`` (an Arrow table, or one read a part at a time) as one
    transaction, as :func:`lakectl.ops.load.load_frame` loads a DataFrame. ``state`` is the
    table's log as read before ``raw`` was read, or ``None`` to create the table from
    ``raw``'s columns; a load ``auto`` gives to Spark (or the Arrow engine cannot run) goes to
    ``in_spark``. ``before_commit`` runs just before the commit and may raise to abort it.

    Each part of the batch is shaped and set aside by the partition its rows go to (on disk:
    :class:`~lakectl.arrow.partitioned_batch.PartitionedBatch`); the changes are then decided
    from the batch's keys and written a partition at a time, so memory holds about one
    partition's rows (with the stored rows of its keys), not the batch's."""
    from lakectl.arrow.batch import BatchShaper
    from lakectl.arrow.memory import release_unused_memory
    from lakectl.arrow.partitioned_batch import PartitionedBatch
    from lakectl.arrow.source import SourceBatches, spark_type_of

    started = time.time() if started is None else started
    read = raw if isinstance(raw, SourceBatches) else SourceBatches(raw.schema, iter([raw]))
    del raw
    columns = [(f.name, spark_type_of(f.type)) for f in read.schema]
    meta, evolution, batch_opts = batch_target(state, columns, options)
    shaper = BatchShaper(read.schema, meta, batch_opts, options.source)
    keys = meta.primary_key if options.mode != LoadMode.APPEND else None
    with PartitionedBatch(meta.partition_by, keys) as batch:
        for part in read.tables:
            batch.add(shaper.shape(part))
            del part
            release_unused_memory()
        stats = shaper.finish()
        return _load_batch(
            ctx,
            store,
            state,
            batch,
            stats,
            options,
            requested,
            meta=meta,
            evolution=evolution,
            fmt=fmt,
            info=info,
            started=started,
            source_bytes=source_bytes,
            in_spark=in_spark,
            before_commit=before_commit,
        )


def _load_batch(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    batch: PartitionedBatch,
    stats: BatchStats,
    options: LoadOptions,
    requested: Engine,
    *,
    meta: TableMetadata,
    evolution: tuple[TableMetadata, dict[str, Any], list[str]] | None,
    fmt: str,
    info: dict[str, Any] | None,
    started: float,
    source_bytes: int | None,
    in_spark: Callable[[EngineChoice], LoadResult],
    before_commit: Callable[[], None] | None,
) -> LoadResult:
    """:func:`load_table_arrow` once the batch is read, checked and set aside."""
    from lakectl.arrow.bucket_compaction import peak_memory_bytes
    from lakectl.arrow.load_changes import append_changes, keyed_changes
    from lakectl.arrow.memory import release_unused_memory

    touched = {partition_key(meta, r) for r in stats.partitions} if meta.partition_by else {""}
    read_with = None
    if state is not None:
        read_with = state if evolution is None else state.with_next_metadata(meta)
    keyed = options.mode != LoadMode.APPEND
    plans = None  # the touched partitions' files: what an upsert reads, what auto weighs
    if read_with is not None and (keyed or requested is Engine.AUTO):
        plans = plan_lakectl(store, read_with, touched if meta.partition_by else None)
    stored_bytes = (
        sum(f.size for p in plans[1] for d in p.data_dirs for f in d.files) if plans else 0
    )
    batch_bytes = source_bytes if source_bytes is not None else batch.nbytes
    choice = choose_engine(
        requested,
        work_bytes=batch_bytes + stored_bytes,
        meta=meta if state is not None else None,
        arrow_unsupported=_unsupported(meta, options),
    )
    if not choice.arrow:
        return in_spark(choice)
    phases: dict[str, float] = {"validate": time.time() - started}
    created = state is None
    rows = stats.rows
    # A table created here is removed again when the load does not commit.
    with (
        table_to_write(store, state, meta, {"source": options.source}) as state,
        store.transaction(options.mode.operation, read=state) as txn,
    ):
        write_id = txn.version
        if not keyed:
            changes = append_changes(batch, meta)
        else:
            ctx.progress(f"looking up {rows:,} keys")
            valid, partition_plans = (
                (plans[0], plans[1]) if plans else (state.valid_write_ids(), [])
            )
            changes = keyed_changes(
                store.storage,
                partition_plans,
                valid,
                meta,
                batch,
                mode=options.mode,
                order_by=options.order_by,
            )
        release_unused_memory()
        phases["lookup"] = time.time() - started - sum(phases.values())
        failpoint("load.before_write")
        ctx.progress(f"writing {rows:,} changes" if keyed else f"writing {rows:,} rows")
        _write_concurrently(txn, meta, changes.partitions)
        phases["write"] = time.time() - started - sum(phases.values())
        ctx.progress("committing")
        if before_commit is not None:
            before_commit()
        record_info = info if info is not None else {"source": options.source, "format": fmt}
        txn.commit(
            effective_at=ALWAYS if options.effective_at is None else options.effective_at,
            partitions=touched,
            counts=changes.counts,
            metadata=evolution[0] if evolution is not None else None,
            info={**record_info, **(evolution[1] if evolution is not None else {})},
        )
    return LoadResult(
        table=store.name or store.url,
        write_id=write_id,
        mode=options.mode,
        counts=changes.counts,
        added=tuple(sorted(txn.added)),
        created_table=created,
        seconds=time.time() - started,
        phases=phases,
        evolved=tuple(evolution[2]) if evolution is not None else (),
        engine=choice.engine.value,
        engine_reason=choice.reason,
        peak_memory_bytes=peak_memory_bytes(),
    )


def _write_concurrently(
    txn: WriteTransaction, meta: TableMetadata, partitions: Iterable[PartitionChanges]
) -> None:
    """Write ``partitions`` (each read as it is taken) by one thread per CPU, each taking the
    next partition when it has written its last (pyarrow encodes and writes ORC without
    holding the GIL): about one partition per CPU in memory. The first error stops the
    others before it is raised."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from lakectl.arrow.acid_writer import write_transaction_changes
    from lakectl.arrow.memory import release_unused_memory

    workers = os.cpu_count() or 1
    source = iter(partitions)
    lock = threading.Lock()
    failed = threading.Event()

    def shared() -> Iterator[PartitionChanges]:
        while not failed.is_set():
            release_unused_memory()  # the partition written before
            with lock:
                change = next(source, None)
            if change is None:
                return
            yield change

    if workers <= 1:
        write_transaction_changes(txn, meta, shared())
        return

    def write() -> None:
        try:
            write_transaction_changes(txn, meta, shared())
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(workers, thread_name_prefix="lakectl-write") as pool:
        running = [pool.submit(write) for _ in range(workers)]
    for done in running:
        done.result()


__all__ = ["load_source_arrow", "load_table_arrow"]
