"""``restore`` in Arrow: the difference between a partition now and at the restored version, as
the changes :func:`lakectl.arrow.acid_writer.write_changes` writes.

The rows and event identities are read by the Arrow engine's partition reader (the live-row
kernel, :mod:`lakectl.arrow.partition_reader`) and rows are matched by their ACID identity with
the kernel's :class:`~lakectl.kernel.live_rows.DeleteSet`, as :mod:`lakectl.ops.restore`
describes: rows live now and not then get a delete event; rows live then and not now are
written again as new rows, with a delete event for their original; rows added and deleted since
get a delete event again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.partition_reader import (
    MergeSpec,
    event_identities,
    partition_rows,
)
from lakectl.arrow.types import arrow_schema
from lakectl.kernel.live_rows import IDENTITY, DeleteSet, identity_fields
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from lakectl.arrow.acid_writer import PartitionChanges


@dataclass(frozen=True)
class PartitionDiff:
    """One partition's share of a restore: identities of the rows to delete (live now, not
    then), the rows to write again (live then, not now; identity and columns) and identities
    to delete again (added and deleted since)."""

    values: tuple[Any, ...]
    deleted: pa.Table
    reinserted: pa.Table
    again: pa.Table

    def changes(self, meta: TableMetadata) -> PartitionChanges:
        """The events to write: a delete event for every identity named, the rows written
        again as new rows."""
        import pyarrow as pa

        from lakectl.arrow.acid_writer import PartitionChanges

        ids = pa.schema(identity_fields())
        parts = (self.deleted, self.reinserted, self.again)
        deletes = pa.concat_tables([t.select(list(IDENTITY)).cast(ids) for t in parts])
        data = arrow_schema(meta.data_schema)
        inserts = self.reinserted.select(data.names).cast(data)
        return PartitionChanges(
            self.values,
            inserts=inserts if inserts.num_rows else None,
            deletes=deletes.combine_chunks() if deletes.num_rows else None,
        )


def live_rows_of(spec: MergeSpec, plan: PartitionReadPlan | None) -> pa.Table:
    """The live rows of ``plan`` with their identity (none without a plan)."""
    import pyarrow as pa

    if plan is None:
        schema = pa.schema([*identity_fields(), *spec.output_schema()])
        return schema.empty_table()
    return partition_rows(spec, plan, with_identity=True)


def event_ids(
    spec: MergeSpec, plan: PartitionReadPlan | None, *, deletes: bool, first_write_id: int = 0
) -> pa.Table:
    """:func:`~lakectl.arrow.partition_reader.event_identities` of ``plan`` as one table of
    identities (none without a plan)."""
    import pyarrow as pa

    schema = pa.schema(identity_fields())
    if plan is None:
        return schema.empty_table()
    batches = event_identities(spec, plan, deletes=deletes, first_write_id=first_write_id)
    tables = [pa.Table.from_batches([b]).select(list(IDENTITY)) for b in batches]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def named_by(rows: pa.Table, identities: Sequence[pa.Table]) -> Any:
    """Which ``rows`` have an identity among ``identities`` (a numpy mask)."""
    import numpy as np

    found = DeleteSet([[t.column(c) for c in IDENTITY] for t in identities if t.num_rows])
    mask = found.deleted(*(rows.column(c) for c in IDENTITY)) if rows.num_rows else None
    return np.zeros(rows.num_rows, dtype=bool) if mask is None else mask


def without(rows: pa.Table, identities: Sequence[pa.Table]) -> pa.Table:
    """``rows`` less those whose identity is among ``identities``."""
    import pyarrow as pa

    return rows.filter(pa.array(~named_by(rows, identities)))


def only(rows: pa.Table, identities: Sequence[pa.Table]) -> pa.Table:
    """``rows`` whose identity is among ``identities``."""
    import pyarrow as pa

    return rows.filter(pa.array(named_by(rows, identities)))


def compared(
    values: tuple[Any, ...],
    now: tuple[MergeSpec, PartitionReadPlan | None],
    then: tuple[MergeSpec, PartitionReadPlan | None],
    first_new: int,
) -> PartitionDiff:
    """One partition compared whole, now and then: the rows of each the other lacks, and the
    rows first written since ``then`` (write id ``first_new`` or later) not live now."""
    (now_spec, now_plan), (then_spec, then_plan) = now, then
    current, earlier = live_rows_of(now_spec, now_plan), live_rows_of(then_spec, then_plan)
    since = event_ids(now_spec, now_plan, deletes=False, first_write_id=first_new)
    return PartitionDiff(
        values,
        deleted=without(current, [earlier]),
        reinserted=without(earlier, [current]),
        again=without(since, [current]),
    )


def since_changes(
    values: tuple[Any, ...],
    now: tuple[MergeSpec, PartitionReadPlan | None],
    then: tuple[MergeSpec, PartitionReadPlan | None],
    deleted_since: pa.Table,
    first_new: int,
) -> PartitionDiff:
    """One partition's difference from the commits since the restored version: the rows of the
    directories committed since (``now``'s plan holds only those) are all new; the rows of
    ``then``'s plan that the delete events committed since name (``deleted_since``) are gone;
    rows first written since and not live now are deleted again."""
    (now_spec, now_plan), (then_spec, then_plan) = now, then
    added = live_rows_of(now_spec, now_plan)
    since = event_ids(now_spec, now_plan, deletes=False, first_write_id=first_new)
    gone = only(live_rows_of(then_spec, then_plan), [deleted_since])
    return PartitionDiff(
        values,
        deleted=added,
        reinserted=gone,
        again=without(since, [added]),
    )


__all__ = [
    "PartitionDiff",
    "compared",
    "event_ids",
    "live_rows_of",
    "named_by",
    "only",
    "since_changes",
    "without",
]
