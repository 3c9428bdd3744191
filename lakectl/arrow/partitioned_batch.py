"""A load's shaped batch kept on disk by the partition its rows go to, so that a load holds one
partition's rows at a time, not the batch's.

Each part of the batch, as it is shaped (:class:`lakectl.arrow.batch.BatchShaper`), is split by
its partition columns' values and written to Arrow IPC files in a temporary directory (removed
when the batch is closed, on every exit); :meth:`PartitionedBatch.rows` reads one partition's
rows back, in batch order. What decides a change of a keyed load (its key, its order value
and whether it is a delete) is also kept in memory for the whole batch, and no more (its
position is its row number; its partition is in its file): CDC classification needs all the
changes of a key together, and a change may move its key to another partition. An
unpartitioned table is one partition: a load then holds the batch's rows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lakectl.kernel import change_classify as cc

if TYPE_CHECKING:
    import pyarrow as pa


class PartitionedBatch:
    """A batch's shaped rows by target partition (:meth:`add` the parts in order, then read
    them with :meth:`rows_of`); use as a context manager, which removes its files. ``keys``:
    the table's key, for a keyed load (:meth:`decisions`); None for an append."""

    def __init__(self, partition_by: Sequence[str], keys: Sequence[str] | None) -> None:
        self.partition_by = list(partition_by)
        self._keys = list(keys) if keys is not None else None
        self._dir = tempfile.mkdtemp(prefix="lakectl-batch-")
        self._files: dict[tuple[Any, ...], list[str]] = {}
        self._decisions: list[pa.Table] = []
        self._written = 0
        self.rows = 0
        self.nbytes = 0

    def __enter__(self) -> PartitionedBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the batch's files."""
        shutil.rmtree(self._dir, ignore_errors=True)
        self._files.clear()
        self._decisions.clear()

    def add(self, shaped: pa.Table) -> None:
        """Keep one shaped part (its positions after those of the parts added before)."""
        import pyarrow as pa

        if not shaped.num_rows:
            return
        self.rows += shaped.num_rows
        self.nbytes += shaped.nbytes
        if self._keys is not None:
            self._decisions.append(cc.decision_columns(shaped, self._keys).combine_chunks())
        for part in cc.partition_runs(shaped, self.partition_by):
            values = tuple(part.column(c)[0].as_py() for c in self.partition_by)
            self._written += 1
            path = os.path.join(self._dir, f"{self._written}.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, part.schema) as writer:
                writer.write_table(part)
            self._files.setdefault(values, []).append(path)

    def partitions(self) -> list[tuple[Any, ...]]:
        """The partitions the batch's rows go to (values of the table's types)."""
        return list(self._files)

    def rows_of(self, values: tuple[Any, ...]) -> pa.Table | None:
        """The shaped rows that go to the partition of ``values``, in batch order (None: none)."""
        import pyarrow as pa

        files = self._files.get(values)
        if not files:
            return None
        # memory-mapped: the rows stay in the page cache until they are used
        return pa.concat_tables([pa.ipc.open_file(pa.memory_map(p)).read_all() for p in files])

    def decisions(self) -> pa.Table:
        """What decides the whole batch's changes, a row per change in batch order (the row
        number is the change's position): :func:`lakectl.kernel.change_classify.
        decision_columns`."""
        import pyarrow as pa

        if not self._decisions:
            return pa.table({})
        if len(self._decisions) > 1:  # one column at a time: the parts are freed as it goes
            names = self._decisions[0].column_names
            columns = {n: [c for t in self._decisions for c in t.column(n).chunks] for n in names}
            self._decisions.clear()
            whole = {}
            for name in names:
                whole[name] = pa.concat_arrays(columns.pop(name))
            self._decisions = [pa.table(whole)]
        return self._decisions[0]

    def each(self) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
        """Each partition's values and rows (:meth:`rows_of`), one at a time."""
        for values in list(self._files):
            rows = self.rows_of(values)
            if rows is not None:
                yield values, rows


__all__ = ["PartitionedBatch"]
