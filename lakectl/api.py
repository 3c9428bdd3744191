"""lakectl as a library: open or create a table, then load, read, correct and maintain it.

```python
import lakectl

t = lakectl.open_table("sales", warehouse="./warehouse")        # a name, a path or a URL
r = t.load("batch.csv", mode="cdc", op_column="op_code", order_by="change_ts")
r.inserted, r.updated, r.deleted, r.ignored, r.version
t.scan(where="store_id = 'S01'").to_pandas()                  # read with pyarrow, no JVM
t.scan(as_of="2024-06-01", engine="spark").to_spark()         # a lazy Spark DataFrame
t.changes(from_version=2).to_arrow()                          # the change feed
t.compact("auto")
t.clean(retain="7d", dry_run=True)
```

A :class:`Table` is pinned to the state of the log it first read: its properties, scans,
change feeds, ``history`` and ``show`` all see that version until :meth:`Table.refresh` (or a
write through the table, which refreshes it). Every method returns a plain result object (the
ones the CLI renders, exported from :mod:`lakectl`) and raises the
:class:`lakectl.LakectlError` family, whose messages name the Python arguments. Reading the log
and the Arrow engine never start a JVM; Spark jobs use the session given as ``spark=``, else the
active one of the process, else one lakectl starts (``master=``/``remote=``/``conf=``, or the
configuration files).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from lakectl.api_values import TimeLike, column_names, to_millis
from lakectl.config import Config, load_config
from lakectl.errors import UsageError
from lakectl.ops.context import Context, Progress, no_progress
from lakectl.pinned import PinnedContext, pin
from lakectl.table_reads import Changes, Engine, Scan, python_errors

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakectl.ops.alter import AlterResult
    from lakectl.ops.checkpoint import CheckpointResult
    from lakectl.ops.clean import CleanResult
    from lakectl.ops.compact import Compactions, CompactResult
    from lakectl.ops.dml import DmlResult
    from lakectl.ops.inspect import History, PartitionSummary, ShowResult
    from lakectl.ops.list_bucket import ListBucketResult
    from lakectl.ops.load import LoadResult
    from lakectl.ops.maintain import MaintainResult
    from lakectl.ops.materialize import MaterializeResult
    from lakectl.ops.restore import RestoreResult
    from lakectl.ops.set_properties import SetResult
    from lakectl.ops.skew import SkewResult
    from lakectl.ops.stream import StreamResult, StreamStatus
    from lakectl.ops.tables import TablesResult
    from lakectl.ops.updates import InstallResult, Statements
    from lakectl.table.log import TableState
    from lakectl.table.schema import Schema

CompactKind = Literal["minor", "major", "auto"]
P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


def _python_errors_on_public_methods(cls: C) -> C:
    """Wrap every public method and property of ``cls`` so that its errors name Python
    arguments (:func:`lakectl.table_reads.python_errors`)."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, property) and value.fget is not None:
            setattr(cls, name, property(python_errors(value.fget), doc=value.__doc__))
        elif callable(value):
            setattr(cls, name, python_errors(value))
    return cls


def _write(method: Callable[P, R]) -> Callable[P, R]:
    """A write through a :class:`Table`: when it fails, the table is refreshed too (the next
    read pins the state the failed write left); when it succeeds, ``_wrote`` refreshes it."""
    import functools

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except BaseException:
            args[0]._state = None  # type: ignore[attr-defined]
            raise

    return wrapper


def _context(
    warehouse: str | None,
    spark: SparkSession | None,
    master: str | None,
    remote: str | None,
    conf: Mapping[str, Any] | None,
    storage_options: Mapping[str, Any] | None,
    progress: Progress,
) -> Context:
    config = load_config(
        warehouse=warehouse,
        master=master,
        remote=remote,
        conf=tuple(f"{k}={v}" for k, v in (conf or {}).items()),
    )
    if storage_options:
        config = replace(config, storage_options={**config.storage_options, **storage_options})
    ctx = Context(config=config, progress=progress)
    session = spark if spark is not None else _active_session()
    if session is not None:
        ctx.use_spark(session)
    return ctx


def _active_session() -> SparkSession | None:
    """The caller's active Spark session, if pyspark is loaded and one is running (never starts
    pyspark or a JVM itself)."""
    if "pyspark.sql" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


@_python_errors_on_public_methods
class Table:
    """One lakectl (or Hive-written) table. Create it with :func:`open_table` or
    :func:`create_table`.

    The table is pinned to the state of its log it reads first (opening reads nothing):
    properties, :meth:`scan`, :meth:`changes`, :meth:`history`, :meth:`show` and the other
    reads see that version until :meth:`refresh`. A write through the table (``load``,
    ``delete``, ``compact``, ...) is based on the newest state and refreshes the table
    afterwards. A Hive-written table (no lakectl log) is read as it is at each call.
    """

    def __init__(self, ctx: Context, ref: str | None, *, flag_names: bool = False) -> None:
        """A table of ``ctx``'s warehouse (prefer :func:`open_table`).

        Args:
            ctx: the configuration and Spark session.
            ref: a table name, path or URL.
            flag_names: errors name the command line's flags instead of Python arguments
                (the CLI's use).
        """
        self._ctx = ctx
        self._ref = ref
        self._flag_names = flag_names
        self._state: TableState | None = None
        store = ctx.table(ref)
        self.name: str = store.name or store.url
        """The table's name under the warehouse, or its location."""
        self.location: str = store.url
        """The table's URL (``file://...``, ``s3://...``, ``hdfs://...``)."""

    def __repr__(self) -> str:
        pinned = "" if self._state is None else f", version={self._state.max_write_id}"
        return f"lakectl.Table({self.location!r}{pinned})"

    @property
    def context(self) -> Context:
        """The configuration and Spark session this table's operations use."""
        return self._ctx

    # --- the pinned state ------------------------------------------------------------------

    def _pinned(self) -> TableState:
        """The state the table is pinned to (read from the log on first use)."""
        if self._state is None:
            self._state = self._ctx.table(self._ref).read_state()
        return self._state

    def _reading(self) -> Context:
        """The context reads use: its table is pinned (a Hive-written table, without a log,
        is read as it is)."""
        store = self._ctx.table(self._ref)
        if self._state is None:
            if not store.has_log():
                return self._ctx
            self._state = store.read_state()
        return PinnedContext(self._ctx, pin(store, self._state))

    def refresh(self) -> Table:
        """Read the log again and pin the table to its newest state.

        Returns:
            This table.
        """
        self._state = None
        store = self._ctx.table(self._ref)
        if store.has_log():
            self._state = store.read_state()
        return self

    def _wrote(self, result: R, dry_run: bool = False) -> R:
        """``result`` of a write; the table is refreshed (not after a dry run): the next read
        pins the newest state, which holds the write (read then, not now: a command line run
        that writes reads no more)."""
        if not dry_run:
            self._state = None
        return result

    @property
    def schema(self) -> Schema:
        """The table's columns (partition columns last, as stored) at the pinned version."""
        return self._pinned().metadata.schema

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The primary key columns (empty when the table has none)."""
        return tuple(self._pinned().metadata.primary_key)

    @property
    def partition_by(self) -> tuple[str, ...]:
        """The partition columns."""
        return tuple(self._pinned().metadata.partition_by)

    @property
    def properties(self) -> dict[str, str]:
        """Every table property with its effective value (defaults included)."""
        return self._pinned().metadata.effective_properties()

    @property
    def version(self) -> int:
        """The pinned version (write id); 0 for an empty new table."""
        return self._pinned().max_write_id

    # --- reading ---------------------------------------------------------------------------

    def scan(
        self,
        *,
        version: int | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        where: str | None = None,
        columns: str | Sequence[str] | None = None,
        order_by: str | Sequence[str] | None = None,
        limit: int | None = None,
        engine: Engine | None = None,
        raw: bool = False,
        key_order: bool = False,
        valid_write_ids: str | None = None,
        timezone: str | None = None,
    ) -> Scan:
        """The table's rows (merge-on-read), to be read by the returned object's methods:
        ``to_arrow()``, ``to_batches()``, ``to_pandas()``, ``to_polars()``,
        ``to_duckdb(con)``, ``to_spark()``, ``collect()``, ``write(path, format=)``, or
        described by ``plan()``. Nothing is read here.

        Args:
            version: the state right after this version (write id); default the pinned one.
            as_of: valid time: loads and Type 7 statements effective then (``-1``: raw data).
            known_at: transaction time: only what was committed by then.
            where: a row filter, SQL over the table's columns (``"store_id = 'S01'"``).
            columns: the columns to return (a list, or comma-separated text).
            order_by: sort by these columns (each may end in ``" desc"``).
            limit: at most this many rows.
            engine: ``"arrow"`` (pyarrow, no JVM; the default of every method but
                ``to_spark``) or ``"spark"``.
            raw: apply no Type 7 statements.
            key_order: without ``order_by``, sort by the primary key (when there is one).
            valid_write_ids: for a Hive-written table, Hive's valid write-id list.
            timezone: the zone of times given without an offset (default UTC).

        Returns:
            A :class:`lakectl.Scan`.
        """
        from lakectl.ops.snapshot import SnapshotRequest

        if limit is not None and limit < 0:
            raise UsageError(f"limit={limit}: must not be negative")
        request = SnapshotRequest(
            version=version,
            as_of=to_millis(as_of, "as_of", timezone),
            known_at=to_millis(known_at, "known_at", timezone),
            where=where,
            columns=column_names(columns),
            limit=limit or None,
            valid_write_ids=valid_write_ids,
            raw=raw,
            order_by=column_names(order_by),
            key_order=key_order,
        )
        return Scan(self._reading(), self._ref, request, engine, self._flag_names)

    def changes(
        self,
        *,
        from_version: int | None = None,
        to_version: int | None = None,
        from_time: TimeLike | None = None,
        to_time: TimeLike | None = None,
        limit: int | None = None,
        engine: Engine | None = None,
        timezone: str | None = None,
    ) -> Changes:
        """Every row change after ``from_version`` (or the state known at ``from_time``) up to
        ``to_version`` (or ``to_time``; default: the pinned version): the table's columns,
        ``_change_type`` (insert, update_preimage, update_postimage, delete),
        ``_commit_version`` (write id) and ``_commit_time``. Applied in version order to the
        older state, the changes give the newer one. ``.scd2()`` on the result gives the rows
        over time instead. Nothing is read here.

        Args:
            from_version: changes after this version (0: the empty table).
            to_version: up to and including this version.
            from_time: changes after the state known at this time.
            to_time: up to the state known at this time.
            limit: at most this many rows.
            engine: ``"arrow"`` (the default of every method but ``to_spark``) or ``"spark"``.
            timezone: the zone of times given without an offset (default UTC).

        Returns:
            A :class:`lakectl.Changes`.
        """
        from lakectl.ops.changes import ChangesRequest

        if limit is not None and limit < 0:
            raise UsageError(f"limit={limit}: must not be negative")
        request = ChangesRequest(
            from_version=from_version,
            to_version=to_version,
            from_time=to_millis(from_time, "from_time", timezone),
            to_time=to_millis(to_time, "to_time", timezone),
            limit=limit or None,
        )
        return Changes(self._reading(), self._ref, request, engine, self._flag_names)

    def show(self, valid_write_ids: str | None = None) -> ShowResult:
        """What ``lakectl show`` prints, at the pinned version.

        Args:
            valid_write_ids: for a Hive-written table, Hive's valid write-id list.

        Returns:
            A :class:`lakectl.ShowResult`: schema, key, partitioning, properties and per
            partition the directories, exact live rows and bytes.
        """
        from lakectl.ops.inspect import show

        return show(self._reading().table(self._ref), valid_write_ids)

    def history(self, limit: int | None = None) -> History:
        """The commits from the start of history up to the pinned version, oldest first.

        Args:
            limit: only the last ``limit`` commits.

        Returns:
            A :class:`lakectl.History` (a list of :class:`lakectl.HistoryEntry`;
            ``.history_start`` says where history starts when ``clean`` expired older log
            entries; ``.to_pandas()``; ``.to_dict()`` is ``lakectl history --json``).
        """
        from lakectl.ops.inspect import history

        return history(self._reading().table(self._ref), limit)

    def partitions(self) -> list[PartitionSummary]:
        """Per partition: directories, files, bytes and exact live rows.

        Returns:
            The :class:`lakectl.PartitionSummary` of each partition (``show().partitions``).
        """
        return self.show().partitions

    def statements(self) -> Statements:
        """The installed Type 7 statements, in the order reads apply them.

        Returns:
            A :class:`lakectl.Statements` listing (``lakectl updates``).
        """
        from lakectl.ops.updates import list_installed

        return list_installed(self._reading().table(self._ref))

    def compactions(
        self, states: Iterable[str] = (), partitions: Iterable[str] = ()
    ) -> Compactions:
        """The table's compactions, one entry per partition (``lakectl compactions``).

        Args:
            states: only compactions in these states (e.g. ``"ready for cleaning"``).
            partitions: only these partitions (``col=value`` texts).

        Returns:
            A :class:`lakectl.Compactions` listing.
        """
        from lakectl.ops.compact import compactions

        store = self._reading().table(self._ref)
        return compactions(store, tuple(states), tuple(partitions))

    def skew(
        self,
        columns: str | Sequence[str],
        *,
        partitions: Iterable[str] = (),
        top: int = 10,
        min_share: float = 0.01,
        max_values: int = 10,
        engine: str | None = None,
    ) -> SkewResult:
        """Per partition, the heaviest values of ``columns`` and the list-bucketing
        recommendation (one pass over the pinned version's stored rows).

        Args:
            columns: the column(s) whose values to count.
            partitions: only these partitions (``col=value`` texts).
            top: the heaviest values listed per partition.
            min_share: the share of rows a value needs to be recommended.
            max_values: at most this many values recommended.
            engine: ``"spark"``, ``"arrow"`` (in this process, no JVM; columns of integer,
                string, date or boolean type) or ``"auto"`` (Arrow when the partitions read
                are at most ``engine.auto.max-bytes``); default: the configured engine.

        Returns:
            A :class:`lakectl.SkewResult` (``engine`` says which engine counted).
        """
        from lakectl.ops.skew import SkewOptions, skew

        options = SkewOptions(
            column_names(columns), tuple(partitions), top, min_share, max_values, engine
        )
        return skew(self._reading(), self._ref, options)

    # --- writing (each refreshes the table) --------------------------------------------------

    @_write
    def checkpoint(self) -> CheckpointResult:
        """Write a log checkpoint of the newest state now (``lakectl checkpoint``); readers
        start from the newest checkpoint instead of reading every log record.

        Returns:
            A :class:`lakectl.CheckpointResult`.
        """
        from lakectl.ops.checkpoint import write_checkpoint

        return self._wrote(write_checkpoint(self._ctx.table(self._ref)))

    @_write
    def set_properties(
        self,
        properties: Mapping[str, object] | Iterable[str] | None = None,
        unset: Iterable[str] = (),
    ) -> SetResult:
        """Change table properties in one commit.

        Args:
            properties: a mapping key -> value, or ``"key=value"`` texts as ``lakectl set``
                takes them.
            unset: keys that go back to their defaults.

        Returns:
            A :class:`lakectl.SetResult` (``changed``: the keys and their new values).
        """
        from lakectl.ops.set_properties import set_properties

        if isinstance(properties, Mapping):
            assignments = tuple(f"{k}={v}" for k, v in properties.items())
        else:
            assignments = tuple(properties or ())
        store = self._ctx.table(self._ref)
        return self._wrote(set_properties(store, assignments, tuple(unset)))

    @_write
    def alter(
        self,
        add_columns: str | Sequence[str] = (),
        *,
        widen: str | Sequence[str] = (),
        rename: str | Mapping[str, str] | Sequence[str] = (),
    ) -> AlterResult:
        """Change the schema in one commit (``lakectl alter``); bad input raises and writes
        nothing.

        Args:
            add_columns: ``"discount double default 0"`` texts, added at the end (rows stored
                before read the default, or NULL).
            widen: ``"qty bigint"`` texts (int -> bigint, float -> double, decimal precision
                up).
            rename: ``{"old": "new"}`` or ``"old=new"`` texts (data columns only; stored rows
                read under the new name).

        Returns:
            A :class:`lakectl.AlterResult`.
        """
        from lakectl.ops.alter import alter
        from lakectl.table.evolution import SchemaChange

        renames = (
            tuple(f"{old}={new}" for old, new in rename.items())
            if isinstance(rename, Mapping)
            else _texts(rename)
        )
        change = SchemaChange(_texts(add_columns), _texts(widen), renames)
        return self._wrote(alter(self._ctx.table(self._ref), change))

    @_write
    def apply_updates(self, path: str, timezone: str | None = None) -> InstallResult:
        """Validate the statements of an ``.updates`` file and install them all (one commit),
        or none.

        Args:
            path: the ``.updates`` file.
            timezone: the zone of its times without an offset (default UTC).

        Returns:
            A :class:`lakectl.InstallResult`.
        """
        from lakectl.ops.updates import install

        return self._wrote(install(self._ctx, self._ref, path, timezone))

    @_write
    def clean(
        self, retain: str | None = None, dry_run: bool = False, force: bool = False
    ) -> CleanResult:
        """Delete what compactions replaced and no state inside ``retain`` reads, and the
        files of writers that never committed.

        Args:
            retain: how long old states stay readable (``"7d"``; default: the table's
                ``clean.retain``).
            dry_run: say what would be deleted; delete nothing.
            force: allow a retention below the table's ``clean.retain.minimum``.

        Returns:
            A :class:`lakectl.CleanResult`.
        """
        from lakectl.ops.clean import CleanOptions, clean

        options = CleanOptions(retain=retain, dry_run=dry_run, force=force)
        return self._wrote(clean(self._ctx, self._ref, options), dry_run)

    # --- loading (Spark) -------------------------------------------------------------------

    @_write
    def load(
        self,
        source: str | DataFrame,
        *,
        mode: Literal["append", "upsert", "cdc"] | None = None,
        format: str | None = None,
        op_column: str | None = None,
        op_values: str | Mapping[str, str] | None = None,
        order_by: str | None = None,
        effective_from: TimeLike | None = None,
        primary_key: str | Sequence[str] | None = None,
        partition_by: str | Sequence[str] | None = None,
        evolve: bool = False,
        create: bool = False,
        buckets: int = 0,
        schema: str | None = None,
        force: bool = False,
        engine: str | None = None,
    ) -> LoadResult:
        """Load one batch as one transaction: a file or directory (CSV, JSON lines, Parquet,
        ORC, Avro; ``format`` overrides the extension) or a Spark DataFrame.

        Without ``mode``: ``cdc`` when ``op_column`` is given, ``upsert`` when the table has a
        primary key, else ``append``. The result's ``inserted``, ``updated``, ``deleted``,
        ``ignored`` and ``version`` say what the load did. A load into a missing table raises
        :class:`~lakectl.errors.TableNotFoundError` unless ``create``: then the table is
        created with ``primary_key``, ``partition_by``, ``buckets`` and ``schema`` (as
        :meth:`create` takes them; columns from the batch without ``schema``). With
        ``evolve``, the batch's columns the table lacks are added (nullable, at the end) in the
        load's own commit (``result.evolved`` names them); without it they are
        an error. A file or folder the log says was loaded already (same location and
        content) is skipped unless ``force``, and one without rows commits nothing:
        ``result.status`` is then ``"skipped"`` (``result.loaded_by``: its version) or
        ``"empty"``; neither starts Spark.

        Args:
            source: a file or directory path or URL, or a Spark DataFrame.
            mode: ``"append"``, ``"upsert"`` or ``"cdc"``.
            format: the source's format (default: from the extension).
            op_column: the column holding each change's operation code (CDC).
            op_values: the codes, as ``{"I": "insert", ...}`` or ``"I=insert,..."`` text.
            order_by: the column ordering a key's changes within the batch.
            effective_from: when the batch takes effect (valid time; default: now).
            primary_key: with ``create``: the key columns.
            partition_by: with ``create``: the partition columns.
            evolve: add the batch's new columns first.
            create: create the table when it is missing.
            buckets: with ``create``: the number of buckets.
            schema: with ``create``: the columns, as :func:`create_table` takes them.
            force: load a source the log says was loaded already.
            engine: ``"spark"``, ``"arrow"`` (in this process with pyarrow, without starting
                a JVM) or ``"auto"`` (Arrow for a job within the table's
                ``engine.auto.max-bytes``); default: the configured engine. A DataFrame is
                loaded by Spark.

        Returns:
            A :class:`lakectl.LoadResult`.
        """
        from lakectl.ops.load import load, load_dataframe, load_options

        options = load_options(
            self._ctx.table(self._ref),
            source if isinstance(source, str) else "DataFrame",
            format=format,
            mode=mode,
            primary_key=column_names(primary_key),
            partition_by=column_names(partition_by),
            op_column=op_column,
            op_values=_op_values(op_values),
            order_by=order_by,
            effective_at=to_millis(effective_from, "effective_from"),
            evolve=evolve,
            create=create,
            buckets=buckets,
            schema=schema,
            force=force,
            engine=engine,
        )
        if isinstance(source, str):
            return self._wrote(load(self._ctx, self._ref, options))
        return self._wrote(load_dataframe(self._ctx, self._ref, source, options))

    @_write
    def stream(
        self,
        source_dir: str,
        *,
        mode: Literal["append", "upsert", "cdc"] | None = None,
        format: str | None = None,
        op_column: str | None = None,
        op_values: str | Mapping[str, str] | None = None,
        order_by: str | None = None,
        primary_key: str | Sequence[str] | None = None,
        partition_by: str | Sequence[str] | None = None,
        evolve: bool = False,
        trigger: str = "5s",
        on_bad_file: Literal["fail", "skip"] = "fail",
        max_files_per_batch: int = 1000,
        compact: bool = True,
        max_batches: int | None = None,
        stop_after: float | None = None,
        engine: str | None = None,
        on_event: Callable[[str], None] | None = None,
        on_tick: Callable[[StreamStatus], None] | None = None,
    ) -> StreamResult:
        """Load files as they land in ``source_dir``, one transaction per micro-batch, until
        ``max_batches`` or ``stop_after`` seconds (or SIGINT/SIGTERM in the main thread).

        Load options as for :meth:`load` (``evolve``: a file's new columns join the table
        before its micro-batch); ``trigger`` is how often to look (``"500ms"``,
        ``"5s"``); ``on_bad_file="skip"`` moves unreadable files aside; ``compact`` runs
        ``compact("auto")`` between micro-batches. ``on_event`` receives one line per event,
        ``on_tick`` the status about every trigger.

        Args:
            source_dir: the landing directory.
            trigger: how often to look for new files.
            on_bad_file: ``"fail"`` or ``"skip"`` (moves the file aside).
            max_files_per_batch: at most this many files per micro-batch.
            compact: compact between micro-batches.
            max_batches: stop after this many micro-batches.
            stop_after: stop after this many seconds.
            engine: ``"spark"``, ``"arrow"`` (no JVM: the landing directory listed every
                trigger, micro-batches loaded and compacted in this process) or ``"auto"`` (as
                arrow, a micro-batch over ``engine.auto.max-bytes`` loaded by Spark); default:
                the configured engine.
            on_event: receives one line per event.
            on_tick: receives the status about every trigger.
            mode, format, op_column, op_values, order_by, primary_key, partition_by, evolve:
                as :meth:`load` takes them.

        Returns:
            A :class:`lakectl.StreamResult` (``stopped_by``, ``status``).
        """
        from lakectl.ops.load import load_options
        from lakectl.ops.stream import StreamOptions, stream
        from lakectl.planning.stream_plan import parse_trigger

        options = StreamOptions(
            load=load_options(
                self._ctx.table(self._ref),
                source_dir,
                format=format,
                mode=mode,
                primary_key=column_names(primary_key),
                partition_by=column_names(partition_by),
                op_column=op_column,
                op_values=_op_values(op_values),
                order_by=order_by,
                evolve=evolve,
                engine=engine,
            ),
            trigger_seconds=parse_trigger(trigger),
            on_bad_file=on_bad_file,
            max_batches=max_batches,
            stop_after=stop_after,
            max_files_per_batch=max_files_per_batch,
            compact=compact,
        )
        result = stream(self._ctx, self._ref, options, on_event=on_event, on_tick=on_tick)
        return self._wrote(result)

    @_write
    def materialize(
        self, until: TimeLike, timezone: str | None = None, *, engine: str | None = None
    ) -> MaterializeResult:
        """Fold the active statements effective by ``until`` into the data and retire them.

        Args:
            until: the statements effective by this time are folded in.
            timezone: the zone of a time without an offset (default UTC).
            engine: ``"spark"``, ``"arrow"`` (in this process, no JVM) or ``"auto"`` (Arrow
                when the table's files are at most ``engine.auto.max-bytes`` and the Arrow
                engine can apply the statements); default: the configured engine.

        Returns:
            A :class:`lakectl.MaterializeResult`.
        """
        from lakectl.ops.materialize import materialize

        until_ms = to_millis(until, "until", timezone)
        if until_ms is None:
            raise UsageError("until=: a time is needed, e.g. until='2024-06-01'")
        return self._wrote(materialize(self._ctx, self._ref, until_ms, engine))

    @_write
    def compact(
        self,
        kind: CompactKind = "auto",
        *,
        partitions: Iterable[str] = (),
        dry_run: bool = False,
        delta_num_threshold: int | None = None,
        delta_pct_threshold: float | None = None,
        aborted_threshold: int | None = None,
        target_file_size: str | None = None,
        engine: str | None = None,
    ) -> CompactResult:
        """Compact as Hive's compactor does.

        Args:
            kind: ``"minor"`` merges deltas, ``"major"`` rewrites the base, ``"auto"`` decides
                per partition from the table's thresholds.
            partitions: only these partitions (``col=value`` texts; default: all).
            dry_run: say what would be compacted; write nothing.
            delta_num_threshold: overrides the table's ``compactor.delta.num.threshold``.
            delta_pct_threshold: overrides ``compactor.delta.pct.threshold``.
            aborted_threshold: overrides ``compactor.aborted.threshold``.
            target_file_size: the size of the files written (``"128MB"``).
            engine: ``"spark"``, ``"arrow"`` (in this process, no JVM) or ``"auto"`` (Arrow
                when the files read are small enough); default: the configured engine.

        Returns:
            A :class:`lakectl.CompactResult` (``engine`` says which engine ran).
        """
        from lakectl.ops.compact import CompactOptions, compact

        options = CompactOptions(
            kind=kind,
            partitions=tuple(partitions),
            dry_run=dry_run,
            delta_num_threshold=delta_num_threshold,
            delta_pct_threshold=delta_pct_threshold,
            aborted_threshold=aborted_threshold,
            target_file_size=target_file_size,
            engine=engine,
        )
        return self._wrote(compact(self._ctx, self._ref, options), dry_run)

    @_write
    def delete(self, where: str, *, dry_run: bool = False, engine: str | None = None) -> DmlResult:
        """Delete the rows matching ``where`` now, as one transaction (``lakectl delete``).

        Args:
            where: which rows, SQL over the table's columns.
            dry_run: count them per partition; write nothing.
            engine: ``"spark"``, ``"arrow"`` (no JVM) or ``"auto"`` (by the size of the
                partitions read); default: the configured engine.

        Returns:
            A :class:`lakectl.DmlResult` (``deleted``, ``version``, per partition counts).
        """
        from lakectl.ops.dml import DmlRequest, run_dml
        from lakectl.table.log import Operation

        request = DmlRequest(Operation.DELETE, where=where, dry_run=dry_run, engine=engine)
        return self._wrote(run_dml(self._ctx, self._ref, request), dry_run)

    @_write
    def update_rows(
        self,
        assignments: str | Mapping[str, str],
        where: str | None = None,
        *,
        dry_run: bool = False,
        engine: str | None = None,
    ) -> DmlResult:
        """Change the rows matching ``where`` now, as one transaction (``lakectl update``).
        Unlike the Type 7 statements of :meth:`apply_updates`, this rewrites the rows.

        Args:
            assignments: ``"c = expr, ..."`` or a mapping column -> SQL expression text.
            where: which rows (default: all).
            dry_run: count them per partition; write nothing.
            engine: ``"spark"``, ``"arrow"`` (no JVM) or ``"auto"``; default: the configured
                engine.

        Returns:
            A :class:`lakectl.DmlResult` (``updated``, ``version``, per partition counts).
        """
        from lakectl.expr.parse import parse_assignments
        from lakectl.ops.dml import DmlRequest, run_dml
        from lakectl.table.log import Operation

        if isinstance(assignments, str):
            text = assignments
        else:
            parts = []
            for column, value in assignments.items():
                part = f"`{column.replace('`', '``')}` = {value}"
                if len(parse_assignments(part)) != 1:  # a value is one expression
                    raise UsageError(f"assignments[{column!r}]: one expression, got {value!r}")
                parts.append(part)
            text = ", ".join(parts)
        request = DmlRequest(
            Operation.UPDATE, where=where, assignments=text, dry_run=dry_run, engine=engine
        )
        return self._wrote(run_dml(self._ctx, self._ref, request), dry_run)

    @_write
    def restore(
        self,
        version: int | None = None,
        *,
        as_of: TimeLike | None = None,
        dry_run: bool = False,
        engine: str | None = None,
    ) -> RestoreResult:
        """Make the table read as it did right after ``version`` (or at commit time ``as_of``),
        as one new commit; the versions in between stay reachable by time travel.

        Args:
            version: the version (write id) to restore.
            as_of: instead of ``version``: the newest version committed by this time.
            dry_run: count what would change; write nothing.
            engine: ``"spark"``, ``"arrow"`` (no JVM) or ``"auto"``; default: the configured
                engine.

        Returns:
            A :class:`lakectl.RestoreResult`.
        """
        from lakectl.ops.restore import restore

        at = to_millis(as_of, "as_of")
        result = restore(
            self._ctx, self._ref, version=version, at=at, dry_run=dry_run, engine=engine
        )
        return self._wrote(result, dry_run)

    @_write
    def list_bucket(
        self,
        columns: str | Sequence[str] = (),
        *,
        keys: str | Sequence[object] | None = None,
        auto: bool = False,
        off: bool = False,
        partitions: Iterable[str] = (),
        dry_run: bool = False,
        min_share: float = 0.01,
        max_values: int = 10,
        engine: str | None = None,
    ) -> ListBucketResult:
        """Rewrite partitions into one directory per skewed value plus a default directory.

        Args:
            columns: the skewed column(s).
            keys: the values, as a list (``[6, 20]``, ``["S01", "S02"]``, tuples for several
                columns) or as ``--keys`` text.
            auto: choose the values from :meth:`skew`'s recommendation.
            off: go back to the plain layout.
            partitions: only these partitions (``col=value`` texts).
            dry_run: say what would be rewritten; write nothing.
            min_share: with ``auto``: the share of rows a value needs.
            max_values: with ``auto``: at most this many values.
            engine: ``"spark"``, ``"arrow"`` (in this process, no JVM; with ``auto`` the
                skew is counted in it too) or ``"auto"`` (Arrow when the directories
                rewritten are at most ``engine.auto.max-bytes``); default: the configured
                engine.

        Returns:
            A :class:`lakectl.ListBucketResult` (``engine`` says which engine ran).
        """
        from lakectl.ops.list_bucket import ListBucketOptions, list_bucket

        options = ListBucketOptions(
            columns=column_names(columns),
            keys=keys if keys is None or isinstance(keys, str) else _keys_text(keys),
            auto=auto,
            off=off,
            partitions=tuple(partitions),
            min_share=min_share,
            max_values=max_values,
            dry_run=dry_run,
            engine=engine,
        )
        return self._wrote(list_bucket(self._ctx, self._ref, options), dry_run)


def _texts(value: str | Sequence[str]) -> tuple[str, ...]:
    """One text or several, as a tuple (a text is never split: it may hold commas)."""
    return (value,) if isinstance(value, str) else tuple(value)


def _keys_text(keys: Sequence[object]) -> str:
    """List-bucketing keys as ``--keys`` text: SQL literals, tuples for several columns."""

    def literal(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return repr(value)
        if isinstance(value, dt.date):
            return f"'{value.isoformat()}'"
        return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"

    def item(key: object) -> str:
        if isinstance(key, tuple | list):
            return "(" + ", ".join(literal(v) for v in key) + ")"
        return literal(key)

    return ", ".join(item(k) for k in keys)


def _op_values(value: str | Mapping[str, str] | None) -> str:
    from lakectl.ops.load import DEFAULT_OP_VALUES

    if value is None:
        return DEFAULT_OP_VALUES
    if isinstance(value, str):
        return value
    return ",".join(f"{code}={action}" for code, action in value.items())


def open_table(
    ref: str | None = None,
    *,
    warehouse: str | None = None,
    spark: SparkSession | None = None,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    progress: Progress = no_progress,
) -> Table:
    """A table by name (under ``warehouse``, else the configured one), path or URL.

    ``spark`` is the session to run jobs in (default: the process's active session, else one
    lakectl starts with ``master``/``remote``/``conf`` when a job first needs it).
    ``storage_options`` go to fsspec (e.g. ``endpoint_url`` for S3). Opening reads nothing:
    a table that does not exist fails at its first use.

    Args:
        ref: a table name (under the warehouse), path or URL; default the configured table.
        warehouse: the root of table names (default: configured, else ``./warehouse``).
        spark: the Spark session to run jobs in.
        master: the Spark master of a session lakectl starts (``local[*]``, ``spark://...``).
        remote: a Spark Connect server (``sc://host:15002``).
        conf: Spark configuration of a session lakectl starts.
        storage_options: fsspec options.
        progress: receives a short status text as operations advance.

    Returns:
        A :class:`lakectl.Table`.
    """
    ctx = _context(warehouse, spark, master, remote, conf, storage_options, progress)
    return Table(ctx, _ref(ref, ctx.config))


def create_table(
    ref: str,
    *,
    schema: str,
    primary_key: str | Sequence[str] | None = None,
    partition_by: str | Sequence[str] | None = None,
    buckets: int = 0,
    warehouse: str | None = None,
    spark: SparkSession | None = None,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    progress: Progress = no_progress,
) -> Table:
    """Create an empty table and return it.

    Args:
        ref: the table's name, path or URL.
        schema: the columns, e.g. ``"sell_id bigint, amt double default 0, day string"``.
        primary_key: the key column(s).
        partition_by: the partition column(s).
        buckets: the number of buckets (0: none).
        warehouse, spark, master, remote, conf, storage_options, progress: as
            :func:`open_table` takes them.

    Returns:
        The new :class:`lakectl.Table`.
    """
    from lakectl.ops.create import create_table as create

    table = open_table(
        ref,
        warehouse=warehouse,
        spark=spark,
        master=master,
        remote=remote,
        conf=conf,
        storage_options=storage_options,
        progress=progress,
    )
    store = table.context.table(ref)
    create(store, schema, column_names(primary_key), column_names(partition_by), buckets)
    return table


@_python_errors_on_public_methods
class Warehouse:
    """The lakectl tables under one warehouse root, listed and maintained together. Create it
    with :func:`open_warehouse`."""

    def __init__(self, ctx: Context, *, flag_names: bool = False) -> None:
        """The warehouse of ``ctx`` (prefer :func:`open_warehouse`).

        Args:
            ctx: the configuration and Spark session.
            flag_names: errors name the command line's flags (the CLI's use).
        """
        self._ctx = ctx
        self._flag_names = flag_names

    def __repr__(self) -> str:
        return f"lakectl.Warehouse({self._ctx.config.warehouse!r})"

    @property
    def context(self) -> Context:
        """The configuration and Spark session the warehouse's operations use."""
        return self._ctx

    def table_names(self) -> tuple[str, ...]:
        """The names of the lakectl tables under the warehouse, sorted (one listing).

        Returns:
            The names.
        """
        from lakectl.ops.tables import find_tables

        return find_tables(self._ctx).names

    def tables(self) -> TablesResult:
        """Every lakectl table of the warehouse with its version, rows, bytes, deltas, pending
        compaction and last commit (``lakectl tables``; no JVM). A table lakectl cannot read is
        listed with its error.

        Returns:
            A :class:`lakectl.TablesResult`.
        """
        from lakectl.ops.tables import list_tables

        return list_tables(self._ctx)

    def maintain(
        self, tables: Iterable[str] = (), *, dry_run: bool = False, wait: bool = False
    ) -> MaintainResult:
        """Compact, clean and checkpoint every table (or those named) as its properties and
        state call for (``lakectl maintain``), one table at a time under its maintenance lock:
        a table another run holds is skipped, or waited for with ``wait``. A failing table is
        reported in the result (``status == "failed"``) and the others still run.

        Args:
            tables: only these tables (default: all).
            dry_run: say what would be done; change nothing.
            wait: wait for a table another run holds instead of skipping it.

        Returns:
            A :class:`lakectl.MaintainResult`.
        """
        from lakectl.ops.maintain import MaintainOptions, maintain

        return maintain(self._ctx, MaintainOptions(tuple(tables), dry_run, wait))


def open_warehouse(
    warehouse: str | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    progress: Progress = no_progress,
) -> Warehouse:
    """The warehouse at ``warehouse`` (else the configured one).

    Args:
        warehouse: the warehouse root (path or URL).
        spark, master, remote, conf, storage_options, progress: as :func:`open_table` takes
            them.

    Returns:
        A :class:`lakectl.Warehouse`.
    """
    return Warehouse(_context(warehouse, spark, master, remote, conf, storage_options, progress))


def _ref(ref: str | None, config: Config) -> str:
    if ref is not None:
        return ref
    if config.default_table:
        return config.default_table
    raise UsageError("no table given and no default table configured", hint="open_table('sales')")


__all__ = [
    "CompactKind",
    "Table",
    "TimeLike",
    "Warehouse",
    "create_table",
    "open_table",
    "open_warehouse",
    "to_millis",
]
