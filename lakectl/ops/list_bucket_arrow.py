"""``list-bucket --engine arrow``: the chosen partitions rewritten into split bases in this
process (:mod:`lakectl.arrow.list_bucket_split`), the same directories, files and counts as
Spark's rewrite (:func:`lakectl.ops.rewrite.rewrite_partitions` with ``layouts``)."""

from __future__ import annotations

from collections.abc import Mapping

from lakectl.planning.compaction_plan import PartitionCompaction
from lakectl.planning.list_bucket_plan import ListBucketing
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import TableStore


def rewrite_split_arrow(
    store: TableStore,
    meta: TableMetadata,
    state: TableState,
    chosen: list[PartitionCompaction],
    layouts: Mapping[str, ListBucketing],
) -> tuple[set[str], dict[str, int]]:
    """Rewrite the major compactions ``chosen`` into their new bases, each partition in
    ``layouts`` split by its mapping, the others plain. Returns the bases written (relative to
    the table) and the counts of the commit record (``partitions``, ``rows_written``,
    ``dirs_in``, ``dirs_out``). The caller's write transaction removes what was written if
    this raises; :func:`lakectl.ops.rewrite.arrow_unsupported` must have said Arrow can."""
    from lakectl.arrow.bucket_compaction import bucket_groups
    from lakectl.arrow.list_bucket_split import split_partitions
    from lakectl.errors import ArrowEngineLimit
    from lakectl.ops.compactor_outputs import (
        add_empty_bases,
        arrow_compactor,
        major_read_plans,
        write_compactor_markers,
    )

    compactor = arrow_compactor(store, meta, state, chosen)
    out_dirs = {p.relative: p.output_base or "" for p in chosen}
    groups = bucket_groups(store.storage, store.root, major_read_plans(meta, chosen), out_dirs)
    if groups is None:  # the engine choice checks this first; a file added meanwhile
        raise ArrowEngineLimit(
            "the Arrow engine cannot rewrite a data file not named bucket_N",
            hint="use --engine spark",
        )
    bases, rows = split_partitions(compactor, meta, groups, layouts)
    added = {path[len(store.root) + 1 :] for path in bases}
    add_empty_bases(store, chosen, added)
    write_compactor_markers(store, added)
    counts = {
        "partitions": len(chosen),
        "rows_written": rows,
        "dirs_in": sum(len(p.inputs) for p in chosen),
        "dirs_out": len(added),
    }
    return added, counts


__all__ = ["rewrite_split_arrow"]
