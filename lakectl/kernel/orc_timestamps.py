"""Timestamps in ORC files written through pyarrow, stored as Spark's ORC writer stores them.

Spark writes a ``timestamp`` column as ORC's ``timestamp`` type (not ``timestamp with local
time zone``, which pyarrow makes of a zoned Arrow timestamp and which Hive 2.3's reader does not
know): seconds and nanoseconds of the instant. Arrow holds lakectl's timestamps as
``timestamp[us, tz=UTC]``; :func:`batch_to_orc` hands them to pyarrow's writer as zone-less
nanoseconds of the same instant, which it stores as ORC ``timestamp`` with writer zone GMT, so
every reader (Spark's, Hive's, pyarrow's) reads the same instant.

pyarrow cannot write every instant Spark can:

- its ORC adapter converts through nanoseconds since 1970 in 64 bits, so only instants from
  1677-09-21 to 2262-04-11 fit (a timestamp before 1582 and its calendar never arise);
- it splits a time before 1970 into seconds rounded towards zero and a *negative* fraction,
  which Java's ORC readers (Spark, Hive) reject; Spark's writer stores a positive fraction.
  Times before 1970 are written only when they are whole seconds.

:func:`batch_to_orc` refuses any other value with a :class:`~lakectl.errors.UsageError` naming
the column and the value, before the file is written.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from lakectl.errors import ArrowEngineLimit

if TYPE_CHECKING:
    import pyarrow as pa

_MICROS = 1_000_000
# The first and last whole microseconds that fit in 64-bit nanoseconds since 1970; before 1970
# only whole seconds are written, so the first one is a whole second.
LOWEST_MICROS = -9_223_372_036 * _MICROS  # 1677-09-21 00:12:44 UTC
HIGHEST_MICROS = 9_223_372_036_854_775  # 2262-04-11 23:47:16.854775 UTC


def has_timestamps(type_: pa.DataType) -> bool:
    """Whether ``type_`` is a timestamp or a struct holding one."""
    import pyarrow as pa

    if pa.types.is_timestamp(type_):
        return True
    return pa.types.is_struct(type_) and any(
        has_timestamps(type_.field(i).type) for i in range(type_.num_fields)
    )


def batch_to_orc(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every timestamp (top-level or in a struct, such as an event's ``row``)
    as zone-less nanoseconds, as pyarrow's ORC writer stores an ORC ``timestamp``; unchanged
    when it has none. Raises :class:`UsageError` for a value this writer cannot store."""
    import pyarrow as pa

    if not any(has_timestamps(f.type) for f in batch.schema):
        return batch
    arrays = [_converted(c, f.name) for c, f in zip(batch.columns, batch.schema, strict=True)]
    return pa.RecordBatch.from_arrays(
        arrays,
        schema=pa.schema(
            [pa.field(f.name, a.type) for f, a in zip(batch.schema, arrays, strict=True)]
        ),
    )


def _converted(array: pa.Array, name: str) -> pa.Array:
    import pyarrow as pa

    type_ = array.type
    if pa.types.is_timestamp(type_):
        micros = array.cast(pa.timestamp("us", tz=type_.tz)).cast(pa.int64())
        _check(micros, name)
        return micros.cast(pa.timestamp("us")).cast(pa.timestamp("ns"))
    if not has_timestamps(type_):
        return array
    children = [_converted(array.field(i), type_.field(i).name) for i in range(type_.num_fields)]
    fields = [pa.field(type_.field(i).name, c.type) for i, c in enumerate(children)]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _check(micros: pa.Array, name: str) -> None:
    """Raise for the first value of ``micros`` (microseconds since 1970) pyarrow cannot write
    as Spark's writer does."""
    import numpy as np
    import pyarrow.compute as pc

    low, high = (v.as_py() for v in pc.min_max(micros).values())
    if low is None or (low >= 0 and high <= HIGHEST_MICROS):
        return
    values = pc.fill_null(micros, 0).to_numpy(zero_copy_only=False)
    wrong = (
        (values < LOWEST_MICROS)
        | (values > HIGHEST_MICROS)
        | ((values < 0) & (values % _MICROS != 0))
    )
    if not wrong.any():
        return
    value = int(values[np.argmax(wrong)])
    raise ArrowEngineLimit(
        f"column {name} holds {timestamp_text(value)}, a timestamp the Arrow engine cannot "
        "write: it writes times from 1677-09-21 00:12:44 to 2262-04-11 23:47:16.854775 UTC, "
        "and times before 1970 only in whole seconds",
        hint="use --engine spark",
    )


def timestamp_text(micros: int) -> str:
    """Microseconds since 1970 as an ISO-8601 UTC time (``1500-01-01 00:00:00.5 UTC``)."""
    epoch = dt.datetime(1970, 1, 1)
    try:
        text = (epoch + dt.timedelta(microseconds=micros)).isoformat(sep=" ")
    except OverflowError:
        return f"{micros} microseconds since 1970"
    return f"{text} UTC"


__all__ = ["HIGHEST_MICROS", "LOWEST_MICROS", "batch_to_orc", "has_timestamps", "timestamp_text"]
