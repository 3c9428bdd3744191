"""Converting text to a value of a column's type: one rule for literals compared with a
column, SET values and column defaults.

Stricter than Spark's cast where Spark would return NULL or something surprising (Spark reads
``'1_000'`` or Arabic digits as NULL in one place and Python as a number in another): only ASCII
forms are accepted, blanks around the text are ignored, and anything else is refused with the
reason, never turned into NULL.

========== ==================================================================================
type       accepted text
========== ==================================================================================
integers   ``[+-]digits``, within the type's range
float,     a decimal or exponent number, ``NaN``, ``Infinity``/``inf`` (signed); a float
double     must be within ±3.4028235e38
decimal    a decimal number; more digits after the point than the scale round half up in
           SET and defaults, and are refused in comparisons (they could never be equal)
boolean    ``true/false``, ``t/f``, ``yes/no``, ``y/n``, ``1/0`` (any case)
date       ``yyyy-m-d`` (an ISO date; a time after it is ignored)
timestamp  ``yyyy-m-d[ |T]h:mm[:ss[.ffffff]]`` with an optional ``Z`` or ``±hh:mm`` offset;
           without one the time is UTC; the value is stored as UTC
string     any text, as it is
========== ==================================================================================
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING

from lakectl.errors import UsageError
from lakectl.expr.tree import INTEGRAL_BITS, decimal_parts

if TYPE_CHECKING:
    from lakectl.table.schema import Column

FLOAT_MAX = 3.4028235e38
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"nan": math.nan, "inf": math.inf, "infinity": math.inf}
_DATE = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[ T].*)?", re.DOTALL)
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[ T]([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?)?"
    r"(?:\s*(Z|[+-][0-9]{2}:?[0-9]{2}))?"
)
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
_MAX_TEXT = 400


class ConversionError(ValueError):
    """The text is not a value of the type (the message says why)."""


def convert_text(text: str, type_name: str, *, exact: bool = False) -> object:
    """The value of ``text`` as ``type_name`` (see the module's table); ``exact`` refuses a
    decimal that would need rounding. Raises :class:`ConversionError`."""
    if type_name == "string":
        return text
    stripped = text.strip()
    if len(stripped) > _MAX_TEXT:
        raise ConversionError("too long")
    if type_name in INTEGRAL_BITS:
        if not _INTEGER.fullmatch(stripped):
            raise ConversionError("not an integer")
        return check_integer(int(stripped), type_name)
    if type_name in ("float", "double"):
        return _floating(stripped, type_name)
    parts = decimal_parts(type_name)
    if parts is not None:
        if not _NUMBER.fullmatch(stripped):
            raise ConversionError("not a number")
        return fit_decimal(Decimal(stripped), parts, exact=exact)
    if type_name == "boolean":
        lowered = stripped.lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ConversionError("not a boolean (true/false)")
    if type_name == "date":
        return _date(stripped)
    if type_name in ("timestamp", "timestamp_ntz"):
        return _timestamp(stripped)
    raise ConversionError(f"values of type {type_name} cannot be written as text")


def check_integer(value: int, type_name: str) -> int:
    """``value`` when it is within ``type_name``'s range."""
    bits = INTEGRAL_BITS[type_name]
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ConversionError(f"out of range for {type_name}")
    return value


def fit_decimal(value: Decimal, parts: tuple[int, int], *, exact: bool) -> Decimal:
    """``value`` at the scale of ``decimal(p,s)``, rounded half up unless ``exact``."""
    precision, scale = parts
    if not value.is_finite():
        raise ConversionError("not a finite number")
    try:
        rounded = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation as exc:
        raise ConversionError(f"out of range for decimal({precision},{scale})") from exc
    if exact and rounded != value:
        raise ConversionError(f"has more than {scale} digits after the point")
    if rounded != 0 and rounded.adjusted() >= precision - scale:
        raise ConversionError(f"out of range for decimal({precision},{scale})")
    return rounded


def _floating(text: str, type_name: str) -> float:
    sign = -1.0 if text.startswith("-") else 1.0
    special = _SPECIAL.get(text.lstrip("+-").lower())
    if special is not None:
        return sign * special
    if not _NUMBER.fullmatch(text):
        raise ConversionError("not a number")
    value = float(text)
    if math.isinf(value) or (type_name == "float" and abs(value) > FLOAT_MAX):
        raise ConversionError(f"out of range for {type_name}")
    return value


def _date(text: str) -> date:
    match = _DATE.fullmatch(text)
    if match is None:
        raise ConversionError("not a date (yyyy-mm-dd)")
    try:
        return date(*(int(match.group(i)) for i in (1, 2, 3)))
    except ValueError as exc:
        raise ConversionError(f"not a date ({exc})") from exc


# The timestamps every reader can show in every time zone.
TIMESTAMP_RANGE = (datetime(1, 1, 3), datetime(9999, 12, 31))
_EPOCH = datetime(1970, 1, 1)
# What a statement may set a date or timestamp column to from data, as days or microseconds
# since 1970 (independent of the time zone): the dates of years 1 to 9999 and the timestamps of
# TIMESTAMP_RANGE, which Python's datetime (which rows become) can hold. Beyond them the value
# set is NULL, in every engine.
READABLE = {
    "date": ((datetime.min - _EPOCH).days, (datetime.max - _EPOCH).days),
    "timestamp": tuple((t - _EPOCH) // timedelta(microseconds=1) for t in TIMESTAMP_RANGE),
}


def _timestamp(text: str) -> datetime:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ConversionError("not a timestamp (yyyy-mm-dd[ hh:mm[:ss[.ffffff]]][+hh:mm])")
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
        )
    except ValueError as exc:
        raise ConversionError(f"not a timestamp ({exc})") from exc
    if offset and offset != "Z":
        digits = offset[1:].replace(":", "")
        shift = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            moment = moment - shift if offset[0] == "+" else moment + shift
        except OverflowError as exc:
            raise ConversionError("out of range for a timestamp") from exc
    if not TIMESTAMP_RANGE[0] <= moment <= TIMESTAMP_RANGE[1]:
        raise ConversionError("out of range for a timestamp (years 1 to 9999)")
    return moment


def default_value(column: Column) -> object:
    """The Python value of ``column``'s default (None without one), or :class:`UsageError`
    when the text is not a value of the column's type. The text is converted with the rules of
    every other string literal (:func:`convert_text`), so each engine
    reads the same value."""
    text = column.default
    if text is None or text.strip().lower() == "null":
        return None
    try:
        return convert_text(text, column.type)
    except ConversionError as exc:
        raise UsageError(
            f"column {column.name!r}: default {text!r} is not a {column.type} value ({exc})",
            hint="see the expression rules in the user guide (docs/guide/expressions.md)",
        ) from exc


__all__ = [
    "FLOAT_MAX",
    "READABLE",
    "TIMESTAMP_RANGE",
    "ConversionError",
    "check_integer",
    "convert_text",
    "default_value",
    "fit_decimal",
]
