"""``lakectl changes``: every row change between two versions (or times) of a table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakectl.errors import TimeTravelError, UsageError
from lakectl.ops.context import Context
from lakectl.ops.reading import ReadTarget, plan_lakectl, with_written_schemas
from lakectl.ops.results import brief
from lakectl.ops.snapshot import SnapshotRequest, check_request, snapshot_frame
from lakectl.planning.change_plan import ChangeRange, plan_changes, valid_time
from lakectl.planning.read_plan import PartitionReadPlan, require_whole_files
from lakectl.table.listing import list_table
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.retention import availability, require_readable, with_following_compactions
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class ChangesRequest:
    """The range (``from`` exclusive, ``to`` inclusive) and where the changes go."""

    from_version: int | None = None
    to_version: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    limit: int | None = None
    out: str | None = None
    out_format: str = "parquet"
    scd2: bool = False
    current_valid_to: int | None = None
    """With ``scd2``: the ``valid_to`` of each key's current row (epoch ms); None: NULL."""
    """One row per version of each key (valid_from, valid_to, is_current) instead of changes."""


@dataclass
class ChangesResult:
    table: str
    from_version: int
    to_version: int
    versions: list[int]
    columns: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    out: str | None = None
    rows_written: int | None = None

    def __repr__(self) -> str:
        return brief(
            self,
            "table",
            "from_version",
            "to_version",
            "columns",
            "truncated",
            "out",
            "rows_written",
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "versions": self.versions,
            "columns": self.columns,
        }
        if self.out:
            data.update(out=self.out, rows_written=self.rows_written)
        else:
            data["rows"] = [dict(zip(self.columns, r, strict=True)) for r in self.rows]
            data["truncated"] = self.truncated
        return data


@dataclass(frozen=True)
class ChangeFeed:
    frame: DataFrame
    table: str
    range: ChangeRange
    key: tuple[str, ...]


def _range_plans(
    store: TableStore, partition_by: list[str], rng: ChangeRange
) -> list[PartitionReadPlan]:
    """Per partition, the range's delta and delete-delta directories (no base)."""
    wanted = rng.insert_dirs | rng.delete_dirs
    plans: list[PartitionReadPlan] = []
    found: set[str] = set()
    for listing in list_table(store.storage, store.root, partition_by):
        dirs = [d for d in listing.dirs if d.relative in wanted]
        found.update(d.relative for d in dirs)
        if dirs:
            plans.append(
                PartitionReadPlan(
                    relative=listing.relative,
                    values=listing.values,
                    base=None,
                    deltas=tuple(d for d in dirs if d.relative in rng.insert_dirs),
                    delete_deltas=tuple(d for d in dirs if d.relative in rng.delete_dirs),
                    originals=(),
                )
            )
    missing = sorted(wanted - found)
    if missing:
        raise TimeTravelError(
            f"the files of this range of versions are gone ({len(missing)} directories, e.g. "
            f"{store.storage.url(_log_dir_path(store, missing[0]))})",
            hint="ask for a later range; `lakectl history` lists the versions",
        )
    require_whole_files(plans, store.storage.url)
    return plans


def _log_dir_path(store: TableStore, relative: str) -> str:
    """The path of a directory the log names (checked when the log was read)."""
    return table_path(store.storage, store.root, relative, Shape.DATA_DIR, source="the log")


@dataclass(frozen=True)
class ChangeSource:
    """A change request resolved on the log, for either engine: the range, the older state
    (read with row identities for the pre-images) and the range's directories."""

    store: TableStore
    range: ChangeRange
    metadata: TableMetadata
    """The newer state's metadata (its columns and key are the feed's)."""
    newer: TableState
    older: ReadTarget
    range_plans: tuple[PartitionReadPlan, ...]

    @property
    def table(self) -> str:
        return self.store.name or self.store.url


def resolve_changes(
    ctx: Context, table_ref: str | None, request: ChangesRequest, out_formats: Sequence[str] = ()
) -> ChangeSource:
    """Check ``request`` and resolve it on the log and the listing (no data is read).

    ``out_formats``: the ``--out`` formats the engine writes (default: the Spark engine's)."""
    store = ctx.table(table_ref)
    store.require_log()
    full = store.read_state()
    if request.current_valid_to is not None and not request.scd2:
        raise UsageError("--current-valid-to needs --scd2")
    if request.scd2:
        if request.from_version is not None or request.from_time is not None:
            raise UsageError(
                "--scd2 covers the whole history: give no --from-version or --from-time",
                hint="--to-version/--to-time choose the state it ends with",
            )
        if not full.metadata.primary_key:
            raise UsageError(
                "--scd2 needs a table with a primary key: a key's versions are its rows over time"
            )
        request = replace(request, from_version=scd2_start(full))
    rng = plan_changes(
        full,
        from_version=request.from_version,
        to_version=request.to_version,
        from_time=request.from_time,
        to_time=request.to_time,
    )
    newer = full.prefix(rng.to_seq)
    meta = newer.metadata
    if out_formats:
        if request.out and request.out_format.lower() not in out_formats:
            raise UsageError(
                f"--format {request.out_format} is not written by the arrow engine",
                hint=f"use one of {', '.join(out_formats)}, or --engine spark",
            )
    else:
        check_request(
            meta.schema,
            SnapshotRequest(out=request.out, out_format=request.out_format),
            ctx.config.storage_options,
        )
    older = with_following_compactions(full.prefix(rng.from_seq), full)
    require_readable(older, full, f"version {rng.from_version}")
    valid, plans, _ = plan_lakectl(store, older)
    # The older rows in today's columns (as a read of today's table shows them): columns added
    # since at their default, widened ones cast.
    plans = with_written_schemas(plans, newer)
    older_target = ReadTarget(store, meta, older, valid, tuple(plans))
    range_plans = with_written_schemas(_range_plans(store, list(meta.partition_by), rng), newer)
    return ChangeSource(store, rng, meta, newer, older_target, tuple(range_plans))


def scd2_start(full: TableState) -> int:
    """The version an SCD2 view starts at: 0 (the empty table) while the whole history can be
    read, else the oldest version every later one can be read from (``clean`` removed older
    files or log entries). The rows live at a later start open the view, valid from then."""
    try:
        rng = plan_changes(full, from_version=0)
        older = with_following_compactions(full.prefix(rng.from_seq), full)
        require_readable(older, full, "version 0")
        return 0
    except TimeTravelError:
        oldest = availability(full)
        if oldest is None or oldest.version is None:
            raise
        return oldest.version


def initial_rows_time(source: ChangeSource) -> dict[int, int]:
    """For an SCD2 view that starts after version 0: the start version -> the time its rows
    took effect (the rows live then are the view's first versions); else empty."""
    start = source.range.from_version
    if start == 0:
        return {}
    record = next(r for r in source.newer.records if r.write_id == start)
    return {start: valid_time(record)}


def change_feed(ctx: Context, table_ref: str | None, request: ChangesRequest) -> ChangeFeed:
    """The row changes ``request`` asks for, as a lazy Spark DataFrame (checks first)."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark import acid_read
    from lakectl.spark.change_feed import change_feed as feed_frame
    from lakectl.spark.change_feed import scd2_rows

    source = resolve_changes(ctx, table_ref, request)
    store, meta, rng = source.store, source.metadata, source.range
    ctx.progress("reading changes")
    older_rows = snapshot_frame(ctx, source.older, SnapshotRequest(), with_identity=True)
    spec = acid_read.ReadSpec(
        store.storage,
        store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        source.newer.valid_write_ids(),
    )
    frame = feed_frame(
        ctx.spark(),
        spec,
        list(source.range_plans),
        older_rows,
        rng.valid_times if request.scd2 else rng.commit_times,
        meta.primary_key,
        initial_rows_time(source) if request.scd2 else {},
    )
    if request.scd2:
        frame = scd2_rows(frame, meta.primary_key, request.current_valid_to)
    return ChangeFeed(frame, source.table, rng, meta.primary_key)


def changes(ctx: Context, table_ref: str | None, request: ChangesRequest) -> ChangesResult:
    """The changes collected to the driver (at most ``limit``), or written to ``request.out``."""
    from lakectl.ops.snapshot import SnapshotResult, write_out
    from lakectl.spark.change_feed import in_commit_order, scd2_order

    if request.limit is not None and request.limit < 0:
        raise UsageError("--limit must not be negative")
    feed = change_feed(ctx, table_ref, request)
    order = scd2_order if request.scd2 else in_commit_order
    df = order(feed.frame, feed.key)
    result = ChangesResult(
        table=feed.table,
        from_version=feed.range.from_version,
        to_version=feed.range.to_version,
        versions=feed.range.write_ids,
        columns=df.columns,
    )
    if request.out:
        written = write_out(
            df,
            SnapshotRequest(limit=request.limit, out=request.out, out_format=request.out_format),
            SnapshotResult(table=feed.table, columns=df.columns, types=[]),
            ctx.config.storage_options,
        )
        result.out, result.rows_written = written.out, written.rows_written
        return result
    limit = request.limit
    rows = df.limit(limit + 1).collect() if limit else df.collect()
    if limit and len(rows) > limit:
        rows, result.truncated = rows[:limit], True
    result.rows = [tuple(r) for r in rows]
    return result
