"""``lakectl load``: one batch, one transaction (a new write id), deltas and delete deltas only."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakectl.errors import (
    AlreadyLoadedError,
    BadInputError,
    SourceNotFoundError,
    SourceParseError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    UnknownColumnError,
    UsageError,
)
from lakectl.failpoints import failpoint
from lakectl.ops.context import Context
from lakectl.ops.create import build_metadata, split_columns
from lakectl.ops.results import brief
from lakectl.ops.rewrite import write_tasks
from lakectl.scan.target import plan_lakectl
from lakectl.storage.fs import Storage, storage_for
from lakectl.storage.inputs import require_input_files
from lakectl.storage.source_files import SourceDigest
from lakectl.table.batch_checks import BatchOptions
from lakectl.table.created_table import table_to_write
from lakectl.table.layout import escape_partition_value
from lakectl.table.log import ALWAYS, LoadMode, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Column, Schema, normalize_type, parse_schema
from lakectl.table.store import TableStore

MODES = tuple(m.value for m in LoadMode)
DEFAULT_OP_VALUES = "I=insert,U=update,D=delete"
# Up to this many batch rows, Spark's upsert or cdc load decides its changes on the driver
# (lakectl.spark.load_tasks.driver_events): the batch's keys, order values and actions are
# collected, and the latest changes' keys shipped with the key lookup's tasks
# (lakectl.spark.key_lookup). Above, the changes are decided in tasks by key, against the
# touched partitions' key columns joined with the batch's keys.
DECIDE_ON_DRIVER_ROWS = 2_000_000
# Typed columnar sources are read again for each pass instead of cached: the checks read a few
# of their columns, and caching every row cost more than a second pass (1.5 s of CPU for a
# 500k-row Parquet batch). Text formats are parsed once, into the cache.
REREAD_FORMATS = ("parquet", "orc")


@dataclass(frozen=True)
class LoadOptions:
    source: str
    format: str | None = None
    mode: LoadMode = LoadMode.UPSERT
    primary_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    op_column: str | None = None
    op_values: str = DEFAULT_OP_VALUES
    order_by: str | None = None
    effective_at: int | None = None
    evolve: bool = False
    create: bool = False
    """Create the table (from ``schema``, else from the source's columns) when it is missing;
    without it a missing table is an error."""
    buckets: int = 0
    schema: str | None = None
    force: bool = False
    """Load a source the log says was loaded already (same location and content)."""
    engine: str | None = None
    """``spark``, ``arrow`` or ``auto`` (:mod:`lakectl.engine`); ``None``: the configured one."""

    def __post_init__(self) -> None:
        # A mode given as its text is the enum from here on; an unknown one is refused by
        # check_mode_options with the modes there are.
        if not isinstance(self.mode, LoadMode) and self.mode in MODES:
            object.__setattr__(self, "mode", LoadMode(self.mode))


# What a load that committed nothing did instead (LoadResult.status).
LOADED, SKIPPED, EMPTY = "loaded", "skipped", "empty"


@dataclass(frozen=True)
class LoadResult:
    table: str
    write_id: int
    mode: LoadMode
    counts: dict[str, int]
    added: tuple[str, ...]
    created_table: bool = False
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    evolved: tuple[str, ...] = ()
    """Columns ``--evolve`` added to the table (in the load's own commit)."""
    status: str = LOADED
    """``loaded``; ``skipped``: the log says this source was loaded already (by version
    ``loaded_by``), nothing was read; ``empty``: the source has no rows, nothing committed."""
    loaded_by: int | None = None
    engine: str = "spark"
    """The engine that ran the load (``spark`` or ``arrow``); ``engine_reason`` says why."""
    engine_reason: str = ""
    peak_memory_bytes: int | None = None
    """The Arrow engine's: this process's peak resident memory when the load finished."""

    def __repr__(self) -> str:
        return brief(self, "table", "version", "status", "counts")

    @property
    def skipped(self) -> bool:
        """Did the load commit nothing (a source loaded before, or an empty one)?"""
        return self.status != LOADED

    @property
    def version(self) -> int:
        """The version (write id) this load committed."""
        return self.write_id

    @property
    def inserted(self) -> int:
        """Rows inserted (new keys, or every row of an append)."""
        return self.counts.get("inserted", 0)

    @property
    def updated(self) -> int:
        """Stored rows replaced by a newer version."""
        return self.counts.get("updated", 0)

    @property
    def deleted(self) -> int:
        """Stored rows deleted."""
        return self.counts.get("deleted", 0)

    @property
    def ignored(self) -> int:
        """Changes older than (or as old as) the stored row, and deletes of missing keys."""
        return self.counts.get("ignored", 0)

    @property
    def superseded_in_batch(self) -> int:
        """Changes a newer change to the same key in the same batch replaced."""
        return self.counts.get("superseded_in_batch", 0)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "table": self.table,
            "version": self.write_id,
            "mode": self.mode,
            "counts": self.counts,
            "added": list(self.added),
            "created_table": self.created_table,
            "seconds": round(self.seconds, 3),
        }
        if self.evolved:
            data["evolved"] = list(self.evolved)
        data["status"] = self.status
        if self.loaded_by is not None:
            data["loaded_by"] = self.loaded_by
        if self.status == LOADED:
            data["engine"] = self.engine
            data["engine_reason"] = self.engine_reason
            data["peak_memory_bytes"] = self.peak_memory_bytes
        return data


def parse_op_values(text: str) -> dict[str, str]:
    """``I=insert,U=update,D=delete`` -> {"I": "insert", ...}."""
    mapping: dict[str, str] = {}
    for item in text.split(","):
        code, sep, action = item.partition("=")
        action = action.strip().lower()
        if not sep or action not in ("insert", "update", "delete"):
            raise UsageError(
                f"--op-values {text!r}: each item is CODE=insert|update|delete",
                hint=DEFAULT_OP_VALUES,
            )
        mapping[code.strip()] = action
    return mapping


def partition_key(meta: TableMetadata, values: tuple[Any, ...]) -> str:
    """The partition's path in the table (``col=value/...``) for its values as text."""
    return "/".join(
        f"{c}={escape_partition_value(None if v is None else str(v))}"
        for c, v in zip(meta.partition_by, values, strict=True)
    )


def load_options(
    store: TableStore,
    source: str,
    *,
    format: str | None = None,
    mode: str | None = None,
    primary_key: tuple[str, ...] = (),
    partition_by: tuple[str, ...] = (),
    op_column: str | None = None,
    op_values: str = DEFAULT_OP_VALUES,
    order_by: str | None = None,
    effective_at: int | None = None,
    evolve: bool = False,
    create: bool = False,
    buckets: int = 0,
    schema: str | None = None,
    force: bool = False,
    engine: str | None = None,
) -> LoadOptions:
    """The options of one load into ``store``; without ``mode``, :func:`resolve_mode` decides.
    ``primary_key``, ``partition_by``, ``buckets`` and ``schema`` apply when the load creates
    the table (``create``); for an existing table, a key or partitioning given must be its own."""
    return LoadOptions(
        source=source,
        format=format,
        mode=resolve_mode(store, mode, op_column, primary_key),
        primary_key=primary_key,
        partition_by=partition_by,
        op_column=op_column,
        op_values=op_values,
        order_by=order_by,
        effective_at=effective_at,
        evolve=evolve,
        create=create,
        buckets=buckets,
        schema=schema,
        force=force,
        engine=engine,
    )


def resolve_mode(
    store: TableStore,
    mode: LoadMode | str | None,
    op_column: str | None,
    primary_key: tuple[str, ...] = (),
) -> LoadMode:
    """The load mode: ``mode`` when given; else ``cdc`` with an op column, ``upsert`` when the
    table (or the key a first load creates it with) has a primary key, else ``append``."""
    if mode is not None:
        if mode not in MODES:
            raise UsageError(f"--mode {mode!r}: use one of {', '.join(MODES)}")
        return LoadMode(mode)
    if op_column:
        return LoadMode.CDC
    has_key = bool(primary_key) or (store.has_log() and store.read_state().metadata.has_key)
    return LoadMode.UPSERT if has_key else LoadMode.APPEND


def _prepare(ctx: Context, table_ref: str | None, options: LoadOptions) -> TableStore:
    """The checks every load makes before reading its batch; the table's store. A missing
    table is an error unless the load creates it (``create``)."""
    check_mode_options(options)
    store = ctx.table(table_ref)
    if store.has_log():
        return store
    if not options.create:
        raise missing_table_error(store)
    if options.mode is not LoadMode.APPEND and not options.primary_key:
        raise UsageError(
            f"--mode {options.mode} needs a primary key; the table --create makes would have none",
            hint="add --primary-key COLS, or use --mode append",
        )
    if store.exists() and store.storage.list_names(store.root):
        # A first load creates the table: never over other data (a Hive table's deltas would
        # silently disappear from every read).
        raise TableExistsError(
            f"{store.url} exists and is not empty but has no lakectl log: lakectl will not "
            "create a table over other data",
            hint="load into a new location; read a Hive-written table with `lakectl snapshot`",
        )
    return store


def missing_table_error(store: TableStore) -> TableNotFoundError:
    """The error for a load into a table that does not exist: the table's own not-found error
    (a file in its place, or "did you mean" a table next to it), with ``--create`` as the way
    out."""
    if store.exists() and store.storage.list_names(store.root):
        return TableNotFoundError(
            f"{store.url} has no lakectl log: it is not a lakectl table",
            hint="load into a new location; read a Hive-written table with `lakectl snapshot`",
        )
    return TableNotFoundError(
        store.missing_error().message,
        hint="to create it with this load, add --create (with --primary-key, --partition-by, "
        "--buckets or --schema as `lakectl create` takes them), or run `lakectl create` first",
    )


def load(ctx: Context, table_ref: str | None, options: LoadOptions) -> LoadResult:
    """Load one batch (a file or folder) into a table as one transaction.

    Before Spark starts: a missing table is an error (unless ``options.create``); a source
    without rows commits nothing (status ``empty``); a source the log says was loaded already,
    same location and content hash, is skipped (status ``skipped``) unless ``options.force``.
    """
    import time

    from lakectl.storage.source_files import digest_source

    started = time.time()
    source_options = ctx.config.storage_options  # [storage] applies to sources too
    store = _prepare(ctx, table_ref, options)  # what needs no Spark, before it starts
    check_source(options.source, source_options)
    fmt = _source_format(options, source_options)
    state = store.read_state() if store.has_log() else None
    if state is not None:
        check_table_options(state.metadata, options)
    storage, path = storage_for(options.source, source_options)
    ctx.progress(f"checking {options.source}")
    source = digest_source(storage, path, fmt)
    version = state.max_write_id if state is not None else 0
    table = store.name or store.url
    if source.empty:
        return LoadResult(table, version, options.mode, {}, (), status=EMPTY)
    previous = None if state is None or options.force else state.loaded(_key(source))
    if previous is not None and previous.write_id is not None:
        return _skipped(table, options, previous.write_id)
    info: dict[str, Any] = {"source": options.source, "format": fmt, "source_url": source.url}
    info["source_hash"] = source.digest
    if options.force:
        info["reloaded"] = True
    try:
        return _load_with_engine(ctx, store, state, options, fmt, info, started, source.size)
    except AlreadyLoadedError as exc:  # another run committed the same source meanwhile
        return _skipped(table, options, exc.version)
    except SourceParseError as exc:
        located = _located(storage, path, options.source) if fmt == "csv" else None
        if located is None:
            raise
        raise located from exc


def _load_with_engine(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    options: LoadOptions,
    fmt: str,
    info: dict[str, Any],
    started: float,
    source_bytes: int,
) -> LoadResult:
    """Load the source in the engine asked for (``options.engine``, else the configured one):
    Spark, Arrow, or (``auto``) the one :func:`~lakectl.engine.choose_engine` picks."""
    from dataclasses import replace

    from lakectl.engine import (
        Engine,
        EngineChoice,
        choose_engine,
        parse_engine,
        with_spark_fallback,
    )

    requested = parse_engine(options.engine or ctx.config.engine)

    def in_spark(choice: EngineChoice) -> LoadResult:
        read = state
        if state is None and store.has_log():
            # Another writer created the table meanwhile (an Arrow attempt that gave up
            # removed the table it created): the load goes into it, as `--create` loads into
            # a table that exists.
            read = store.read_state()
        result = _load_source(ctx, store, read, options, fmt, info, started)
        return replace(result, engine=choice.engine.value, engine_reason=choice.reason)

    if requested is Engine.SPARK:
        return in_spark(choose_engine(requested, work_bytes=source_bytes, meta=None))
    from lakectl.ops.load_arrow import load_source_arrow

    def in_arrow() -> LoadResult:
        return load_source_arrow(
            ctx, store, state, options, requested, fmt=fmt, info=info, started=started,
            source_bytes=source_bytes, in_spark=in_spark,
        )  # fmt: skip

    return with_spark_fallback(requested, in_arrow, in_spark)


def _key(source: SourceDigest) -> tuple[str, str]:
    return source.url, source.digest


def _skipped(table: str, options: LoadOptions, version: int | None) -> LoadResult:
    return LoadResult(table, version or 0, options.mode, {}, (), status=SKIPPED, loaded_by=version)


def _source_format(options: LoadOptions, source_options: dict[str, Any]) -> str:
    from lakectl.spark.sources import FORMATS, guess_format

    fmt = (options.format or guess_format(options.source, source_options)).lower()
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    return fmt


def _located(storage: Storage, path: str, shown: str) -> BadInputError | None:
    """A CSV parse error naming the file and line of the first record of the wrong width
    (Spark's message renders the record, not where it is), or ``None`` when none is found."""
    import csv

    from lakectl.storage.source_files import first_malformed_csv_line, malformed_csv_error

    try:
        found = first_malformed_csv_line(storage, path, shown)
    except (UnicodeDecodeError, csv.Error, OSError):
        found = None
    return None if found is None else malformed_csv_error(found)


def _load_source(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    options: LoadOptions,
    fmt: str,
    info: dict[str, Any],
    started: float,
) -> LoadResult:
    """Read the source with Spark and load it (:func:`load_frame`)."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark.sources import read_source, source_stamp

    source_options = ctx.config.storage_options
    spark = ctx.spark()
    ctx.progress(f"reading {options.source}")
    infer = state is None and options.schema is None
    raw = read_source(spark, options.source, fmt, infer=infer, storage_options=source_options)
    if fmt not in REREAD_FORMATS:
        return load_frame(ctx, store, state, raw, options, fmt=fmt, info=info, started=started)
    stamp = source_stamp(options.source, source_options)

    def unchanged() -> None:
        if source_stamp(options.source, source_options) != stamp:
            raise BadInputError(
                f"{options.source} changed while it was being loaded; nothing was loaded",
                hint="load a source only once it is complete",
            )

    return load_frame(
        ctx,
        store,
        state,
        raw,
        options,
        fmt=fmt,
        info=info,
        started=started,
        cache_source=False,
        before_commit=unchanged,
    )


def load_dataframe(
    ctx: Context, table_ref: str | None, frame: Any, options: LoadOptions
) -> LoadResult:
    """Load the rows of a Spark DataFrame as one batch (the library's ``Table.load(df)``); the
    table is created from its columns when it does not exist yet."""
    import time

    if options.engine == "arrow":
        raise UsageError(
            "engine='arrow' loads files, not a Spark DataFrame (its rows are in Spark)",
            hint="load the DataFrame with engine='spark', or write it out and load the files",
        )
    started = time.time()
    store = _prepare(ctx, table_ref, options)
    state = store.read_state() if store.has_log() else None
    if state is not None:
        check_table_options(state.metadata, options)
    info = {"source": "DataFrame"}
    return load_frame(
        ctx, store, state, frame, options, fmt="dataframe", info=info, started=started
    )


def check_source(source: str, storage_options: dict[str, Any] | None = None) -> None:
    """Refuse a source that does not exist or (a local one) that this user cannot read."""
    storage, path = storage_for(source, storage_options)
    if not storage.exists(path):
        raise SourceNotFoundError(
            f"source {source} does not exist",
            hint="check the path (a relative one is from the current directory)",
        )
    require_input_files(storage, path, "source", source)
    if storage.scheme == "file":
        mode = os.R_OK | os.X_OK if storage.isdir(path) else os.R_OK
        if not os.access(path, mode):
            raise StorageError(
                f"source {source} cannot be read: permission denied",
                hint="check its permissions (and its directory's)",
            )


def check_mode_options(options: LoadOptions) -> None:
    """Refuse a mode that is unknown, or options that the mode would ignore or misread (an
    op column outside cdc would be checked against no op codes at all)."""
    if options.mode not in MODES:
        raise UsageError(f"--mode {options.mode!r}: use one of {', '.join(MODES)}")
    if options.mode is LoadMode.CDC:
        parse_op_values(options.op_values)  # a bad --op-values fails before any work
        return
    for flag, given in (
        ("--op-column", options.op_column),
        ("--op-values", options.op_values != DEFAULT_OP_VALUES),
    ):
        if given:
            raise UsageError(
                f"{flag} applies to --mode cdc, not --mode {options.mode}",
                hint="add --mode cdc (the default when --op-column is given), or drop it",
            )
    if options.mode is LoadMode.APPEND and options.order_by:
        raise UsageError(
            "--order-by picks the latest change of each key; --mode append applies rows as "
            "they are",
            hint="use --mode upsert or cdc for changes by key, or drop --order-by",
        )


def check_table_options(meta: TableMetadata, options: LoadOptions) -> None:
    """Refuse ``--primary-key`` / ``--partition-by`` that differ from an existing table's, and
    what :func:`check_batch_options` refuses."""
    check_batch_options(meta, options)
    if options.buckets and options.buckets != meta.buckets:
        raise UsageError(f"--buckets {options.buckets} differs from the table's ({meta.buckets})")
    for flag, given, actual in (
        ("--primary-key", options.primary_key, meta.primary_key),
        ("--partition-by", options.partition_by, meta.partition_by),
    ):
        if given and tuple(c.lower() for c in given) != tuple(c.lower() for c in actual):
            raise UsageError(
                f"{flag} {','.join(given)} differs from the table's ({','.join(actual) or 'none'})"
            )


def check_batch_options(meta: TableMetadata, options: LoadOptions) -> None:
    """Refuse a mode by key for a table without a primary key, and an ``--order-by`` that is
    not one of the table's columns."""
    if options.mode is not LoadMode.APPEND and not meta.primary_key:
        raise UsageError(
            f"--mode {options.mode} needs a primary key; the table has none",
            hint="use --mode append, or create the table with --primary-key",
        )
    if options.order_by and meta.schema.find(options.order_by) is None:
        raise UnknownColumnError(
            f"--order-by {options.order_by!r} is not a column of the table",
            hint=f"the table's columns: {', '.join(meta.schema.names)}",
        )


def load_frame(
    ctx: Context,
    store: TableStore,
    state: TableState | None,
    raw: Any,
    options: LoadOptions,
    *,
    fmt: str,
    info: dict[str, Any] | None = None,
    started: float | None = None,
    cache_source: bool = True,
    before_commit: Callable[[], None] | None = None,
) -> LoadResult:
    """Load the parsed batch ``raw`` (a Spark DataFrame) as one transaction: ``load``'s batch path.

    ``state`` is the table's log as read before ``raw`` was read, or ``None`` to create the table
    from ``raw``'s columns. Bad input raises before a write id is allocated; any later failure
    aborts the write id and removes what was written. ``info`` is stored in the commit record
    (default: the source and format). ``lakectl stream`` calls this once per micro-batch.

    With ``cache_source`` the parsed rows are cached for the checks and the write; without it
    they are read from the source for each (cheaper for typed columnar files: the checks read
    a few columns). ``before_commit`` runs just before the commit and may raise to abort it.
    """
    import time

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark.batch import shape_batch, with_source_order

    started = time.time() if started is None else started
    spark = ctx.spark()
    meta, evolution, batch_opts = batch_target(state, spark_columns(raw), options)
    raw = with_source_order(raw)
    if cache_source:  # parse the source once: the checks and every later step read the cache
        raw = raw.persist()
    try:
        batch, stats = shape_batch(raw, meta, batch_opts, options.source)
    except BaseException:
        raw.unpersist()
        raise
    cached: list[Any] = [raw] if cache_source else []  # frames to unpersist at the end
    phases: dict[str, float] = {"validate": time.time() - started}
    try:
        created = state is None
        # With --evolve the new columns commit with the rows: one record, so a crash leaves
        # the table's schema and rows as they were. A table created here is removed again
        # when the load does not commit.
        with (
            table_to_write(store, state, meta, {"source": options.source}) as state,
            store.transaction(options.mode.operation, read=state) as txn,
        ):
            write_id = txn.version
            parallelism = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
            touched = (
                {partition_key(meta, r) for r in stats.partitions} if meta.partition_by else {""}
            )
            read_with = state if evolution is None else state.with_next_metadata(meta)
            counts = _write_in_tasks(
                ctx, store, txn, read_with, meta, touched, options, batch, stats.rows, phases,
                started, parallelism,
            )  # fmt: skip
            if before_commit is not None:
                before_commit()
            ctx.progress("committing")
            record_info = info if info is not None else {"source": options.source, "format": fmt}
            txn.commit(
                effective_at=ALWAYS if options.effective_at is None else options.effective_at,
                partitions=touched,
                counts=counts,
                metadata=evolution[0] if evolution is not None else None,
                info={**record_info, **(evolution[1] if evolution is not None else {})},
            )
    finally:
        for frame in cached:
            frame.unpersist()
    return LoadResult(
        table=store.name or store.url,
        write_id=write_id,
        mode=options.mode,
        counts=counts,
        added=tuple(sorted(txn.added)),
        created_table=created,
        seconds=time.time() - started,
        phases=phases,
        evolved=tuple(evolution[2]) if evolution is not None else (),
    )


def _write_in_tasks(
    ctx: Context,
    store: TableStore,
    txn: Any,
    state: TableState,
    meta: TableMetadata,
    touched: set[str],
    options: LoadOptions,
    batch: Any,
    rows: int,
    phases: dict[str, float],
    started: float,
    parallelism: int,
) -> dict[str, int]:
    """The load's changes decided by the kernel's rule and written by the Arrow engine's
    writer in Spark tasks (:mod:`lakectl.spark.load_tasks`: an append's rows as they are, an
    upsert's or cdc's decided against the stored rows of their keys, on the driver up to
    :data:`DECIDE_ON_DRIVER_ROWS` rows), moved into place; the load's counts."""
    import time

    from lakectl.kernel.change_classify import LOAD_COUNTS
    from lakectl.spark import event_write, load_tasks

    tasks = write_tasks(rows, max(1, len(touched)), parallelism)
    decided = None  # the changes decided on the driver
    events: Any  # a Spark DataFrame of the events, or None
    if options.mode is LoadMode.APPEND:
        events = load_tasks.append_events(batch, meta)
    else:
        ctx.progress(f"looking up {rows:,} keys")
        spark = batch.sparkSession
        if rows <= DECIDE_ON_DRIVER_ROWS:
            decided = load_tasks.driver_events(
                batch, meta, mode=options.mode, order_by=options.order_by,
                stored_for=lambda keys: _stored_rows_of(
                    spark, store, state, meta, touched, options.order_by, batch, keys
                ),
            )  # fmt: skip
            events = decided.inserts
        else:
            existing = _existing_keys(spark, store, state, meta, touched, options.order_by, batch)
            events = load_tasks.keyed_events(
                batch, existing, meta, mode=options.mode, order_by=options.order_by,
                key_tasks=parallelism,
            )  # fmt: skip
    phases["lookup"] = time.time() - started - sum(phases.values())
    failpoint("load.before_write")
    ctx.progress(f"writing {rows:,} {'rows' if options.mode is LoadMode.APPEND else 'changes'}")
    written = event_write.write_transaction_events(
        txn, meta, events, tasks=tasks,
        driver_changes=decided.deletes if decided is not None else (),
    )  # fmt: skip
    if options.mode is LoadMode.APPEND:
        counts = {"inserted": written.inserts}
    elif decided is not None:
        counts = decided.counts
    else:
        counts = {name: written.tallies.get(name, 0) for name in LOAD_COUNTS}
    phases["write"] = time.time() - started - sum(phases.values())
    return counts


def _stored_rows_of(
    spark,
    store: TableStore,
    state,
    meta: TableMetadata,
    touched: set[str],
    order_by: str | None,
    batch,
    keys,
):
    """The stored rows of ``keys`` (an Arrow table of the batch's distinct keys): looked up
    with pyarrow in tasks where :func:`lakectl.spark.key_lookup.lookup_spec` serves the table,
    else those of the batch's keys (:func:`_existing_keys`)."""
    from lakectl.spark import key_lookup

    lookup = key_lookup.lookup_spec(spark, meta.data_schema, meta.primary_key, order_by)
    found = None
    if lookup is not None:
        found = (lookup, keys.column(lookup.key).combine_chunks())
    return _existing_keys(spark, store, state, meta, touched, order_by, batch, found)


def _existing_keys(
    spark,
    store: TableStore,
    state,
    meta: TableMetadata,
    touched: set[str],
    order_by: str | None,
    batch,
    arrow_lookup: tuple[Any, Any] | None = None,
):
    """Keys, identities (and the order column) of the stored rows with a key of the batch.

    With ``arrow_lookup`` (a :class:`~lakectl.arrow.key_lookup.LookupSpec` and the batch's
    keys as an Arrow array) the stored files are searched with pyarrow in Spark tasks
    (:mod:`lakectl.spark.key_lookup`); otherwise the live-row kernel reads the key (and order)
    columns of the touched partitions in Spark tasks, and a broadcast semi join keeps the rows
    of the batch's keys.
    """
    from functools import reduce

    from pyspark.sql import functions as F

    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark import kernel_read, key_lookup, snapshot_rows

    valid, plans, _ = plan_lakectl(store, state, touched if meta.partition_by else None)
    spec = snapshot_rows.ReadSpec(
        store.storage,
        store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        valid,
        meta.data_key,
    )
    if arrow_lookup is not None:
        lookup, batch_keys = arrow_lookup
        rows = key_lookup.stored_rows_for_keys(
            spark, store.storage, plans, valid, lookup, spec.partition_schema, batch_keys
        )
    else:
        data_names = {c.lower() for c in meta.data_schema.names}
        needed = [c for c in (*meta.primary_key, order_by or "") if c.lower() in data_names]
        stored = kernel_read.kernel_rows(spark, plans, spec, with_identity=True, columns=needed)
        if stored is None:
            rows = snapshot_rows.empty_rows(spark, spec, with_identity=True)
        else:
            keys = batch.select(*[F.col(f"`{k}`") for k in meta.primary_key])
            same = [F.col(f"s.`{k}`") == F.col(f"k.`{k}`") for k in meta.primary_key]
            rows = stored.alias("s").join(
                F.broadcast(keys.alias("k")), reduce(lambda a, b: a & b, same), "left_semi"
            )
    keep = [*meta.primary_key, *meta.partition_by, "originalTransaction", "bucket", "rowId"]
    if order_by:
        keep.append(meta.schema[order_by].name)
    seen: list[str] = []
    for c in keep:
        if c not in seen:
            seen.append(c)
    return rows.select(*[F.col(f"`{c}`") for c in seen])


def spark_columns(raw: Any) -> list[tuple[str, str]]:
    """The (name, Spark SQL type) of each column of the DataFrame ``raw``."""
    return [(f.name, f.dataType.simpleString()) for f in raw.schema.fields]


def batch_target(
    state: TableState | None, columns: Sequence[tuple[str, str]], options: LoadOptions
) -> tuple[TableMetadata, tuple[TableMetadata, dict[str, Any], list[str]] | None, BatchOptions]:
    """What a batch of ``columns`` (name, Spark type) is loaded as, the same for both engines:
    the table's metadata (a new table's from the batch; with ``--evolve`` the batch's new
    columns added), the evolution (:func:`evolution_of`, or None) and the batch options (mode,
    op column and values, order). Raises for options the table does not take."""
    op_values = parse_op_values(options.op_values) if options.mode is LoadMode.CDC else None
    op_column = options.op_column or ("op_code" if options.mode is LoadMode.CDC else None)
    meta = state.metadata if state is not None else table_metadata_of(columns, options, op_column)
    evolution = None
    if options.evolve and state is not None:
        evolution = evolution_of(state, columns, op_column)
        meta = evolution[0] if evolution is not None else meta
    check_batch_options(meta, options)
    return meta, evolution, BatchOptions(options.mode, op_column, op_values, options.order_by)


def evolution_of(
    state: TableState, columns: Sequence[tuple[str, str]], op_column: str | None
) -> tuple[TableMetadata, dict[str, Any], list[str]] | None:
    """``--evolve``: the metadata with the batch's ``columns`` (name, type) the table lacks
    added, what the load's record says about the change, and the added names; None when the
    batch has no new column."""
    from lakectl.ops.alter import evolved_metadata
    from lakectl.table.evolution import SchemaChange

    schema = state.metadata.schema
    new = [
        (name, type_)
        for name, type_ in columns
        if name not in schema and not (op_column and name.lower() == op_column.lower())
    ]
    if not new:
        return None
    texts = tuple(f"{name} {type_}" for name, type_ in new)
    meta, changed = evolved_metadata(state, SchemaChange(add_columns=texts))
    return meta, {"evolved": changed}, [name for name, _ in new]


def table_metadata_of(
    columns: Sequence[tuple[str, str]], options: LoadOptions, op_column: str | None
) -> TableMetadata:
    """The metadata of the table a load creates: ``options.schema`` (as ``create --schema``),
    else the batch's ``columns`` (name, type; all but the op column), with the key,
    partitioning and buckets ``create`` takes."""
    layout = (
        tuple(split_columns(",".join(options.primary_key))),
        tuple(split_columns(",".join(options.partition_by))),
        options.buckets,
    )
    if options.schema is not None:
        return build_metadata(parse_schema(options.schema), *layout)
    kept = [
        Column(name, normalize_type(type_))
        for name, type_ in columns
        if not (op_column and name.lower() == op_column.lower())
    ]
    return build_metadata(Schema(tuple(kept)), *layout)
