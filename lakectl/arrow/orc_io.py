"""ORC files read and written through pyarrow, or through pyorc where pyarrow cannot hold a time.

pyarrow's ORC adapter converts timestamps through 64-bit nanoseconds since 1970: it fails to
read a stripe holding a time before 1677-09-21 or after 2262-04-11 (such as an end date
9999-12-31, which Spark writes and reads), and cannot write such times, nor times before 1970
with a fraction of a second, as Spark's writer stores them
(:mod:`lakectl.kernel.orc_timestamps`). pyarrow stays the fast path; where it cannot,
pyorc (the C++ ORC library's Python bindings) reads or writes the same file, value by value:

- :func:`read_stripe` returns what pyarrow's ``read_stripe`` returns (the same columns, dates
  as the stored day count, for :mod:`lakectl.kernel.orc_dates`), except that timestamps are
  ``timestamp[us, tz=UTC]`` (every time from 0001 to 9999 fits) instead of zone-less
  nanoseconds: readers cast them to the table's type either way. pyorc reads only the
  timestamp columns where it can, pyarrow the others. Every Python reader of ORC files reads
  stripes through it.
- :class:`OrcFileWriter` writes batches through pyarrow until one holds a time pyarrow cannot
  store; then it writes the file again through pyorc (the stripes written so far read back
  first), with the same schema, codec, block size, bloom filters and dictionary rule.

pyorc is imported only on these fallback paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from lakectl.errors import ArrowEngineLimit
from lakectl.failpoints import failpoint
from lakectl.kernel.orc_dates import batch_to_orc as dates_to_orc
from lakectl.kernel.orc_timestamps import (
    batch_to_orc as timestamps_to_orc,
)
from lakectl.kernel.orc_timestamps import (
    micros_from_stored,
    stored_from_micros,
)
from lakectl.storage.fs import Storage

if TYPE_CHECKING:
    import pyarrow as pa
    import pyorc

# pyarrow's error for a stored time outside 64-bit nanoseconds since 1970
OUT_OF_RANGE = "out of range for nanosecond"
_PYORC_CODECS = {
    "uncompressed": "NONE",
    "zlib": "ZLIB",
    "snappy": "SNAPPY",
    "lz4": "LZ4",
    "zstd": "ZSTD",
}


def read_stripe(
    reader: Any, source: Any, stripe: int, columns: Sequence[str] | None = None
) -> pa.RecordBatch:
    """Stripe ``stripe`` of the ORC file pyarrow's ``reader`` (an ``ORCFile``) reads from
    ``source``, only ``columns`` (names, or ``parent.child`` paths; None: all) read: through
    pyarrow, or through pyorc when a timestamp in it is outside pyarrow's range."""
    import pyarrow as pa

    try:
        return reader.read_stripe(stripe, columns=None if columns is None else list(columns))
    except pa.ArrowInvalid as exc:
        if OUT_OF_RANGE not in str(exc):
            raise
    selected = _selected(reader.schema.remove_metadata(), columns)
    split = _timestamp_split(selected)
    if split is None:
        return _pyorc_stripe(selected, source, stripe, columns)
    other, times = split
    batch = reader.read_stripe(stripe, columns=other)
    read = _pyorc_stripe(_selected(selected, times), source, stripe, times)
    return _merged(selected, batch, read)


def read_file(reader: Any, source: Any, columns: Sequence[str] | None = None) -> pa.Table:
    """Every stripe of the file (:func:`read_stripe`) as one table, its timestamps as
    ``timestamp[us, tz=UTC]`` whichever library read them (finer fractions cut, as Spark's
    reader cuts them)."""
    import pyarrow as pa

    batches = [read_stripe(reader, source, i, columns) for i in range(reader.nstripes)]
    if not batches:
        return reader.read(columns=None if columns is None else list(columns))
    wide = _wide_schema(batches[0].schema)
    return pa.Table.from_batches([b.cast(wide, safe=False) for b in batches])


def _timestamp_split(selected: pa.Schema) -> tuple[list[str], list[str]] | None:
    """The paths of ``selected`` pyarrow reads (no timestamp) and those of its timestamps (for
    pyorc, which is several times slower per value): timestamps at the top level or directly
    in a top-level struct that has other fields. None where the split does not apply (a
    timestamp deeper down, a struct of only timestamps, a name holding a dot): pyorc reads
    the whole selection."""
    import pyarrow as pa

    from lakectl.kernel.orc_timestamps import has_timestamps

    other: list[str] = []
    times: list[str] = []
    for field in selected:
        if "." in field.name:
            return None
        if pa.types.is_timestamp(field.type):
            times.append(field.name)
        elif not has_timestamps(field.type):
            other.append(field.name)
        elif pa.types.is_struct(field.type):
            children = list(field.type)
            if any("." in c.name or (has_timestamps(c.type) and not pa.types.is_timestamp(c.type))
                   for c in children):  # fmt: skip
                return None
            plain = [f"{field.name}.{c.name}" for c in children if not has_timestamps(c.type)]
            if not plain:
                return None
            other += plain
            times += [f"{field.name}.{c.name}" for c in children if has_timestamps(c.type)]
        else:  # a list or map of timestamps
            return None
    return (other, times) if other else None


def _merged(selected: pa.Schema, batch: pa.RecordBatch, times: pa.RecordBatch) -> pa.RecordBatch:
    """The columns of ``selected``: the timestamps from ``times``, the rest from ``batch``
    (which gives each struct its nulls)."""
    import pyarrow as pa

    wide = _wide_schema(selected)
    arrays = []
    for field in wide:
        if field.name in times.schema.names and pa.types.is_timestamp(field.type):
            arrays.append(times.column(field.name))
            continue
        column = batch.column(field.name)
        if field.name not in times.schema.names:
            arrays.append(column)
            continue
        parts = {c.name: a for c, a in zip(column.type, column.flatten(), strict=True)}
        parts |= {
            c.name: a
            for c, a in zip(
                times.schema.field(field.name).type, times.column(field.name).flatten(), strict=True
            )
        }
        arrays.append(
            pa.StructArray.from_arrays(
                [parts[c.name] for c in field.type],
                fields=list(field.type),
                mask=column.is_null() if column.null_count else None,
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=wide)


def _pyorc_stripe(
    selected: pa.Schema, source: Any, stripe: int, columns: Sequence[str] | None
) -> pa.RecordBatch:
    """The ``columns`` (``selected``: their types as pyarrow gives them) of the stripe, read
    through pyorc."""
    import pyarrow as pa
    import pyorc

    wide = _wide_schema(selected)
    source.seek(0)
    reader = pyorc.Reader(
        source,
        column_names=None if columns is None else list(columns),
        converters=_converters(),
        struct_repr=pyorc.StructRepr.DICT,
    )
    rows = list(reader.read_stripe(stripe))
    raw = pa.struct(list(_plain_schema(wide)))
    values = pa.array(rows, type=raw) if rows else pa.array([], type=raw)
    return pa.RecordBatch.from_struct_array(values.cast(pa.struct(list(wide))))


def _selected(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """``schema`` pruned to ``columns`` (names, or dotted paths into structs) as the ORC
    readers select them."""
    import pyarrow as pa

    if columns is None:
        return schema
    paths = [c.lower().split(".") for c in columns]

    def keep(field: pa.Field, prefix: list[str]) -> pa.Field | None:
        here = [*prefix, field.name.lower()]
        depth = len(here)
        if any(p[:depth] == here and len(p) == depth for p in paths):
            return field
        if not pa.types.is_struct(field.type) or not any(p[:depth] == here for p in paths):
            return None
        kept = [k for k in (keep(c, here) for c in field.type) if k is not None]
        return field.with_type(pa.struct(kept))

    return pa.schema([k for k in (keep(f, []) for f in schema) if k is not None])


def _wide_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every timestamp (nested too) as ``timestamp[us, tz=UTC]``."""
    import pyarrow as pa

    return pa.schema(
        [f.with_type(_mapped_type(f.type, pa.timestamp("us", tz="UTC"))) for f in schema]
    )


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with timestamps as int64 (microseconds) and dates as int32 (days): the
    Python values pyorc reads and writes through :func:`_converters`."""
    import pyarrow as pa

    return pa.schema([f.with_type(_mapped_type(f.type, pa.int64(), pa.int32())) for f in schema])


def _mapped_type(
    type_: pa.DataType, timestamp: pa.DataType, date: pa.DataType | None = None
) -> pa.DataType:
    import pyarrow as pa

    if pa.types.is_timestamp(type_):
        return timestamp
    if pa.types.is_date32(type_):
        return date or type_
    if pa.types.is_struct(type_):
        return pa.struct([f.with_type(_mapped_type(f.type, timestamp, date)) for f in type_])
    if pa.types.is_map(type_):
        return pa.map_(
            _mapped_type(type_.key_type, timestamp, date),
            _mapped_type(type_.item_type, timestamp, date),
        )
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return pa.list_(
            type_.value_field.with_type(_mapped_type(type_.value_type, timestamp, date))
        )
    return type_


def _converters() -> dict[Any, type[Any]]:
    """pyorc's converters for lakectl's Python values: a timestamp as microseconds since 1970
    (:mod:`lakectl.kernel.orc_timestamps`), a date as the stored day count."""
    import pyorc
    from pyorc.converters import ORCConverter

    class Micros(ORCConverter):
        @staticmethod
        def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> int:
            return micros_from_stored(seconds, nanoseconds)

        @staticmethod
        def to_orc(micros: int, timezone: Any) -> tuple[int, int]:
            return stored_from_micros(micros)

    class Days(ORCConverter):
        @staticmethod
        def from_orc(days: int) -> int:
            return days

        @staticmethod
        def to_orc(days: int) -> int:
            return days

    return {pyorc.TypeKind.TIMESTAMP: Micros, pyorc.TypeKind.DATE: Days}


def unsliced(rows: pa.RecordBatch) -> pa.RecordBatch:
    """``rows`` copied to start at offset 0 if it is a slice.

    pyarrow's ORC writer (26.0) ignores a slice's offset in a struct column that has nulls: the
    file would get the values of the rows before the slice. A run of one kind of events (new
    rows, then delete events with a null ``row``) is such a slice.
    """
    import pyarrow as pa

    if all(column.offset == 0 for column in rows.columns):
        return rows
    return rows.take(pa.array(range(rows.num_rows), pa.int64()))


class OrcFileWriter:
    """The ORC file ``path``, written batch by batch as Spark's writer stores values (dates in
    the hybrid calendar, timestamps as ORC ``timestamp``): through pyarrow, or, from the first
    batch holding a time pyarrow cannot store, through pyorc (see the module's docstring).
    ``compression`` is pyarrow's codec name; ``bloom_filter_columns`` are ORC column ids; with
    ``schema``, a file no row was written to holds that schema (else no file is made)."""

    def __init__(
        self,
        storage: Storage,
        path: str,
        *,
        compression: str = "uncompressed",
        compression_block_size: int = 64 * 1024,
        bloom_filter_columns: list[int] | None = None,
        dictionary_key_size_threshold: float = 0.0,
        schema: pa.Schema | None = None,
    ) -> None:
        self.storage = storage
        self.schema = schema
        self.path = path
        self.compression = compression
        self.compression_block_size = compression_block_size
        self.bloom_filter_columns = bloom_filter_columns
        self.dictionary_key_size_threshold = dictionary_key_size_threshold
        self._handle: Any = None  # the file pyorc writes to
        self._buffer: Any = None  # the bytes pyarrow writes (see _open)
        self._arrow: Any = None
        self._orc: pyorc.Writer | None = None
        self._plain: pa.Schema | None = None

    def __enter__(self) -> OrcFileWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def through_pyorc(self) -> bool:
        """Whether the file is written through pyorc."""
        return self._orc is not None

    def write(self, batch: pa.RecordBatch) -> None:
        """Append ``batch`` (Arrow's calendar and timestamp types) to the file."""
        import pyarrow as pa

        failpoint("arrow.write")  # tests: the Arrow engine's limit met mid-run
        if not batch.num_rows:
            return
        batch = dates_to_orc(unsliced(batch))
        if self._orc is None:
            try:
                stored = timestamps_to_orc(batch)
            except ArrowEngineLimit:  # a time pyarrow cannot store
                self._switch(batch.schema)
            else:
                if self._arrow is None:
                    self._open()
                    self._arrow = self._arrow_writer()
                self._arrow.write(pa.Table.from_batches([stored]))
                return
        self._write_rows(batch)

    def close(self) -> None:
        """Finish the file."""
        import pyarrow as pa

        if self._arrow is None and self._orc is None and self._handle is None:
            if self.schema is None:
                return
            empty = pa.RecordBatch.from_pylist([], schema=self.schema)
            self._open()
            self._arrow = self._arrow_writer()
            self._arrow.write(pa.Table.from_batches([timestamps_to_orc(dates_to_orc(empty))]))
        try:
            if self._arrow is not None:
                self._arrow.close()
                self._arrow = None
                self._store(self._buffer.getvalue())
            if self._orc is not None:
                self._orc.close()
        finally:
            self._arrow = self._orc = None
            self._buffer = None
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def _open(self) -> None:
        """pyarrow's writer writes into memory: a storage failure (a full disk) inside its C++
        write path ends the process (``std::terminate``) instead of raising, so the file's bytes
        go to storage from Python when it is finished (:meth:`_store`)."""
        import pyarrow as pa

        self._buffer = pa.BufferOutputStream()

    def _store(self, data: pa.Buffer) -> None:
        with self.storage.fs.open(self.path, "wb") as handle:
            handle.write(memoryview(data))

    def _arrow_writer(self) -> Any:
        import pyarrow.orc as orc

        return orc.ORCWriter(
            self._buffer,
            compression=self.compression,
            compression_block_size=self.compression_block_size,
            bloom_filter_columns=self.bloom_filter_columns,
            dictionary_key_size_threshold=self.dictionary_key_size_threshold,
        )

    def _switch(self, schema: pa.Schema) -> None:
        """Go on through pyorc: the stripes pyarrow wrote so far are read back and written
        again first."""
        import pyarrow as pa
        import pyarrow.orc as orc
        import pyorc

        written = None
        if self._arrow is not None:
            self._arrow.close()
            self._arrow = None
            written = self._buffer.getvalue()
            self._buffer = None
        self._handle = self.storage.fs.open(self.path, "wb")
        self._plain = _plain_schema(_wide_schema(schema))
        self._orc = pyorc.Writer(
            self._handle,
            pyorc.Struct(**{f.name: _orc_type(f.type) for f in schema}),
            compression=pyorc.CompressionKind[_PYORC_CODECS[self.compression.lower()]],
            compression_block_size=self.compression_block_size,
            bloom_filter_columns=self.bloom_filter_columns,
            dict_key_size_threshold=self.dictionary_key_size_threshold,
            struct_repr=pyorc.StructRepr.DICT,
            converters=_converters(),
        )
        if written is not None:
            before = orc.ORCFile(pa.BufferReader(written))
            for stripe in range(before.nstripes):
                self._write_rows(before.read_stripe(stripe).rename_columns(schema.names))

    def _write_rows(self, batch: pa.RecordBatch) -> None:
        """``batch`` (dates as stored) through pyorc, as Python values."""
        import pyarrow as pa

        assert self._orc is not None and self._plain is not None
        wide = batch.cast(_wide_schema(batch.schema), safe=False)
        values = pa.RecordBatch.from_arrays(
            [c.cast(f.type) for c, f in zip(wide.columns, self._plain, strict=True)],
            schema=self._plain,
        )
        self._orc.writerows(values.to_pylist())


def _orc_type(type_: pa.DataType) -> pyorc.typedescription.TypeDescription:
    """The ORC type Spark's writer stores an Arrow type as."""
    import pyarrow as pa
    import pyorc

    simple = {
        pa.bool_(): pyorc.Boolean,
        pa.int8(): pyorc.TinyInt,
        pa.int16(): pyorc.SmallInt,
        pa.int32(): pyorc.Int,
        pa.int64(): pyorc.BigInt,
        pa.float32(): pyorc.Float,
        pa.float64(): pyorc.Double,
        pa.string(): pyorc.String,
        pa.large_string(): pyorc.String,
        pa.binary(): pyorc.Binary,
        pa.large_binary(): pyorc.Binary,
        pa.date32(): pyorc.Date,
    }
    if type_ in simple:
        return simple[type_]()
    if pa.types.is_timestamp(type_):
        return pyorc.Timestamp()
    if pa.types.is_decimal(type_):
        return pyorc.Decimal(precision=type_.precision, scale=type_.scale)
    if pa.types.is_struct(type_):
        return pyorc.Struct(**{f.name: _orc_type(f.type) for f in type_})
    if pa.types.is_map(type_):
        return pyorc.Map(key=_orc_type(type_.key_type), value=_orc_type(type_.item_type))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return pyorc.Array(_orc_type(type_.value_type))
    raise TypeError(f"no ORC type for Arrow type {type_}")


__all__ = ["OUT_OF_RANGE", "OrcFileWriter", "read_file", "read_stripe", "unsliced"]
