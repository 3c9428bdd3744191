"""Timestamps in ORC files written through Python, stored as Spark's ORC writer stores them.

Spark writes a ``timestamp`` column as ORC's ``timestamp`` type (not ``timestamp with local
time zone``, which pyarrow makes of a zoned Arrow timestamp and which Hive 2.3's reader does not
know): seconds and nanoseconds of the instant. Arrow holds lakectl's timestamps as
``timestamp[us, tz=UTC]``; :func:`batch_to_orc` hands them to pyarrow's writer as zone-less
nanoseconds of the same instant, which it stores as ORC ``timestamp`` with writer zone GMT, so
every reader (Spark's, Hive's, pyarrow's) reads the same instant.

pyarrow cannot write every instant Spark can (:func:`batch_to_orc` raises for them):

- its ORC adapter converts through nanoseconds since 1970 in 64 bits, so only instants from
  1677-09-21 to 2262-04-11 fit;
- it splits a time before 1970 into seconds rounded towards zero and a *negative* fraction,
  which Java's ORC readers (Spark, Hive) reject; Spark's writer stores a positive fraction.
  Times before 1970 go through pyarrow only when they are whole seconds.

Other values are written through pyorc (:mod:`lakectl.arrow.orc_io`), which takes seconds and
nanoseconds (:func:`stored_from_micros`) and reads them back the same way
(:func:`micros_from_stored`). Spark's writer and reader store a time before 1582-10-15 in the
hybrid Julian/Gregorian calendar of ``java.sql.Timestamp``: the stored instant is the one whose
Julian date and time of day (in UTC, lakectl's session zone) are the value's proleptic
Gregorian ones, as for dates (:mod:`lakectl.kernel.orc_dates`); both functions move such times
between the calendars, day for day.

ORC stores a time before 1970 as seconds rounded towards zero and a positive fraction, and its
readers (Java's and C++'s) take a negative second with a fraction as one second earlier: a time
strictly between 1969-12-31 23:59:59 and 1970-01-01 00:00:00 has no encoding of its own, and
every ORC writer (Spark's too) stores it as the same fraction after 1970-01-01 00:00:00, which
is what every reader then reads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from lakectl.errors import ArrowEngineLimit
from lakectl.kernel.orc_dates import (
    GREGORIAN_START,
    gregorian_to_julian_days,
    julian_to_gregorian_days,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

_MICROS = 1_000_000
_DAY_MICROS = 86_400 * _MICROS
# Microseconds since 1970 of 1582-10-15 00:00 UTC: from here on both calendars count alike.
GREGORIAN_START_MICROS = GREGORIAN_START * _DAY_MICROS
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
    value = _first_unstorable(micros)
    if value is None:
        return
    raise ArrowEngineLimit(
        f"column {name} holds {timestamp_text(value)}, a timestamp pyarrow's ORC writer cannot "
        "store: it writes times from 1677-09-21 00:12:44 to 2262-04-11 23:47:16.854775 UTC, "
        "and times before 1970 only in whole seconds",
        hint="write the file with lakectl.arrow.orc_io.OrcFileWriter, which writes any time",
    )


def _first_unstorable(micros: pa.Array) -> int | None:
    """The first value of ``micros`` (microseconds since 1970) pyarrow cannot write as Spark's
    writer does, or None."""
    import numpy as np
    import pyarrow.compute as pc

    low, high = (v.as_py() for v in pc.min_max(micros).values())
    if low is None or (low >= 0 and high <= HIGHEST_MICROS):
        return None
    values = pc.fill_null(micros, 0).to_numpy(zero_copy_only=False)
    wrong = (
        (values < LOWEST_MICROS)
        | (values > HIGHEST_MICROS)
        | ((values < 0) & (values % _MICROS != 0))
    )
    if not wrong.any():
        return None
    return int(values[np.argmax(wrong)])


def micros_from_stored(seconds: int, nanos: int) -> int:
    """The instant (microseconds since 1970, proleptic Gregorian) of an ORC timestamp read as
    ``seconds`` since 1970 and ``nanos``: times before 1582-10-15 moved from the hybrid
    calendar Spark stores them in."""
    micros = seconds * _MICROS + nanos // 1000
    if micros < GREGORIAN_START_MICROS:
        return _rebased(micros, julian_to_gregorian_days)
    return micros


def stored_from_micros(micros: int) -> tuple[int, int]:
    """The seconds since 1970 (rounded down) and nanoseconds (0 .. 999,999,999) an ORC writer
    is given for ``micros`` to store it as Spark's writer does (the inverse of
    :func:`micros_from_stored`)."""
    if micros < GREGORIAN_START_MICROS:
        micros = _rebased(micros, gregorian_to_julian_days)
    seconds, fraction = divmod(micros, _MICROS)
    return seconds, fraction * 1000


def _rebased(micros: int, days: Callable[[np.ndarray], np.ndarray]) -> int:
    """``micros`` with its day moved by ``days`` (a calendar's), its time of day kept."""
    import numpy as np

    day, time = divmod(micros, _DAY_MICROS)
    return int(days(np.array([day], dtype=np.int64))[0]) * _DAY_MICROS + time


def timestamp_text(micros: int) -> str:
    """Microseconds since 1970 as an ISO-8601 UTC time (``1500-01-01 00:00:00.5 UTC``)."""
    epoch = dt.datetime(1970, 1, 1)
    try:
        text = (epoch + dt.timedelta(microseconds=micros)).isoformat(sep=" ")
    except OverflowError:
        return f"{micros} microseconds since 1970"
    return f"{text} UTC"


__all__ = [
    "GREGORIAN_START_MICROS",
    "HIGHEST_MICROS",
    "LOWEST_MICROS",
    "batch_to_orc",
    "has_timestamps",
    "micros_from_stored",
    "stored_from_micros",
    "timestamp_text",
]
