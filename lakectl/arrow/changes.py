"""The change feed and the SCD Type 2 view read into Arrow, without Spark or a JVM.

The rules of :mod:`lakectl.scan.changes` (as :mod:`lakectl.spark.change_feed` applies them),
read from a :class:`~lakectl.scan.changes.ChangeScan` with the same merge-on-read of event files
(:mod:`lakectl.arrow.partition_reader`): the range's commits' insert events are inserts, their delete
events name the deleted rows' identities, whose values (the pre-images) are the rows with those
identities in the older snapshot or inserted earlier in the range (only an identity's first
delete event in the range counts); a delete and an insert of the same key by one commit are an
update (``update_preimage``, ``update_postimage``). The identities are unique within a
partition, so the pre-images are joined partition by partition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lakectl.arrow.partition_reader import (
    MergeSpec,
    concat_as,
    partition_rows,
    range_events,
    with_partition_values,
)
from lakectl.kernel.live_rows import IDENTITY
from lakectl.planning.change_plan import (
    CHANGE_TYPE,
    COMMIT_TIME,
    COMMIT_VERSION,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
)
from lakectl.scan.changes import ChangeScan, initial_rows_time
from lakectl.table.metadata import TableMetadata
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    import pyarrow as pa

_INDEX = "__lakectl_index"
# In commit order, within one commit and key: a delete or pre-image before the post-image.
_RANK = {"delete": 0, "update_preimage": 1, "update_postimage": 2, "insert": 3}


def _spec(meta: TableMetadata, source: ChangeScan, valid: ValidWriteIds) -> MergeSpec:
    return MergeSpec.of_table(source.store.storage, meta, valid)


def change_rows(source: ChangeScan, scd2: bool = False) -> pa.Table:
    """Every row change of the range, unsorted: the table's columns, then ``_change_type``,
    ``_commit_version`` and ``_commit_time`` (UTC; with ``scd2``, the time the commit's rows took
    effect, see :attr:`~lakectl.planning.change_plan.ChangeRange.valid_times`, and an SCD2 view
    that starts after the empty table opens with the rows live at its start, as inserts)."""
    import pyarrow as pa

    newer = _spec(source.metadata, source, source.newer.valid_write_ids())
    older = _spec(source.older.metadata, source, source.older.valid)
    user = newer.output_schema()
    with_version = pa.schema([*user, pa.field(COMMIT_VERSION, pa.int64())])
    older_plans = {p.relative: p for p in source.older.plans}
    write_ids = sorted(source.range.commit_times)
    inserted: list[pa.Table] = []
    deleted: list[pa.Table] = []
    for plan in source.range_plans if write_ids else ():
        inserts, deletes = range_events(newer, plan, write_ids)
        rows = with_partition_values(
            newer, inserts.drop_columns([*IDENTITY, "currentTransaction"]), plan.values
        )
        rows = rows.append_column(COMMIT_VERSION, inserts.column("currentTransaction"))
        inserted.append(rows)
        if not deletes.num_rows:
            continue
        deletes = _first_deletes(deletes)
        pool = [_identified(rows, inserts)]
        before = older_plans.get(plan.relative)
        if before is not None and not before.is_empty:
            # read in today's columns (resolve_changes gives the older state today's metadata)
            pool.append(partition_rows(older, before, with_identity=True))
        deleted.append(_pre_images(deletes, pa.concat_tables(pool), with_version))
    deleted_rows = concat_as(deleted, with_version)
    inserted_rows = concat_as(inserted, with_version)
    key = list(source.metadata.primary_key)
    parts = [
        _classified(deleted_rows, inserted_rows, key, "update_preimage", "delete"),
        _classified(inserted_rows, deleted_rows, key, "update_postimage", "insert"),
    ]
    initial = initial_rows_time(source) if scd2 else {}
    for version in initial:
        live = [partition_rows(older, p) for p in source.older.plans if not p.is_empty]
        rows = concat_as(live, user)
        rows = rows.append_column(COMMIT_VERSION, pa.array([version] * rows.num_rows, pa.int64()))
        parts.append(rows.append_column(CHANGE_TYPE, pa.array(["insert"] * rows.num_rows)))
    rng = source.range
    times = rng.valid_times if scd2 else rng.commit_times
    return _with_commit_times(pa.concat_tables(parts), {**times, **initial})


def _first_deletes(deletes: pa.Table) -> pa.Table:
    """Of one partition's delete events, each identity's first (lowest write id): a later one
    repeats a deletion and changes no live row (:data:`lakectl.scan.changes.FIRST_DELETE_ONLY`)."""
    first = deletes.group_by(list(IDENTITY)).aggregate([("currentTransaction", "min")])
    first = first.select([*IDENTITY, "currentTransaction_min"])
    return first.rename_columns([*IDENTITY, "currentTransaction"]).cast(deletes.schema)


def _identified(rows: pa.Table, inserts: pa.Table) -> pa.Table:
    """Inserted ``rows`` (user columns, version) with their identity in front, no version."""
    import pyarrow as pa

    body = rows.drop_columns([COMMIT_VERSION])
    return pa.Table.from_arrays(
        [*inserts.select(list(IDENTITY)).columns, *body.columns],
        names=[*IDENTITY, *body.column_names],
    )


def _pre_images(deletes: pa.Table, pool: pa.Table, schema: pa.Schema) -> pa.Table:
    """The rows of ``pool`` (identity, user columns) that ``deletes`` name, with the deleting
    commit's version."""
    import pyarrow as pa

    ids = pool.select(list(IDENTITY)).append_column(
        _INDEX, pa.array(range(pool.num_rows), pa.int64())
    )
    joined = deletes.join(ids, list(IDENTITY), join_type="inner")
    rows = pool.drop_columns(list(IDENTITY)).take(joined.column(_INDEX))
    return rows.append_column(COMMIT_VERSION, joined.column("currentTransaction")).cast(schema)


def _classified(
    rows: pa.Table, other: pa.Table, key: Sequence[str], paired: str, alone: str
) -> pa.Table:
    """``rows`` with ``_change_type``: ``paired`` where ``other`` has the same key and version."""
    import pyarrow as pa
    import pyarrow.compute as pc

    index = pa.array(range(rows.num_rows), pa.int64())
    matched = pa.array([], pa.int64())
    if key and rows.num_rows and other.num_rows:
        columns = [*key, COMMIT_VERSION]
        left = rows.select(columns).append_column(_INDEX, index)
        right = other.select(columns).group_by(columns).aggregate([])
        matched = left.join(right, columns, join_type="left semi").column(_INDEX).combine_chunks()
    kind = pc.if_else(pc.is_in(index, matched), paired, alone)
    return rows.append_column(CHANGE_TYPE, kind.cast(pa.string()))


def _with_commit_times(changes: pa.Table, commit_times: Mapping[int, int]) -> pa.Table:
    """The feed's columns in order, with ``_commit_time`` from the log's commit times."""
    import pyarrow as pa
    import pyarrow.compute as pc

    versions = sorted(commit_times)
    at = pc.index_in(changes.column(COMMIT_VERSION), pa.array(versions, pa.int64()))
    millis = pc.take(pa.array([commit_times[v] for v in versions], pa.int64()), at)
    times = pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC"))
    user = [c for c in changes.column_names if c not in (CHANGE_TYPE, COMMIT_VERSION)]
    ordered = changes.select([*user, CHANGE_TYPE, COMMIT_VERSION])
    return ordered.append_column(COMMIT_TIME, times)


def in_commit_order(changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """``changes`` sorted by version, then key, with each pre-image before its post-image."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rank = pc.index_in(changes.column(CHANGE_TYPE), pa.array(list(_RANK)))
    ranked = changes.append_column(_INDEX, rank)
    order = [(COMMIT_VERSION, "ascending"), *[(k, "ascending") for k in key], (_INDEX, "ascending")]
    return ranked.sort_by(order).drop_columns([_INDEX])


def scd2_rows(
    changes: pa.Table, key: Sequence[str], current_valid_to: int | None = None
) -> pa.Table:
    """One row per version of each key (see :func:`lakectl.spark.change_feed.scd2_rows`):
    ``valid_from`` the ``_commit_time`` of the insert or post-image that made it (the time it
    took effect, see :func:`change_rows`), ``valid_to`` that
    of the key's next change (NULL while current), ``is_current``; sorted by key and validity."""
    import pyarrow as pa
    import pyarrow.compute as pc

    opens = pc.is_in(changes.column(CHANGE_TYPE), pa.array(["insert", "update_postimage"]))
    ordered = changes.append_column(_INDEX, pc.cast(opens, pa.int8())).sort_by(
        [*[(k, "ascending") for k in key], (COMMIT_VERSION, "ascending"), (_INDEX, "ascending")]
    )
    n = ordered.num_rows
    same_next = pa.array([False] * n) if n else pa.array([], pa.bool_())
    if n > 1:
        same = pa.array([True] * (n - 1))
        for k in key:
            column = ordered.column(k).combine_chunks()
            same = pc.and_(
                same, pc.fill_null(pc.equal(column.slice(1), column.slice(0, n - 1)), False)
            )
        same_next = pa.concat_arrays([same, pa.array([False])])
    times = ordered.column(COMMIT_TIME).combine_chunks()
    following = pa.concat_arrays([times.slice(1), pa.nulls(1, times.type)]) if n else times
    valid_to = pc.if_else(same_next, following, pa.scalar(None, times.type))
    user = [c for c in changes.column_names if c not in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIME)]
    view = ordered.select(user).append_column(VALID_FROM, times).append_column(VALID_TO, valid_to)
    view = view.append_column(IS_CURRENT, pc.is_null(valid_to))
    if current_valid_to is not None:
        sentinel = pa.scalar(current_valid_to * 1000, pa.int64()).cast(times.type)
        view = view.set_column(
            view.schema.get_field_index(VALID_TO), VALID_TO, pc.fill_null(valid_to, sentinel)
        )
    view = view.filter(ordered.column(_INDEX).combine_chunks().cast(pa.bool_()))
    return view.sort_by([*[(k, "ascending") for k in key], (VALID_FROM, "ascending")])


__all__ = [
    "change_rows",
    "in_commit_order",
    "scd2_rows",
]
