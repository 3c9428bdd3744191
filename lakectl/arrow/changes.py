"""The change feed and the SCD Type 2 view read into Arrow, without Spark or a JVM.

The rules of :mod:`lakectl.scan.changes`, read from a :class:`~lakectl.scan.changes.ChangeScan` with the same merge-on-read of event files
(:mod:`lakectl.arrow.partition_reader`): the range's commits' insert events are inserts, their delete
events name the deleted rows' identities, whose values (the pre-images) are the rows with those
identities in the older snapshot or inserted earlier in the range (only an identity's first
delete event in the range counts); a delete and an insert of the same key by one commit are an
update (``update_preimage``, ``update_postimage``). The identities are unique within a
partition, so the pre-images are joined partition by partition: a :class:`FeedUnit` (a
partition, or some of its buckets) is computed alone by :meth:`FeedRule.unit_changes`, the one
implementation of these rules, which Spark runs in its tasks too
(:mod:`lakectl.spark.change_feed`); only the pairing of a
key's delete and insert by one commit (:func:`pair_updates`) looks across partitions (an update
may move a key to another one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.changes import ChangeScan, initial_rows_time

if TYPE_CHECKING:
    import pyarrow as pa

_INDEX = "__lakectl_index"
PAIRED = {"delete": "update_preimage", "insert": "update_postimage"}
"""A commit's ``delete`` and ``insert`` of one key are an update: these change types."""
CHANGE_ORDER = ("delete", "update_preimage", "update_postimage", "insert")
"""In commit order, within one commit and key: a delete or pre-image before the post-image."""


@dataclass(frozen=True)
class FeedUnit:
    """One unit of a feed's work: a partition's files of the range (its delta and delete-delta
    directories) and its files in the older snapshot, either None where it has none. A unit may
    hold some of the partition's buckets only, the same ones on both sides, and all of its
    delete deltas (each row is in one unit; a delete event finds its row in that unit)."""

    range_plan: PartitionReadPlan | None
    older_plan: PartitionReadPlan | None


@dataclass(frozen=True)
class FeedRule:
    """What every unit of a change scan's feed needs (picklable, for Spark's tasks): how the
    newer and older rows are read, the range's commits and the time of each change row's
    version, and the version of an SCD2 view whose rows open it (None: no such rows)."""

    newer: MergeSpec
    older: MergeSpec
    write_ids: tuple[int, ...]
    times: Mapping[int, int]
    opening_version: int | None = None

    @classmethod
    def of(cls, source: ChangeScan, scd2: bool = False) -> FeedRule:
        """The rule of ``source``'s feed (with ``scd2``, of its SCD2 view: the times the
        commits took effect, and the rows live at a later start as its first versions)."""
        storage = source.store.storage
        newer = MergeSpec.of_table(storage, source.metadata, source.newer.valid_write_ids())
        older = MergeSpec.of_table(storage, source.older.metadata, source.older.valid)
        rng = source.range
        initial = initial_rows_time(source) if scd2 else {}
        times = {**(rng.valid_times if scd2 else rng.commit_times), **initial}
        opening = next(iter(initial), None)
        return cls(newer, older, tuple(sorted(rng.commit_times)), times, opening)

    def output_schema(self) -> pa.Schema:
        """The feed's columns: the table's, then ``_change_type``, ``_commit_version`` and
        ``_commit_time`` (UTC)."""
        import pyarrow as pa

        return pa.schema(
            [
                *self.newer.output_schema(),
                pa.field(CHANGE_TYPE, pa.string()),
                pa.field(COMMIT_VERSION, pa.int64()),
                pa.field(COMMIT_TIME, pa.timestamp("us", tz="UTC")),
            ]
        )

    def unit_changes(self, unit: FeedUnit) -> pa.Table:
        """The change rows of one unit, before updates are paired (:func:`pair_updates`): the
        range's commits' inserted rows as ``insert``, the rows their delete events name (only
        an identity's first delete event in the range) as ``delete``; with an opening version,
        the unit's older rows as its ``insert`` rows. In :meth:`output_schema`."""
        import pyarrow as pa

        user = self.newer.output_schema()
        with_version = pa.schema([*user, pa.field(COMMIT_VERSION, pa.int64())])
        plan, before = unit.range_plan, unit.older_plan
        if before is not None and before.is_empty:
            before = None
        older: pa.Table | None = None
        parts: list[pa.Table] = []
        if plan is not None and self.write_ids:
            inserts, deletes = range_events(self.newer, plan, self.write_ids)
            rows = with_partition_values(
                self.newer, inserts.drop_columns([*IDENTITY, "currentTransaction"]), plan.values
            )
            rows = rows.append_column(COMMIT_VERSION, inserts.column("currentTransaction"))
            parts.append(_labelled(rows, "insert"))
            if deletes.num_rows:
                pool = [_identified(rows, inserts)]
                if before is not None:
                    # read in today's columns (the change scan gives the older plans today's)
                    older = partition_rows(self.older, before, with_identity=True)
                    pool.append(older)
                deleted = _pre_images(_first_deletes(deletes), pa.concat_tables(pool), with_version)
                parts.append(_labelled(deleted, "delete"))
        if self.opening_version is not None and before is not None:
            if older is None:
                older = partition_rows(self.older, before, with_identity=True)
            live = older.drop_columns(list(IDENTITY)).cast(user)
            version = pa.array([self.opening_version] * live.num_rows, pa.int64())
            parts.append(_labelled(live.append_column(COMMIT_VERSION, version), "insert"))
        labelled = pa.schema([*with_version, pa.field(CHANGE_TYPE, pa.string())])
        return _with_commit_times(concat_as(parts, labelled), self.times)


def feed_units(source: ChangeScan, scd2: bool = False) -> list[FeedUnit]:
    """Per partition of ``source``, its unit of work: each partition the range wrote, with its
    older files; with an SCD2 view that opens with the older rows, every older partition."""
    older = {p.relative: p for p in source.older.plans if not p.is_empty}
    units = [FeedUnit(p, older.get(p.relative)) for p in source.range_plans]
    if scd2 and initial_rows_time(source):
        written = {p.relative for p in source.range_plans}
        units += [FeedUnit(None, p) for r, p in older.items() if r not in written]
    return units


def change_rows(source: ChangeScan, scd2: bool = False) -> pa.Table:
    """Every row change of the range, unsorted: the table's columns, then ``_change_type``,
    ``_commit_version`` and ``_commit_time`` (UTC; with ``scd2``, the time the commit's rows took
    effect, see :attr:`~lakectl.planning.change_plan.ChangeRange.valid_times`, and an SCD2 view
    that starts after the empty table opens with the rows live at its start, as inserts)."""
    rule = FeedRule.of(source, scd2)
    changes = [rule.unit_changes(unit) for unit in feed_units(source, scd2)]
    rows = concat_as(changes, rule.output_schema())
    return pair_updates(rows, list(source.metadata.primary_key))


def _labelled(rows: pa.Table, kind: str) -> pa.Table:
    import pyarrow as pa

    return rows.append_column(CHANGE_TYPE, pa.array([kind] * rows.num_rows, pa.string()))


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


def pair_updates(changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """``changes`` (labelled ``insert`` or ``delete``) with each ``delete`` and ``insert`` of a
    key that one commit both deletes and inserts relabelled as an update (:data:`PAIRED`). A
    key with a NULL part pairs with nothing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not key or not changes.num_rows:
        return changes
    kinds = changes.column(CHANGE_TYPE)
    index = pa.array(range(changes.num_rows), pa.int64())
    columns = [*key, COMMIT_VERSION]
    labelled = changes.select(columns).append_column(_INDEX, index)
    out = kinds
    for kind, paired in PAIRED.items():
        mine = labelled.filter(pc.equal(kinds, kind))
        other = labelled.filter(pc.not_equal(kinds, kind)).select(columns)
        other = other.group_by(columns).aggregate([])
        matched = mine.join(other, columns, join_type="left semi").column(_INDEX)
        out = pc.if_else(pc.is_in(index, matched.combine_chunks()), paired, out)
    return changes.set_column(
        changes.schema.get_field_index(CHANGE_TYPE), CHANGE_TYPE, out.cast(pa.string())
    )


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

    rank = pc.index_in(changes.column(CHANGE_TYPE), pa.array(list(CHANGE_ORDER)))
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
    "CHANGE_ORDER",
    "PAIRED",
    "FeedRule",
    "FeedUnit",
    "change_rows",
    "feed_units",
    "in_commit_order",
    "pair_updates",
    "scd2_rows",
]
