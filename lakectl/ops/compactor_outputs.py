"""What every rewrite of committed rows into a new base shares, whatever engine writes the rows:
the write ids it keeps, the partitions' inputs as read plans, the empty base of a partition left
without a row, and the markers of a compactor-written directory.

Compaction (:mod:`lakectl.ops.rewrite`) and ``list-bucket --engine arrow``
(:mod:`lakectl.ops.list_bucket_arrow`) take them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakectl.failpoints import failpoint
from lakectl.planning.compaction_plan import PartitionCompaction
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    COMPACTOR_METADATA_FILE,
    parse_partition_path,
)
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.store import TableStore
from lakectl.table.validity import ValidWriteIds

if TYPE_CHECKING:
    from lakectl.arrow.bucket_compaction import BucketCompactor

COMPACTOR_MARKER = '{"thisFileVersion": "0", "dataFormat": "compacted"}'
"""Hive's ``AcidUtils.MetaDataFile`` marker of a compactor-written directory."""


def kept_write_ids(
    meta: TableMetadata, state: TableState, chosen: list[PartitionCompaction]
) -> tuple[ValidWriteIds, str | None]:
    """The write ids a rewrite of ``chosen`` keeps (every committed one up to the highest
    rewritten), and the key column a live row must have set."""
    top = max(p.max_write_id for p in chosen)
    committed = state.committed_write_ids
    valid = ValidWriteIds(top, frozenset(w for w in range(1, top + 1) if w not in committed))
    return valid, meta.data_key


def arrow_compactor(
    store: TableStore, meta: TableMetadata, state: TableState, chosen: list[PartitionCompaction]
) -> BucketCompactor:
    """The per-bucket merge (:class:`~lakectl.arrow.bucket_compaction.BucketCompactor`) of a
    rewrite of ``chosen``: the write ids it keeps, the key, the table's ORC codec."""
    from lakectl.arrow.bucket_compaction import BucketCompactor
    from lakectl.table.properties import pyarrow_orc_codec

    valid, key = kept_write_ids(meta, state, chosen)
    return BucketCompactor(
        store.storage,
        meta.data_schema,
        valid,
        key=key,
        compression=pyarrow_orc_codec(meta.property("orc.compress") or "snappy"),
    )


def major_read_plans(
    meta: TableMetadata, majors: list[PartitionCompaction]
) -> list[PartitionReadPlan]:
    """The inputs of major rewrites (a base, deltas, delete deltas) as read plans."""
    return [
        PartitionReadPlan(
            p.relative,
            parse_partition_path(list(meta.partition_by), p.relative) if p.relative else (),
            p.base,
            p.deltas,
            p.delete_deltas,
            (),
        )
        for p in majors
    ]


def add_empty_bases(store: TableStore, majors: list[PartitionCompaction], added: set[str]) -> None:
    """A partition whose rows were all deleted still gets its (empty) base: created, and added
    to ``added``."""
    for p in majors:
        rel = p.output_path(p.output_base or "")
        if rel not in added:
            store.storage.makedirs(_dir_path(store, rel))
            added.add(rel)


def write_compactor_markers(store: TableStore, added: set[str]) -> None:
    """Each written directory's ``_orc_acid_version`` and compactor marker (failpoint
    ``compact.before_markers`` first)."""
    failpoint("compact.before_markers")
    for rel in added:
        directory = _dir_path(store, rel)
        store.storage.write_bytes(
            store.storage.join(directory, ACID_VERSION_FILE), ACID_VERSION.encode()
        )
        store.storage.write_bytes(
            store.storage.join(directory, COMPACTOR_METADATA_FILE), COMPACTOR_MARKER.encode()
        )


def _dir_path(store: TableStore, rel: str) -> str:
    return table_path(store.storage, store.root, rel, Shape.DATA_DIR, source="the rewrite plan")


__all__ = [
    "COMPACTOR_MARKER",
    "add_empty_bases",
    "arrow_compactor",
    "kept_write_ids",
    "major_read_plans",
    "write_compactor_markers",
]
