"""An ACID event file's stripes, read with only the columns a read needs.

ORC stores every column of the ``row`` struct apart, so a read of a few data columns decodes
only those (and the event columns it needs): the ORC reader is given their paths
(``row.<field>``). The file's ``row`` fields are mapped to today's data columns by
:mod:`lakectl.kernel.schema_map` (by position, widened types cast, defaults for columns added
since). A stripe whose statistics exclude a
:class:`~lakectl.arrow.pushdown.StripeTest` is not read at all.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.arrow.events import orc_source
from lakectl.arrow.orc_io import OUT_OF_RANGE, read_stripe
from lakectl.arrow.pushdown import StripeTest
from lakectl.errors import FormatError
from lakectl.kernel.schema_map import conformed, row_source
from lakectl.storage.fs import Storage
from lakectl.table.orc_stats import stripe_statistics

if TYPE_CHECKING:
    import pyarrow as pa


def _event_types() -> dict[str, pa.DataType]:
    from lakectl.arrow.types import event_schema
    from lakectl.table.schema import Schema

    return {f.name: f.type for f in event_schema(Schema(()))}


_EVENT_TYPES: dict[str, pa.DataType] = {}


@dataclass(frozen=True)
class FlatEvents:
    """One stripe's events: the event columns read (by name), whether each event has a row,
    and the data columns read, in the table's names and types."""

    events: dict[str, pa.Array]
    has_row: pa.Array
    data: list[pa.Array]
    num_rows: int

    @staticmethod
    def concat(parts: Sequence[FlatEvents]) -> FlatEvents:
        """``parts`` (of one read) as one: small stripes are tested and filtered together."""
        import pyarrow as pa

        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        return FlatEvents(
            {name: pa.concat_arrays([p.events[name] for p in parts]) for name in first.events},
            pa.concat_arrays([p.has_row for p in parts]),
            [pa.concat_arrays([p.data[i] for p in parts]) for i in range(len(first.data))],
            sum(p.num_rows for p in parts),
        )


@dataclass(frozen=True)
class EventRead:
    """What to read from event files: ``event_names`` of the event columns, and ``fields``
    (table data fields) of the ``row`` struct, each at its position in ``data_names`` (the
    table's data columns, for position matching), and the values of columns a file lacks
    (``defaults``, by position in ``data_names``; none: nulls)."""

    event_names: tuple[str, ...]
    fields: tuple[pa.Field, ...]
    data_names: tuple[str, ...]
    stream_rows: int | None = None  # stream larger stripes in batches of this many rows
    defaults: tuple[object, ...] = ()
    _plans: dict[pa.Schema, _FilePlan] = field(default_factory=dict, compare=False, repr=False)

    def stripes(
        self, storage: Storage, path: str, test: StripeTest | None = None
    ) -> Iterator[FlatEvents]:
        """The stripes of the file at ``path`` (those ``test`` may keep), flattened. With
        :attr:`stream_rows`, a file whose stripes are larger and all kept is read in batches
        of that many rows instead, through pyarrow's dataset scanner: pyarrow's ORC reader
        decodes a whole stripe at once, twice over (its own vectors, then Arrow's), while the
        scanner streams (but decodes every column of the row: it selects top-level columns).
        The scanner allocates with the C library's allocator: a read that keeps the rows it
        gets (``to_arrow`` of a compacted base keeps them unfiltered) was several times slower
        with pyarrow's default (mimalloc). A stripe holding a timestamp pyarrow cannot hold is
        read through pyorc (:func:`lakectl.arrow.orc_io.read_stripe`)."""
        import pyarrow as pa
        import pyarrow.orc as orc

        with orc_source(storage, path) as source:
            reader = orc.ORCFile(source)
            schema = reader.schema.remove_metadata()  # per-file ACID key index, stats
            plan = self._plans.get(schema)
            if plan is None:
                plan = self._plans[schema] = self._plan(schema, storage.url(path))
            keep = self._kept(reader, source, plan, test) if test else None
            stripe_rows = reader.nrows / max(reader.nstripes, 1)
            skip = 0  # rows already streamed
            if self.stream_rows and stripe_rows > self.stream_rows and all(keep or [True]):
                try:
                    for flat in self._streamed(source, plan):
                        yield flat
                        skip += flat.num_rows
                    return
                except pa.ArrowInvalid as exc:
                    if OUT_OF_RANGE not in str(exc):
                        raise
            for stripe in range(reader.nstripes):
                if keep is not None and not keep[stripe]:
                    continue
                batch = read_stripe(reader, source, stripe, plan.paths)
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                yield plan.flatten(batch.slice(skip) if skip else batch)
                skip = 0

    def _streamed(self, source: Any, plan: _FilePlan) -> Iterator[FlatEvents]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        columns = {f"event.{name}": pc.field(file) for name, file in plan.events.items()}
        columns["has_row"] = pc.field(plan.row).is_valid()
        columns |= {
            f"data.{i}": pc.field(plan.row, s) for i, s in enumerate(plan.sources) if s is not None
        }
        fragment = ds.OrcFileFormat().make_fragment(source)
        for batch in fragment.to_batches(
            columns=columns,
            batch_size=self.stream_rows,
            use_threads=False,
            memory_pool=pa.system_memory_pool(),
        ):
            events = {name: batch.column(f"event.{name}") for name in plan.events}
            data = [
                None if s is None else batch.column(f"data.{i}") for i, s in enumerate(plan.sources)
            ]
            yield _typed(events, batch.column("has_row"), data, plan, batch.num_rows)

    def _plan(self, schema: pa.Schema, where: str) -> _FilePlan:
        top = {name.lower(): name for name in schema.names}
        events = {}
        for name in self.event_names:
            found = top.get(name.lower())
            if found is None:
                raise FormatError(f"{where}: not an ACID event file (no {name} column)")
            events[name] = found
        row_name = top.get("row")
        if row_name is None:
            raise FormatError(f"{where}: not an ACID event file (no row column)")
        row_type = schema.field(row_name).type
        children = [row_type.field(i).name for i in range(row_type.num_fields)]
        sources: list[str | None] = []
        fills: list[object] = []
        for wanted in self.fields:
            position = self.data_names.index(wanted.name)
            source = row_source(position, len(children))  # None: added after the file
            sources.append(None if source is None else children[source])
            fills.append(self.defaults[position] if position < len(self.defaults) else None)
        read = [s for s in sources if s is not None]
        extra = None
        if not read:  # the row's presence is read from one of its columns
            if not children:
                raise FormatError(f"{where}: the row has no columns")
            extra = children[0]
        chosen = [*read, *([extra] if extra else [])]
        names = [*events.values(), *(f"{row_name}.{c}" for c in chosen)]
        paths = None if any("." in n for n in [*events.values(), row_name, *chosen]) else names
        return _FilePlan(events, row_name, tuple(sources), self.fields, tuple(fills), paths, schema)

    @staticmethod
    def _kept(reader: Any, source: Any, plan: _FilePlan, test: StripeTest) -> list[bool] | None:
        """Per stripe, whether ``test`` may keep it (None: no statistics to judge by)."""
        import pyarrow as pa

        offset = (
            reader.file_length
            - 1
            - reader.file_postscript_length
            - reader.file_footer_length
            - reader.stripe_statistics_length
        )
        try:
            stats = stripe_statistics(
                source,
                offset,
                reader.stripe_statistics_length,
                reader.compression,
                list(plan.schema),
            )
        except (FormatError, ValueError, zlib.error, pa.ArrowException):
            return None  # statistics that do not parse exclude nothing
        if stats is None or len(stats) != reader.nstripes:
            return None
        return [test(plan.by_field(stripe)) for stripe in stats]


@dataclass(frozen=True)
class _FilePlan:
    """How one file's columns map to the read: event columns (read name -> file name), the
    row struct's name, the file names of the data fields (None: not in the file), the table's
    fields, the values of those the file lacks, and the ORC paths to read (None: every column,
    when a name holds a dot)."""

    events: dict[str, str]
    row: str
    sources: tuple[str | None, ...]
    fields: tuple[pa.Field, ...]
    fills: tuple[object, ...]
    paths: list[str] | None
    schema: pa.Schema

    def by_field(self, stats: dict[str, Any]) -> dict[str, Any]:
        """Stripe statistics of the data fields read, by table column name."""
        return {
            f.name: None if src is None else stats.get(f"{self.row}.{src}")
            for f, src in zip(self.fields, self.sources, strict=True)
        }

    @staticmethod
    def row_children(row: pa.DataType) -> list[str]:
        return [row.field(i).name for i in range(row.num_fields)]

    def flatten(self, batch: pa.RecordBatch) -> FlatEvents:
        events = {name: batch.column(source) for name, source in self.events.items()}
        row = batch.column(self.row)
        children = dict(zip(self.row_children(row.type), row.flatten(), strict=True))
        data = [None if source is None else children[source] for source in self.sources]
        return _typed(events, row.is_valid(), data, self, batch.num_rows)


def _typed(
    events: dict[str, pa.Array],
    has_row: pa.Array,
    data: Sequence[pa.Array | None],
    plan: _FilePlan,
    rows: int,
) -> FlatEvents:
    """Events with the event columns and ``data`` cast to their types where they differ, and
    the fields the file lacks filled in."""
    if not _EVENT_TYPES:
        _EVENT_TYPES.update(_event_types())
    events = {
        n: c if c.type == _EVENT_TYPES[n] else c.cast(_EVENT_TYPES[n]) for n, c in events.items()
    }
    typed = [
        conformed(a, f, fill, rows)
        for a, f, fill in zip(data, plan.fields, plan.fills, strict=True)
    ]
    return FlatEvents(events, has_row, typed, rows)


__all__ = ["EventRead", "FlatEvents"]
