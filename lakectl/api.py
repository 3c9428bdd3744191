"""lakectl as a library: open or create a table, then load, read, correct and maintain it.

```python
import lakectl

t = lakectl.open_table("sales", warehouse="./warehouse")        # a name, a path or a URL
r = t.load("batch.csv", mode="cdc", op_column="op_code", order_by="change_ts")
r.inserted, r.updated, r.deleted, r.ignored, r.version
df = t.to_spark(as_of="2024-06-01", where="store_id = 'S01'")  # a lazy Spark DataFrame
t.compact("auto")
t.clean(retain="7d", dry_run=True)
```

Every method returns a plain result object (the ones the CLI renders) and raises the
:class:`lakectl.LakectlError` family. Reading the log (``schema``, ``version``, ``history``,
``partitions``, ``updates``, ``compactions``, ``clean``, ``set_properties``) never starts a JVM;
the other methods use the Spark session given as ``spark=``, else the active one of the process,
else one lakectl starts (``master=``/``remote=``/``conf=``, or the configuration files).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from lakectl.config import Config, load_config
from lakectl.errors import UsageError
from lakectl.ops.context import Context, Progress, no_progress

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from lakectl.ops.alter import AlterResult
    from lakectl.ops.changes import ChangesResult
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
    from lakectl.ops.snapshot import SnapshotResult
    from lakectl.ops.stream import StreamResult, StreamStatus
    from lakectl.ops.tables import TablesResult
    from lakectl.ops.updates import InstallResult, Statements
    from lakectl.table.schema import Schema

TimeLike = int | str | dt.datetime | dt.date
"""A point in time: epoch milliseconds, a date or ISO date-time text, or a date/datetime
(naive values are UTC). For ``as_of``, ``-1`` means the raw data without Type 7 statements."""

CompactKind = Literal["minor", "major", "auto"]


def to_millis(value: TimeLike | None, what: str, timezone: str | None = None) -> int | None:
    """``value`` as epoch milliseconds (``None`` stays ``None``); text as ``--as-of`` takes it."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{what}: expected a time, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return int(aware.timestamp() * 1000)
    if isinstance(value, dt.date):
        return to_millis(dt.datetime(value.year, value.month, value.day), what)
    if isinstance(value, str):
        from lakectl.updates.times import parse_time

        try:
            return parse_time(value, timezone).millis
        except UsageError:
            raise
        except Exception as exc:  # BadInputError: the value itself is malformed
            message = getattr(exc, "message", str(exc))
            raise UsageError(f"{what}: {message}") from exc
    raise UsageError(f"{what}: expected a time, got {type(value).__name__}")


def _columns(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Column names given as a list or as comma-separated text."""
    if value is None:
        return ()
    if isinstance(value, str):
        from lakectl.ops.create import split_columns

        return split_columns(value)
    return tuple(value)


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


class Table:
    """One lakectl (or Hive-written) table. Create it with :func:`open_table` or
    :func:`create_table`; it holds no state beyond where the table is and how to reach Spark, so
    every call reads the newest committed state."""

    def __init__(self, ctx: Context, ref: str | None) -> None:
        self._ctx = ctx
        self._ref = ref
        store = ctx.table(ref)
        self.name: str = store.name or store.url
        """The table's name under the warehouse, or its location."""
        self.location: str = store.url
        """The table's URL (``file://...``, ``s3://...``, ``hdfs://...``)."""

    def __repr__(self) -> str:
        return f"lakectl.Table({self.location!r})"

    @property
    def context(self) -> Context:
        """The configuration and Spark session this table's operations use."""
        return self._ctx

    # --- the log (no JVM) ----------------------------------------------------------------

    def show(self, valid_write_ids: str | None = None) -> ShowResult:
        """What ``lakectl show`` prints: schema, key, partitioning, properties, partitions."""
        from lakectl.ops.inspect import show

        return show(self._ctx.table(self._ref), valid_write_ids)

    @property
    def schema(self) -> Schema:
        """The table's columns (partition columns last, as stored)."""
        return self._ctx.table(self._ref).read_state().metadata.schema

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The primary key columns (empty when the table has none)."""
        return tuple(self._ctx.table(self._ref).read_state().metadata.primary_key)

    @property
    def partition_by(self) -> tuple[str, ...]:
        """The partition columns."""
        return tuple(self._ctx.table(self._ref).read_state().metadata.partition_by)

    @property
    def properties(self) -> dict[str, str]:
        """Every table property with its effective value (defaults included)."""
        return self._ctx.table(self._ref).read_state().metadata.effective_properties()

    @property
    def version(self) -> int:
        """The newest committed version (write id); 0 for an empty new table."""
        return self._ctx.table(self._ref).read_state().max_write_id

    def history(self, limit: int | None = None) -> History:
        """The commits from the start of history, oldest first (the last ``limit`` only, when
        given); ``.history_start`` says where history starts when ``clean`` expired older log
        entries; ``.to_dict()`` is what ``lakectl history --json`` prints."""
        from lakectl.ops.inspect import history

        return history(self._ctx.table(self._ref), limit)

    def checkpoint(self) -> CheckpointResult:
        """Write a log checkpoint of the newest state now (``lakectl checkpoint``); readers
        start from the newest checkpoint instead of reading every log record."""
        from lakectl.ops.checkpoint import write_checkpoint

        return write_checkpoint(self._ctx.table(self._ref))

    def partitions(self) -> list[PartitionSummary]:
        """Per partition: directories, files, bytes and rows of the current state."""
        return self.show().partitions

    def updates(self) -> Statements:
        """The installed Type 7 statements, in the order reads apply them."""
        from lakectl.ops.updates import list_installed

        return list_installed(self._ctx.table(self._ref))

    def compactions(
        self, states: Iterable[str] = (), partitions: Iterable[str] = ()
    ) -> Compactions:
        """The table's compactions, one entry per partition (``lakectl compactions``)."""
        from lakectl.ops.compact import compactions

        return compactions(self._ctx.table(self._ref), tuple(states), tuple(partitions))

    def set_properties(
        self,
        properties: Mapping[str, object] | Iterable[str] | None = None,
        unset: Iterable[str] = (),
    ) -> SetResult:
        """Change table properties in one commit: a mapping key -> value, or ``"key=value"``
        texts as ``lakectl set`` takes them; ``unset`` keys go back to their defaults."""
        from lakectl.ops.set_properties import set_properties

        if isinstance(properties, Mapping):
            assignments = tuple(f"{k}={v}" for k, v in properties.items())
        else:
            assignments = tuple(properties or ())
        return set_properties(self._ctx.table(self._ref), assignments, tuple(unset))

    def alter(
        self,
        add_columns: str | Sequence[str] = (),
        *,
        widen: str | Sequence[str] = (),
        rename: str | Mapping[str, str] | Sequence[str] = (),
    ) -> AlterResult:
        """Change the schema in one commit (``lakectl alter``): ``add_columns`` as
        ``"discount double default 0"`` texts (added at the end; rows stored before read the
        default, or NULL), ``widen`` as ``"qty bigint"`` (int -> bigint, float -> double,
        decimal precision up), ``rename`` as ``{"old": "new"}`` or ``"old=new"`` texts (data
        columns only; stored rows read under the new name). Bad input raises and writes
        nothing."""
        from lakectl.ops.alter import alter
        from lakectl.table.evolution import SchemaChange

        renames = (
            tuple(f"{old}={new}" for old, new in rename.items())
            if isinstance(rename, Mapping)
            else _texts(rename)
        )
        change = SchemaChange(_texts(add_columns), _texts(widen), renames)
        return alter(self._ctx.table(self._ref), change)

    def apply_updates(self, path: str, timezone: str | None = None) -> InstallResult:
        """Validate the statements of the ``.updates`` file at ``path`` and install them all
        (one commit), or none."""
        from lakectl.ops.updates import install

        return install(self._ctx, self._ref, path, timezone)

    def clean(
        self, retain: str | None = None, dry_run: bool = False, force: bool = False
    ) -> CleanResult:
        """Delete what compactions replaced and no state inside ``retain`` (default: the
        table's ``clean.retain``) reads, and the files of writers that never committed.
        A retention below the table's ``clean.retain.minimum`` needs ``force``."""
        from lakectl.ops.clean import CleanOptions, clean

        options = CleanOptions(retain=retain, dry_run=dry_run, force=force)
        return clean(self._ctx, self._ref, options)

    # --- Spark ---------------------------------------------------------------------------

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
        """
        from lakectl.ops.load import load, load_dataframe, load_options

        options = load_options(
            self._ctx.table(self._ref),
            source if isinstance(source, str) else "DataFrame",
            format=format,
            mode=mode,
            primary_key=_columns(primary_key),
            partition_by=_columns(partition_by),
            op_column=op_column,
            op_values=_op_values(op_values),
            order_by=order_by,
            effective_at=to_millis(effective_from, "effective_from"),
            evolve=evolve,
            create=create,
            buckets=buckets,
            schema=schema,
            force=force,
        )
        if isinstance(source, str):
            return load(self._ctx, self._ref, options)
        return load_dataframe(self._ctx, self._ref, source, options)

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
                primary_key=_columns(primary_key),
                partition_by=_columns(partition_by),
                op_column=op_column,
                op_values=_op_values(op_values),
                order_by=order_by,
                evolve=evolve,
            ),
            trigger_seconds=parse_trigger(trigger),
            on_bad_file=on_bad_file,
            max_batches=max_batches,
            stop_after=stop_after,
            max_files_per_batch=max_files_per_batch,
            compact=compact,
        )
        return stream(self._ctx, self._ref, options, on_event=on_event, on_tick=on_tick)

    def to_spark(
        self,
        *,
        version: int | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        where: str | None = None,
        columns: str | Sequence[str] | None = None,
        raw: bool = False,
        valid_write_ids: str | None = None,
        timezone: str | None = None,
    ) -> DataFrame:
        """The table's rows as a lazy Spark DataFrame: merge-on-read at ``version`` (a write
        id), ``known_at`` (transaction time) and ``as_of`` (valid time; ``-1``: raw data), with
        the Type 7 statements effective at ``as_of`` applied unless ``raw``, filtered by
        ``where`` (Spark SQL over the table's columns) and projected to ``columns``."""
        from lakectl.ops.snapshot import snapshot_dataframe

        request = self._request(
            version, as_of, known_at, where, columns, raw, valid_write_ids, timezone
        )
        return snapshot_dataframe(self._ctx, self._ref, request)

    def to_arrow(
        self,
        *,
        version: int | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        where: str | None = None,
        columns: str | Sequence[str] | None = None,
        raw: bool = False,
        valid_write_ids: str | None = None,
        timezone: str | None = None,
    ) -> pa.Table:
        """The rows :meth:`to_spark` returns, as a :class:`pyarrow.Table`, read without Spark
        or a JVM (:mod:`lakectl.arrow`). ``where`` and the Type 7 statements applied take
        comparisons of columns with literals, ``AND``/``OR``/``NOT``, ``IS NULL``, ``IN`` and
        ``BETWEEN``; anything else is refused (:class:`lakectl.errors.UsageError`) naming it."""
        from lakectl.ops.snapshot import read_arrow

        request = self._request(
            version, as_of, known_at, where, columns, raw, valid_write_ids, timezone
        )
        return read_arrow(self._ctx, self._ref, request).read_all()

    def to_batches(
        self,
        *,
        version: int | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        where: str | None = None,
        columns: str | Sequence[str] | None = None,
        raw: bool = False,
        valid_write_ids: str | None = None,
        timezone: str | None = None,
    ) -> pa.RecordBatchReader:
        """:meth:`to_arrow` as a stream of record batches, stripe by stripe of each
        partition's files: memory holds one stripe's rows and a partition's delete events, not
        the table's rows. The request is checked (and refused)
        before the first batch is read; DuckDB reads it with ``con.from_arrow(reader)``."""
        from lakectl.ops.snapshot import read_arrow

        request = self._request(
            version, as_of, known_at, where, columns, raw, valid_write_ids, timezone
        )
        return read_arrow(self._ctx, self._ref, request).reader()

    def to_pandas(self, **read: Any) -> pd.DataFrame:
        """:meth:`to_arrow` (same keyword arguments) as a pandas DataFrame."""
        return self.to_arrow(**read).to_pandas()

    def to_polars(self, **read: Any) -> Any:
        """:meth:`to_arrow` (same keyword arguments) as a Polars DataFrame; needs polars."""
        try:
            import polars
        except ImportError as exc:
            raise UsageError(
                "to_polars needs the polars package, which is not installed",
                hint="pip install polars, or use to_arrow / to_pandas",
            ) from exc
        return polars.from_arrow(self.to_arrow(**read))

    def to_duckdb(self, con: Any, **read: Any) -> Any:
        """:meth:`to_batches` (same keyword arguments) as a relation of the DuckDB connection
        ``con`` (``con.from_arrow``): DuckDB streams the batches as it runs the query."""
        return con.from_arrow(self.to_batches(**read))

    def snapshot(
        self,
        *,
        version: int | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        where: str | None = None,
        columns: str | Sequence[str] | None = None,
        raw: bool = False,
        limit: int | None = None,
        out: str | None = None,
        out_format: str = "parquet",
        valid_write_ids: str | None = None,
        timezone: str | None = None,
        order_by: str | Sequence[str] | None = None,
        engine: Literal["spark", "arrow"] = "spark",
        key_order: bool = False,
    ) -> SnapshotResult:
        """What ``lakectl snapshot`` does: the rows collected to the driver (at most ``limit``,
        sorted by ``order_by`` when given, else with ``key_order`` by the table's primary key
        when it has one), or written to ``out`` as Parquet, ORC, CSV or JSON; the result's
        ``order_by`` names the sort applied (empty: the order of the table's files).
        ``engine="arrow"`` reads with pyarrow instead of Spark (no JVM; see :meth:`to_arrow`
        for what it cannot apply)."""
        from lakectl.ops.snapshot import snapshot

        request = replace(
            self._request(version, as_of, known_at, where, columns, raw, valid_write_ids, timezone),
            limit=limit,
            out=out,
            out_format=out_format,
            order_by=_columns(order_by),
            key_order=key_order,
        )
        if engine == "arrow":
            from lakectl.ops.snapshot import arrow_snapshot

            return arrow_snapshot(self._ctx, self._ref, request)
        return snapshot(self._ctx, self._ref, request)

    def changes(
        self,
        *,
        from_version: int | None = None,
        to_version: int | None = None,
        from_time: TimeLike | None = None,
        to_time: TimeLike | None = None,
        timezone: str | None = None,
    ) -> DataFrame:
        """Every row change after ``from_version`` (or the state known at ``from_time``) up to
        ``to_version`` (or ``to_time``; default: the newest version), as a lazy Spark DataFrame:
        the table's columns, ``_change_type`` (insert, update_preimage, update_postimage,
        delete), ``_commit_version`` (write id) and ``_commit_time``. Applied in version order
        to the older state, the changes give the newer one."""
        from lakectl.ops.changes import ChangesRequest, change_feed

        request = ChangesRequest(
            from_version=from_version,
            to_version=to_version,
            from_time=to_millis(from_time, "from_time", timezone),
            to_time=to_millis(to_time, "to_time", timezone),
        )
        return change_feed(self._ctx, self._ref, request).frame

    def changes_arrow(
        self,
        *,
        from_version: int | None = None,
        to_version: int | None = None,
        from_time: TimeLike | None = None,
        to_time: TimeLike | None = None,
        timezone: str | None = None,
    ) -> pa.Table:
        """The rows :meth:`changes` returns, as a :class:`pyarrow.Table` read without Spark
        or a JVM (:mod:`lakectl.arrow`), sorted by ``_commit_version`` and the key (each
        pre-image before its post-image); ``_commit_time`` is a UTC timestamp."""
        from lakectl.ops.changes import ChangesRequest, arrow_changes

        request = ChangesRequest(
            from_version=from_version,
            to_version=to_version,
            from_time=to_millis(from_time, "from_time", timezone),
            to_time=to_millis(to_time, "to_time", timezone),
        )
        return arrow_changes(self._ctx, self._ref, request).rows

    def list_changes(
        self,
        *,
        from_version: int | None = None,
        to_version: int | None = None,
        from_time: TimeLike | None = None,
        to_time: TimeLike | None = None,
        timezone: str | None = None,
        scd2: bool = False,
        current_valid_to: TimeLike | None = None,
        limit: int | None = None,
        out: str | None = None,
        out_format: str = "parquet",
        engine: Literal["spark", "arrow"] = "spark",
    ) -> ChangesResult:
        """What ``lakectl changes`` does: :meth:`changes` (or :meth:`scd2`) collected to the
        driver (at most ``limit`` rows) or written to ``out`` as Parquet, ORC, CSV or JSON.
        ``engine="arrow"`` reads with pyarrow instead of Spark (no JVM; ``out`` as Parquet,
        ORC or CSV)."""
        from lakectl.ops.changes import ChangesRequest, changes

        request = ChangesRequest(
            from_version=from_version,
            to_version=to_version,
            from_time=to_millis(from_time, "from_time", timezone),
            to_time=to_millis(to_time, "to_time", timezone),
            limit=limit,
            out=out,
            out_format=out_format,
            scd2=scd2,
            current_valid_to=to_millis(current_valid_to, "current_valid_to", timezone),
        )
        if engine == "arrow":
            from lakectl.ops.changes import arrow_list_changes

            return arrow_list_changes(self._ctx, self._ref, request)
        return changes(self._ctx, self._ref, request)

    def scd2(
        self,
        *,
        to_version: int | None = None,
        to_time: TimeLike | None = None,
        timezone: str | None = None,
        current_valid_to: TimeLike | None = None,
    ) -> DataFrame:
        """The table's history as a slowly changing dimension of Type 2, as a lazy Spark
        DataFrame: one row per version of each key, with ``valid_from`` and ``valid_to`` (the
        times the changes that made and replaced it took effect: a load's ``effective_from``, else
        its commit time; ``valid_to`` NULL for the current version) and
        ``is_current``, up to ``to_version`` (or ``to_time``; default: the newest version).
        ``current_valid_to`` (e.g. ``"9999-12-31"``) replaces NULL as the current rows'
        ``valid_to``, as dbt's ``dbt_valid_to_current`` does."""
        from lakectl.ops.changes import ChangesRequest, change_feed

        request = ChangesRequest(
            to_version=to_version,
            to_time=to_millis(to_time, "to_time", timezone),
            scd2=True,
            current_valid_to=to_millis(current_valid_to, "current_valid_to", timezone),
        )
        return change_feed(self._ctx, self._ref, request).frame

    def scd2_arrow(
        self,
        *,
        to_version: int | None = None,
        to_time: TimeLike | None = None,
        timezone: str | None = None,
        current_valid_to: TimeLike | None = None,
    ) -> pa.Table:
        """The rows :meth:`scd2` returns, as a :class:`pyarrow.Table` read without Spark or a
        JVM, sorted by key and ``valid_from``."""
        from lakectl.ops.changes import ChangesRequest, arrow_changes

        request = ChangesRequest(
            to_version=to_version,
            to_time=to_millis(to_time, "to_time", timezone),
            scd2=True,
            current_valid_to=to_millis(current_valid_to, "current_valid_to", timezone),
        )
        return arrow_changes(self._ctx, self._ref, request).rows

    def materialize(self, until: TimeLike, timezone: str | None = None) -> MaterializeResult:
        """Fold the active statements effective by ``until`` into the data and retire them."""
        from lakectl.ops.materialize import materialize

        until_ms = to_millis(until, "until", timezone)
        assert until_ms is not None
        return materialize(self._ctx, self._ref, until_ms)

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
    ) -> CompactResult:
        """Compact as Hive's compactor does: ``minor`` merges deltas, ``major`` rewrites the
        base, ``auto`` decides per partition from the table's thresholds. ``partitions`` are
        ``col=value`` texts (default: all)."""
        from lakectl.ops.compact import CompactOptions, compact

        options = CompactOptions(
            kind=kind,
            partitions=tuple(partitions),
            dry_run=dry_run,
            delta_num_threshold=delta_num_threshold,
            delta_pct_threshold=delta_pct_threshold,
            aborted_threshold=aborted_threshold,
            target_file_size=target_file_size,
        )
        return compact(self._ctx, self._ref, options)

    def delete(self, where: str, *, dry_run: bool = False) -> DmlResult:
        """Delete the rows matching ``where`` now, as one transaction (``lakectl delete``);
        ``dry_run`` counts them per partition and writes nothing."""
        from lakectl.ops.dml import DmlRequest, run_dml

        return run_dml(self._ctx, self._ref, DmlRequest("delete", where=where, dry_run=dry_run))

    def update(
        self,
        assignments: str | Mapping[str, str],
        where: str | None = None,
        *,
        dry_run: bool = False,
    ) -> DmlResult:
        """Change the rows matching ``where`` (default: all) now, as one transaction
        (``lakectl update``). ``assignments`` is ``"c = expr, ..."`` or a mapping column -> SQL
        expression text."""
        from lakectl.expr.parse import parse_assignments
        from lakectl.ops.dml import DmlRequest, run_dml

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
        request = DmlRequest("update", where=where, assignments=text, dry_run=dry_run)
        return run_dml(self._ctx, self._ref, request)

    def restore(
        self, version: int | None = None, *, as_of: TimeLike | None = None, dry_run: bool = False
    ) -> RestoreResult:
        """Make the table read as it did right after ``version`` (or at commit time ``as_of``),
        as one new commit; the versions in between stay reachable by time travel."""
        from lakectl.ops.restore import restore

        at = to_millis(as_of, "as_of")
        return restore(self._ctx, self._ref, version=version, at=at, dry_run=dry_run)

    def skew(
        self,
        columns: str | Sequence[str],
        *,
        partitions: Iterable[str] = (),
        top: int = 10,
        min_share: float = 0.01,
        max_values: int = 10,
    ) -> SkewResult:
        """Per partition, the heaviest values of ``columns`` and the list-bucketing
        recommendation."""
        from lakectl.ops.skew import SkewOptions, skew

        options = SkewOptions(_columns(columns), tuple(partitions), top, min_share, max_values)
        return skew(self._ctx, self._ref, options)

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
    ) -> ListBucketResult:
        """Rewrite partitions into one directory per skewed value plus a default directory:
        ``keys`` as a list (``[6, 20]``, ``["S01", "S02"]``, tuples for several columns) or as
        ``--keys`` text, or ``auto``; ``off`` goes back to the plain layout."""
        from lakectl.ops.list_bucket import ListBucketOptions, list_bucket

        options = ListBucketOptions(
            columns=_columns(columns),
            keys=keys if keys is None or isinstance(keys, str) else _keys_text(keys),
            auto=auto,
            off=off,
            partitions=tuple(partitions),
            min_share=min_share,
            max_values=max_values,
            dry_run=dry_run,
        )
        return list_bucket(self._ctx, self._ref, options)

    def _request(
        self,
        version: int | None,
        as_of: TimeLike | None,
        known_at: TimeLike | None,
        where: str | None,
        columns: str | Sequence[str] | None,
        raw: bool,
        valid_write_ids: str | None,
        timezone: str | None,
    ) -> Any:
        from lakectl.ops.snapshot import SnapshotRequest

        return SnapshotRequest(
            version=version,
            as_of=to_millis(as_of, "as_of", timezone),
            known_at=to_millis(known_at, "known_at", timezone),
            where=where,
            columns=_columns(columns),
            valid_write_ids=valid_write_ids,
            raw=raw,
        )


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
    """Create an empty table (``schema`` as ``lakectl create --schema`` takes it, e.g.
    ``"sell_id bigint, amt double default 0, day string"``) and return it."""
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
    create(store, schema, _columns(primary_key), _columns(partition_by), buckets)
    return table


class Warehouse:
    """The lakectl tables under one warehouse root, listed and maintained together. Create it
    with :func:`open_warehouse`."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def __repr__(self) -> str:
        return f"lakectl.Warehouse({self._ctx.config.warehouse!r})"

    @property
    def context(self) -> Context:
        """The configuration and Spark session the warehouse's operations use."""
        return self._ctx

    def table_names(self) -> tuple[str, ...]:
        """The names of the lakectl tables under the warehouse, sorted (one listing)."""
        from lakectl.ops.tables import find_tables

        return find_tables(self._ctx).names

    def tables(self) -> TablesResult:
        """Every lakectl table of the warehouse with its version, rows, bytes, deltas, pending
        compaction and last commit (``lakectl tables``; no JVM). A table lakectl cannot read is
        listed with its error."""
        from lakectl.ops.tables import list_tables

        return list_tables(self._ctx)

    def maintain(
        self, tables: Iterable[str] = (), *, dry_run: bool = False, wait: bool = False
    ) -> MaintainResult:
        """Compact, clean and checkpoint every table (or those named) as its properties and
        state call for (``lakectl maintain``), one table at a time under its maintenance lock:
        a table another run holds is skipped, or waited for with ``wait``. A failing table is
        reported in the result (``status == "failed"``) and the others still run."""
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
    """The warehouse at ``warehouse`` (else the configured one), as :func:`open_table` takes
    its options."""
    return Warehouse(_context(warehouse, spark, master, remote, conf, storage_options, progress))


def _ref(ref: str | None, config: Config) -> str:
    if ref is not None:
        return ref
    if config.default_table:
        return config.default_table
    raise UsageError("no table given and no default table configured", hint="open_table('sales')")
