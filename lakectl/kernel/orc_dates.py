"""Dates in ORC files: the hybrid Julian/Gregorian calendar Spark and Hive store them in.

An ORC date is a count of days since 1970-01-01. Spark's and Hive's writers count in the hybrid
calendar of ``java.util.GregorianCalendar`` (Julian before 1582-10-15) and Spark's readers
count back the same way, so a date before 1582-10-15 keeps its year, month and day through a
file. Arrow counts days in the proleptic Gregorian calendar: read as they are, the stored
days of 1400-03-01 are Arrow's 1400-03-10. Every Python read of an event file therefore moves
dates from the file's calendar to Arrow's (:func:`from_orc`, in
:func:`lakectl.kernel.schema_map.conformed`), and every Python writer of ORC files moves them
back (:func:`to_orc`), day for day as Spark's ``RebaseDateTime`` does. Dates from 1582-10-15 on
are the same in both calendars and are not touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# Days since 1970-01-01 of 1582-10-15, the first day of the Gregorian calendar: from here on
# both calendars count alike.
GREGORIAN_START = -141427
# Days since 1970-01-01 of proleptic 1582-10-05 .. 1582-10-14: days the hybrid calendar skips
# (Spark stores them as its next day, 1582-10-15).
_SKIPPED = (GREGORIAN_START - 10, GREGORIAN_START - 1)
_EPOCH_JDN = 2440588  # Julian day number of 1970-01-01
_OLDEST = -_EPOCH_JDN - 32082 + 1  # below this the day-number formulas do not hold (4800 BC)


def julian_to_gregorian_days(days: np.ndarray) -> np.ndarray:
    """Days in the hybrid calendar (as stored) as proleptic Gregorian days of the same year,
    month and day (a Julian February 29 of a year that is not a Gregorian leap year becomes
    March 1, as in Spark)."""
    import numpy as np

    days = np.asarray(days, dtype=np.int64)
    old = (days < GREGORIAN_START) & (days >= _OLDEST)
    if not old.any():
        return days
    year, month, day = _julian_date(days[old] + _EPOCH_JDN)
    out = days.copy()
    out[old] = _gregorian_jdn(year, month) - _EPOCH_JDN + day - 1
    return out


def gregorian_to_julian_days(days: np.ndarray) -> np.ndarray:
    """Proleptic Gregorian days as the hybrid calendar's days of the same year, month and day
    (what Spark's ORC writer stores); the ten days the hybrid calendar skips store as
    1582-10-15."""
    import numpy as np

    days = np.asarray(days, dtype=np.int64)
    old = (days < GREGORIAN_START) & (days >= _OLDEST)
    if not old.any():
        return days
    year, month, day = _gregorian_date(days[old] + _EPOCH_JDN)
    out = days.copy()
    out[old] = _julian_jdn(year, month) - _EPOCH_JDN + day - 1
    skipped = (days >= _SKIPPED[0]) & (days <= _SKIPPED[1])
    out[skipped] = GREGORIAN_START
    return out


def from_orc(array: pa.Array) -> pa.Array:
    """``array`` (a column as an ORC file stores it; dates nested in structs, lists and maps
    too) with its dates in Arrow's calendar."""
    return _mapped(array, julian_to_gregorian_days)


def to_orc(array: pa.Array) -> pa.Array:
    """``array`` with its dates (nested ones too) in the calendar ORC files store."""
    return _mapped(array, gregorian_to_julian_days)


def batch_to_orc(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with the dates of every column in the calendar ORC files store (unchanged
    when it has no date before 1582-10-15): what a writer of ORC files hands to pyarrow."""
    return _batch_mapped(batch, to_orc)


def batch_from_orc(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (a stripe of an ORC file) with the dates of every column in Arrow's
    calendar."""
    return _batch_mapped(batch, from_orc)


def _batch_mapped(batch: pa.RecordBatch, convert: Callable[[pa.Array], pa.Array]) -> pa.RecordBatch:
    import pyarrow as pa

    if not any(has_dates(f.type) for f in batch.schema):
        return batch
    arrays = [convert(c) for c in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def has_dates(type_: pa.DataType) -> bool:
    """Whether ``type_`` is a date or holds one."""
    import pyarrow as pa

    if pa.types.is_date32(type_):
        return True
    return any(has_dates(type_.field(i).type) for i in range(type_.num_fields))


def _mapped(array: pa.Array, days: Callable[[np.ndarray], np.ndarray]) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([_mapped(c, days) for c in array.chunks], array.type)
    type_ = array.type
    if not has_dates(type_) or not len(array):
        return array
    if pa.types.is_date32(type_):
        numbers = array.cast(pa.int32())
        low = pc.min(numbers).as_py()
        if low is None or low >= GREGORIAN_START:
            return array
        values = pc.fill_null(numbers, 0).to_numpy(zero_copy_only=False)
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        moved = days(values)
        return pa.array(moved, pa.int32(), mask=~valid).cast(pa.date32())
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(type_):
        children = [_mapped(c, days) for c in array.flatten()]
        return pa.StructArray.from_arrays(children, fields=list(type_), mask=mask)
    if pa.types.is_map(type_):
        return pa.MapArray.from_arrays(
            array.offsets,
            _mapped(array.keys, days),
            _mapped(array.items, days),
            type=type_,
            mask=mask,
        )
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        kind = pa.ListArray if pa.types.is_list(type_) else pa.LargeListArray
        return kind.from_arrays(array.offsets, _mapped(array.values, days), type=type_, mask=mask)
    return array


def _julian_date(jdn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) in the Julian calendar of Julian day numbers (year 0 is 1 BC)."""
    c = jdn + 32082
    d = (4 * c + 3) // 1461
    e = c - (1461 * d) // 4
    m = (5 * e + 2) // 153
    return d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


def _gregorian_date(jdn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) in the proleptic Gregorian calendar of Julian day numbers."""
    a = jdn + 32044
    b = (4 * a + 3) // 146097
    c = a - (146097 * b) // 4
    d = (4 * c + 3) // 1461
    e = c - (1461 * d) // 4
    m = (5 * e + 2) // 153
    return 100 * b + d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


def _gregorian_jdn(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    """Julian day numbers of the first of ``month`` of ``year``, proleptic Gregorian."""
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return 1 + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045


def _julian_jdn(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    """Julian day numbers of the first of ``month`` of ``year``, Julian calendar."""
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return 1 + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083


__all__ = [
    "GREGORIAN_START",
    "batch_from_orc",
    "batch_to_orc",
    "from_orc",
    "gregorian_to_julian_days",
    "has_dates",
    "julian_to_gregorian_days",
    "to_orc",
]
