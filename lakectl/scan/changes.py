"""A change scan: a ``changes`` request resolved on the log and the listing, for every back end.

The feed of a range (``from`` exclusive, ``to`` inclusive) holds the row changes of each data
commit in it. **Each commit's change rows depend on that commit alone**: they are computed from
the table as it was just before the commit and just after it, never from where the range
starts, so a commit's rows are the same in every range that contains it (an incremental
consumer and a backfill agree). A commit stores

- the rows it inserts, as insert events: each is an ``insert``, or an ``update_postimage``
  when the same commit deletes a row with the same key;
- the identities of the rows it deletes, as delete events: each names a row, whose values are
  the pre-image (a ``delete``, or an ``update_preimage`` when the commit also inserts the key).

A delete event counts only when the row it names is live just before the commit. ``restore``
and ``materialize`` commits repeat delete events for rows an earlier commit already deleted
(so that a read leaving out some commits still sees them deleted); those repeats change no live
row, so they are no change: every back end keeps, for each row identity, only the range's first
delete event (:data:`FIRST_DELETE_ONLY`). A row deleted before the range starts is not live in
the older snapshot, so its repeated delete event finds no pre-image either way. Compaction
commits rewrite files without changing rows and are no part of the feed.

Applying a range's feed to the older snapshot (remove each ``delete`` and ``update_preimage``,
add each ``insert`` and ``update_postimage``) gives the newer one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lakectl.errors import TimeTravelError, UsageError
from lakectl.planning.change_plan import ChangeRange, plan_changes, valid_time
from lakectl.planning.read_plan import PartitionReadPlan, require_whole_files
from lakectl.scan.plan import Scan, scan_of
from lakectl.scan.request import SnapshotRequest, check_request
from lakectl.scan.target import ReadTarget, plan_lakectl, with_written_schemas
from lakectl.table.listing import list_table
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.retention import availability, require_readable, with_following_compactions
from lakectl.table.store import TableStore
from lakectl.table.validity import ValidWriteIds

FIRST_DELETE_ONLY = True
"""The rule above, as the back ends apply it: of the range's delete events naming one row
identity (partition, originalTransaction, bucket, rowId), only the first (lowest write id)
yields a pre-image; a later one repeats a deletion and changes nothing."""


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
class ChangeScan:
    """A change request resolved on the log, for every back end: the range, the older snapshot
    (a :class:`~lakectl.scan.plan.Scan` of the stored rows, read with their identities for
    the pre-images) and the range's directories."""

    store: TableStore
    range: ChangeRange
    metadata: TableMetadata
    """The newer state's metadata (its columns and key are the feed's)."""
    newer: TableState
    older: Scan
    range_plans: tuple[PartitionReadPlan, ...]

    @property
    def table(self) -> str:
        return self.store.name or self.store.url

    @property
    def newer_valid(self) -> ValidWriteIds:
        """The write ids valid in the newer state (the range's commits among them)."""
        return self.newer.valid_write_ids()


def plan_change_scan(
    store: TableStore,
    request: ChangesRequest,
    storage_options: dict[str, object] | None = None,
    out_formats: Sequence[str] = (),
) -> ChangeScan:
    """Check ``request`` and resolve it on the log and the listing (no data is read).

    ``out_formats``: the ``--out`` formats the engine writes (default: the Spark engine's)."""
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
            storage_options,
        )
    older = with_following_compactions(full.prefix(rng.from_seq), full)
    require_readable(older, full, f"version {rng.from_version}")
    valid, plans, _ = plan_lakectl(store, older)
    # The older rows in today's columns (as a read of today's table shows them): columns added
    # since at their default, widened ones cast.
    plans = with_written_schemas(plans, newer)
    older_target = ReadTarget(store, meta, older, valid, tuple(plans))
    older_scan = scan_of(older_target, SnapshotRequest(raw=True))
    range_plans = with_written_schemas(_range_plans(store, list(meta.partition_by), rng), newer)
    return ChangeScan(store, rng, meta, newer, older_scan, tuple(range_plans))


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


def initial_rows_time(source: ChangeScan) -> dict[int, int]:
    """For an SCD2 view that starts after version 0: the start version -> the time its rows
    took effect (the rows live then are the view's first versions); else empty."""
    start = source.range.from_version
    if start == 0:
        return {}
    record = next(r for r in source.newer.records if r.write_id == start)
    return {start: valid_time(record)}


__all__ = [
    "FIRST_DELETE_ONLY",
    "ChangeScan",
    "ChangesRequest",
    "initial_rows_time",
    "plan_change_scan",
    "scd2_start",
]
