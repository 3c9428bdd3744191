"""Opening a table for reading: its metadata, the state to read, and per-partition plans.

Works for lakectl tables (state from the log) and for Hive-written directories without a log
(schema from file footers, every directory committed unless a valid-write-id list says otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lakectl.errors import FormatError, TableNotFoundError, UsageError
from lakectl.planning.read_plan import PartitionReadPlan, plan_partition, require_whole_files
from lakectl.table.evolution import written_schemas
from lakectl.table.layout import parse_acid_dir
from lakectl.table.listing import PartitionListing, list_table
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import read_footer, require_acid_file, spark_type, starts_like_orc
from lakectl.table.retention import format_time, require_readable, with_following_compactions
from lakectl.table.schema import Column, Schema
from lakectl.table.store import TableStore
from lakectl.table.validity import ValidWriteIds, parse_valid_write_ids


@dataclass(frozen=True)
class ReadTarget:
    """A table resolved for reading at one point of its history."""

    store: TableStore
    metadata: TableMetadata
    state: TableState | None  # None for Hive-written tables
    valid: ValidWriteIds
    plans: tuple[PartitionReadPlan, ...]

    @property
    def is_hive(self) -> bool:
        return self.state is None


def committed_dirs(state: TableState) -> set[str]:
    return {d for r in state.records for d in r.added}


def plan_lakectl(
    store: TableStore, state: TableState, only: set[str] | None = None
) -> tuple[ValidWriteIds, list[PartitionReadPlan], list[PartitionListing]]:
    meta = state.metadata
    valid = state.valid_write_ids()
    visible = committed_dirs(state)
    listings = list_table(store.storage, store.root, list(meta.partition_by), only)
    plans = [plan_partition(lst, valid, lambda d: d.relative in visible) for lst in listings]
    for plan in plans:
        object.__setattr__(plan, "originals", ())  # lakectl tables never hold original files
    require_whole_files(plans, store.storage.url)
    return valid, with_written_schemas(plans, state), listings


def with_written_schemas(
    plans: list[PartitionReadPlan], state: TableState
) -> list[PartitionReadPlan]:
    """``plans`` knowing which of their directories hold an older data schema than the
    table's now (:func:`lakectl.table.evolution.written_schemas`)."""
    written = written_schemas(state)
    if not written:
        return plans
    out = []
    for plan in plans:
        dirs = (*plan.data_dirs, *plan.delete_deltas)
        older = tuple((d.relative, written[d.relative]) for d in dirs if d.relative in written)
        out.append(replace(plan, written=older))
    return out


def open_hive_table(store: TableStore, valid_text: str | None) -> ReadTarget:
    """Read a Hive-written ACID directory that has no lakectl log."""
    if not store.exists():
        raise store.missing_error()
    listings = list_table(store.storage, store.root, None)
    require_table_like(store, listings)
    part_names: list[str] = []
    for relative in (lst.relative for lst in listings if lst.relative):
        part_names = [p.split("=", 1)[0] for p in relative.split("/")]
        break
    write_ids = {
        w
        for lst in listings
        for d in lst.dirs
        for w in range(d.acid.min_write_id, d.acid.max_write_id + 1)
        if not d.acid.is_base
    } | {d.acid.max_write_id for lst in listings for d in lst.dirs if d.acid.is_base}
    if valid_text:
        valid = parse_valid_write_ids(valid_text)
    else:
        valid = ValidWriteIds(max(write_ids, default=0))
    data_cols = _infer_data_columns(store, listings)
    schema = Schema(tuple(data_cols) + tuple(Column(p, "string") for p in part_names))
    meta = TableMetadata(schema=schema, partition_by=tuple(part_names))
    plans = [plan_partition(lst, valid) for lst in listings]
    require_whole_files(plans, store.storage.url)
    return ReadTarget(store, meta, None, valid, tuple(_hive_written(store, plans, data_cols)))


def _hive_written(
    store: TableStore, plans: list[PartitionReadPlan], data_cols: list[Column]
) -> list[PartitionReadPlan]:
    """``plans`` knowing which data directories hold other columns than the newest one (a
    Hive table altered by ``ADD COLUMNS`` or ``CHANGE COLUMN`` since they were written), from
    the footer of each directory's first file: readers then map their fields by position, as
    Hive does."""
    newest = Schema(tuple(data_cols))
    out = []
    for plan in plans:
        older = []
        for d in plan.data_dirs:
            if not d.files:
                continue
            fields = require_acid_file(store.storage, d.files[0].path).row_columns or ()
            written = Schema(tuple(Column(n, spark_type(t)) for n, t in fields))
            if written != newest:
                older.append((d.relative, written))
        out.append(replace(plan, written=tuple(older)) if older else plan)
    return out


def require_table_like(store: TableStore, listings: list[PartitionListing]) -> None:
    """A directory without a lakectl log is read as a Hive table only if it holds ACID
    directories (``base_N``, ``delta_...``) or ORC files; anything else is not a table."""
    if any(lst.dirs for lst in listings):
        return
    if any(starts_like_orc(store.storage, f.path) for lst in listings for f in lst.originals[:1]):
        return
    raise TableNotFoundError(
        f"{store.url} is not a table: it has no lakectl log, no Hive ACID directories "
        "(base_N, delta_N_N_S) and no ORC files",
        hint="give the directory of a table (its name under the warehouse or its location); "
        "create one with `lakectl create` or `lakectl load --create`",
    )


def _infer_data_columns(store: TableStore, listings: list[PartitionListing]) -> list[Column]:
    """The data columns of the newest ACID directory's files (a table altered by Hive's ``ADD
    COLUMNS`` has older files with fewer columns: readers give those NULL), else of an original
    file."""
    storage = store.storage
    dirs = [d for lst in listings for d in lst.dirs]
    for d in sorted(dirs, key=lambda d: (d.acid.is_delete, -d.acid.max_write_id)):
        for f in d.files:
            footer = require_acid_file(storage, f.path)
            if d.acid.is_delete and footer.rows and not footer.row_columns:
                continue
            if footer.row_columns:
                return [Column(n, spark_type(t)) for n, t in footer.row_columns]
    for lst in listings:
        for f in lst.originals:
            footer = read_footer(storage, f.path)
            if footer.is_acid:
                raise FormatError(
                    f"{storage.url(f.path)}: an ACID file outside a base/delta directory"
                )
            return [Column(n, spark_type(t)) for n, t in footer.columns]
    raise FormatError(f"{store.url}: no ORC data files found to take a schema from")


def choose_state(
    state: TableState,
    *,
    version: int | None = None,
    known_at: int | None = None,
    as_of: int | None = None,
    raw: bool = False,
) -> TableState:
    """Time travel: ``version`` (write id), ``known_at`` (commit time), ``as_of`` (valid time).

    ``raw`` also leaves out materialized Type 7 statements: the rows as loaded. Raises :class:`TimeTravelError` when ``clean`` deleted files the chosen state needs.
    """
    if version is not None and known_at is not None:
        raise UsageError("--version and --known-at cannot be combined")
    full = state
    what = []
    if version is not None:
        state = with_following_compactions(state.at_version(version), full)
        what.append(f"version {version}")
    if known_at is not None:
        state = with_following_compactions(state.known_at(known_at), full)
        what.append(f"the table as known at {format_time(known_at)}")
    if as_of is not None:
        state = state.effective_at(as_of)
        what.append(f"the table as of {format_time(as_of)}")
    if raw:
        state = state.without_operations(frozenset({"materialize"}))
        what.append("the rows as loaded (--raw)")
    if what:
        require_readable(state, full, ", ".join(what))
    return state


def open_for_read(
    store: TableStore,
    *,
    version: int | None = None,
    known_at: int | None = None,
    as_of: int | None = None,
    valid_write_ids: str | None = None,
    only: set[str] | None = None,
    raw: bool = False,
) -> ReadTarget:
    """Resolve what a snapshot reads."""
    if not store.has_log():
        if version is not None or known_at is not None:
            raise UsageError(
                f"{store.url} has no lakectl log: use --valid-write-ids to choose what to read"
            )
        return open_hive_table(store, valid_write_ids)
    if valid_write_ids:
        raise UsageError("--valid-write-ids is for Hive-written tables; use --version here")
    full = store.read_state()
    state = choose_state(full, version=version, known_at=known_at, as_of=as_of, raw=raw)
    valid, plans, _ = plan_lakectl(store, state, only)
    return ReadTarget(store, state.metadata, state, valid, tuple(plans))


def is_acid_dir_name(name: str) -> bool:
    return parse_acid_dir(name) is not None
