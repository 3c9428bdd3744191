"""Which directories a reader uses in one partition: Hive's ``getAcidState``, as a pure function.

Given a partition listing, the valid write ids, and which directories are visible (committed by
the writer that made them), choose the newest usable base, the deltas and delete deltas above it
(skipping ones that a larger, minor-compacted delta covers), and the original files when there is
no base.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lakectl.errors import damaged_file_error
from lakectl.table.listing import DirListing, FileEntry, PartitionListing
from lakectl.table.schema import Schema
from lakectl.table.validity import ValidWriteIds


@dataclass(frozen=True)
class PartitionReadPlan:
    relative: str
    values: tuple[str | None, ...]
    base: DirListing | None
    deltas: tuple[DirListing, ...]
    delete_deltas: tuple[DirListing, ...]
    originals: tuple[FileEntry, ...]
    obsolete: tuple[DirListing, ...] = field(default=())
    written: tuple[tuple[str, Schema], ...] = field(default=())
    """Directories (relative to the table) written with an older data schema than the table's
    now, with that schema (:mod:`lakectl.table.evolution`); the others hold the current one."""

    def written_schema(self, directory: DirListing) -> Schema | None:
        """The data schema ``directory`` was written with when it is not the current one."""
        return next((s for rel, s in self.written if rel == directory.relative), None)

    @property
    def data_dirs(self) -> tuple[DirListing, ...]:
        return ((self.base,) if self.base else ()) + self.deltas

    @property
    def is_empty(self) -> bool:
        return not self.data_dirs and not self.originals


# The smallest ORC file there can be: the "ORC" header, a footer naming the root struct type (4
# bytes), a postscript holding the footer's length (2 bytes) and the postscript's length (1
# byte). A data file shorter than this (an empty one above all, which ORC's Java reader takes
# for an empty file and Spark reads as no rows) is damaged.
MIN_ORC_FILE_BYTES = 10


def short_files(plan: PartitionReadPlan) -> list[FileEntry]:
    """The files ``plan`` reads that are too short to be ORC files (see
    :data:`MIN_ORC_FILE_BYTES`), from the sizes the listing gave: no file is opened."""
    dirs = (*plan.data_dirs, *plan.delete_deltas)
    files = [f for d in dirs for f in d.files] + list(plan.originals)
    return [f for f in files if f.size < MIN_ORC_FILE_BYTES]


def require_whole_files(plans: Iterable[PartitionReadPlan], url: Callable[[str], str]) -> None:
    """Refuse a read that would open a file too short to be an ORC file, before any engine
    reads: every engine then fails alike, naming the file (``url`` makes its URL from its
    storage path), where Spark's reader would read an empty file as no rows."""
    for plan in plans:
        for entry in short_files(plan):
            size = "it is empty" if entry.size == 0 else f"{entry.size} bytes"
            raise damaged_file_error(
                url(entry.path),
                f"{size}; the smallest ORC file has {MIN_ORC_FILE_BYTES} bytes",
            )


def _choose_deltas(
    dirs: list[DirListing], above: int, valid: ValidWriteIds
) -> tuple[list[DirListing], list[DirListing]]:
    chosen: list[DirListing] = []
    skipped: list[DirListing] = []
    current = above
    # A compacted delta (no statement id) sorts before the per-statement ones of its range.
    ordered = sorted(
        dirs,
        key=lambda d: (
            d.acid.min_write_id,
            -d.acid.max_write_id,
            -1 if d.acid.statement_id is None else d.acid.statement_id,
        ),
    )
    last: DirListing | None = None
    for d in ordered:
        a = d.acid
        if a.max_write_id <= above or not valid.is_range_partly_valid(
            a.min_write_id, a.max_write_id
        ):
            skipped.append(d)
            continue
        # Statements of one transaction are all read; once a range is compacted (no statement
        # id), its per-statement deltas are obsolete, as in Hive's getAcidState.
        same_range = (
            last is not None
            and last.acid.statement_id is not None
            and last.acid.min_write_id == a.min_write_id
            and last.acid.max_write_id == a.max_write_id
        )
        if a.max_write_id > current or same_range:
            chosen.append(d)
            current = max(current, a.max_write_id)
            last = d
        else:
            skipped.append(d)
    return chosen, skipped


def plan_partition(
    listing: PartitionListing,
    valid: ValidWriteIds,
    is_visible: Callable[[DirListing], bool] = lambda d: True,
) -> PartitionReadPlan:
    """The directories a snapshot at ``valid`` reads in this partition."""
    visible = [d for d in listing.dirs if is_visible(d)]
    bases = [d for d in visible if d.acid.is_base and valid.is_valid(d.acid.max_write_id)]
    # Of two bases of the same write id, the later rewrite (higher visibility id) wins: a
    # list-bucket rewrite of a compacted base holds the same rows, split differently.
    base = max(bases, key=lambda d: (d.acid.max_write_id, d.acid.visibility_txn or 0), default=None)
    above = base.acid.max_write_id if base else 0
    deltas, skipped = _choose_deltas(
        [d for d in visible if d.acid.kind.value == "delta"], above, valid
    )
    deletes, skipped_del = _choose_deltas([d for d in visible if d.acid.is_delete], above, valid)
    obsolete = [d for d in bases if d is not base] + skipped + skipped_del
    return PartitionReadPlan(
        relative=listing.relative,
        values=listing.values,
        base=base,
        deltas=tuple(deltas),
        delete_deltas=tuple(deletes),
        originals=tuple(listing.originals) if base is None else (),
        obsolete=tuple(obsolete),
    )
