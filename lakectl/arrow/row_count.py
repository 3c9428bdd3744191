"""Exact live-row counts of a partition, without a JVM.

A partition's ORC footers give the rows its files hold; that is the number of live rows only
when no delete event and no invalid write id applies. Otherwise the partition is merged on read
(:mod:`lakectl.arrow.partition_reader`) without decoding data columns (the key column alone, when the
table has one: an insert event without its row is not live), and its rows are counted.
"""

from __future__ import annotations

from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.storage.fs import Storage
from lakectl.table.metadata import TableMetadata
from lakectl.table.orc_files import read_footer
from lakectl.table.validity import ValidWriteIds


def footer_rows(storage: Storage, plan: PartitionReadPlan) -> int:
    """The rows the partition's data files hold (their footers; delete events not applied)."""
    files = [f for d in plan.data_dirs for f in d.files] + list(plan.originals)
    return sum(read_footer(storage, f.path).rows for f in files)


def footers_are_exact(plan: PartitionReadPlan, valid: ValidWriteIds) -> bool:
    """Whether the footers' row count is the partition's live rows: no delete delta, and
    every delta's write ids all valid (a base's rows all count)."""
    return not plan.delete_deltas and all(
        valid.is_range_valid(d.acid.min_write_id, d.acid.max_write_id) for d in plan.deltas
    )


def live_rows(
    storage: Storage, metadata: TableMetadata, valid: ValidWriteIds, plan: PartitionReadPlan
) -> int:
    """The partition's live rows, exactly: from the footers when they are exact, else by a
    merge-on-read that decodes no data column but the key."""
    if footers_are_exact(plan, valid):
        return footer_rows(storage, plan)
    key = metadata.data_key
    # one column decoded (the key when there is one): a batch of no columns has no rows
    spec = MergeSpec.of_table(
        storage, metadata, valid, columns=(key or metadata.data_schema.names[0],)
    )
    return sum(batch.num_rows for batch in partition_batches(spec, plan))


__all__ = ["footer_rows", "footers_are_exact", "live_rows"]
