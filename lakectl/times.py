"""Times for ``-- time=`` directives and for ``--as-of`` / ``--known-at``: parsed to epoch millis.

The rules are those of the original Hive SCD project, so its ``.updates`` files keep their meaning:
a value is first read as a long (epoch milliseconds, negatives allowed), then as an ISO-8601 date
or date-time. A value without an offset is in UTC unless a timezone name is given. An all-digit
value is always milliseconds, even when it looks like a date; :func:`parse_time` then returns a
warning saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from datetime import timezone as dt_timezone
from typing import overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lakectl.errors import BadInputError, UsageError

ACCEPTED_FORMATS = (
    "epoch milliseconds (e.g. 1409529600000), yyyy-MM-dd, or yyyy-MM-dd HH:mm[:ss[.SSS]] "
    "(a T or a space before the time) with an optional Z, UTC or +hh:mm/-hh:mm offset"
)

_LONG = re.compile(r"^[+-]?\d+$")
# ISO-8601 and the forms people type: a space for the T (``2024-01-01 10:00``), a lower-case t
# or z, an offset written +02, +0200 or +02:00, optionally after a space, or the word UTC.
_ISO = re.compile(
    r"^(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"(?:(?:[Tt]| +)(?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?"
    r" *(?P<offset>[Zz]|UTC|utc|[+-]\d{2}(?::?\d{2})?)?)?$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class ParsedTime:
    """A time as epoch milliseconds, with a warning when the input was probably not meant so."""

    millis: int
    warning: str | None = None


def parse_time(value: str, timezone: str | None = None) -> ParsedTime:
    """Parse epoch milliseconds or an ISO-8601 date/date-time into epoch milliseconds.

    ``timezone`` (an IANA name such as ``Europe/Paris``) is the zone of values written without
    an offset; UTC when ``None``. Raises :class:`BadInputError` for a malformed value and
    :class:`UsageError` for an unknown timezone name.
    """
    text = value.strip()
    if _LONG.match(text):
        if len(text.lstrip("+-")) > 19:  # beyond any long; int() of a huge text is slow too
            raise BadInputError(f"time {value[:40]!r}... is out of range for epoch milliseconds")
        millis = int(text)
        if not _LONG_MIN <= millis <= _LONG_MAX:
            raise BadInputError(f"time {value!r} is out of range for epoch milliseconds")
        return ParsedTime(millis, _digits_warning(text))
    match = _ISO.match(text)
    if match is None:
        raise BadInputError(f"malformed time {value!r}: expected {ACCEPTED_FORMATS}")
    return ParsedTime(_iso_to_millis(value, match, timezone))


def _iso_to_millis(value: str, match: re.Match[str], timezone_name: str | None) -> int:
    parts = match.groupdict()
    fraction = (parts["fraction"] or "").ljust(9, "0")
    try:
        local = datetime(
            int(parts["year"]),
            int(parts["month"]),
            int(parts["day"]),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            int(fraction[:6]) if parts["fraction"] else 0,
        )
    except ValueError as exc:
        raise BadInputError(
            f"malformed time {value!r} ({exc}): expected {ACCEPTED_FORMATS}"
        ) from exc
    zone = _offset_zone(value, parts["offset"]) if parts["offset"] else resolve_zone(timezone_name)
    moment = local.replace(tzinfo=zone)
    delta = moment - _EPOCH
    # Exact integer arithmetic: a timedelta's float seconds would lose sub-millisecond precision.
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000


def _offset_zone(value: str, offset: str) -> tzinfo:
    if offset.upper() in ("Z", "UTC"):
        return UTC
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 18 or minutes > 59 or (hours == 18 and minutes):
        raise BadInputError(
            f"malformed time {value!r} (offset {offset} is out of range): expected "
            f"{ACCEPTED_FORMATS}"
        )
    return dt_timezone(sign * timedelta(hours=hours, minutes=minutes))


def resolve_zone(timezone_name: str | None) -> tzinfo:
    """Return the zone for an IANA name (UTC for ``None``), or raise :class:`UsageError`."""
    if timezone_name is None or timezone_name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(timezone_name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(
            f"unknown timezone {timezone_name!r}",
            hint="use an IANA name such as UTC, Europe/Paris or America/New_York",
        ) from exc


def _digits_warning(text: str) -> str | None:
    """Warn when an all-digit value reads like ``yyyymmdd`` (it is milliseconds, i.e. in 1970)."""
    if len(text) != 8 or not text.isdigit():
        return None
    year, month, day = int(text[:4]), int(text[4:6]), int(text[6:8])
    if not 1900 <= year <= 2999:
        return None
    try:
        date(year, month, day)
    except ValueError:
        return None
    return (
        f"time {text!r} is read as epoch milliseconds ({format_millis(int(text))}, in 1970); "
        f"if you meant a date, write {year:04d}-{month:02d}-{day:02d}"
    )


def format_millis(millis: int) -> str:
    """Render epoch milliseconds as ISO-8601 UTC, e.g. ``2014-09-01T00:00:00Z``."""
    try:
        moment = _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        return f"{millis} ms since the epoch"
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if millis % 1000:
        text += f".{millis % 1000:03d}"
    return text + "Z"


@overload
def utc(millis_value: int) -> datetime: ...
@overload
def utc(millis_value: None) -> None: ...
def utc(millis_value: int | None) -> datetime | None:
    """Epoch milliseconds as a timezone-aware UTC datetime (what result objects hold for
    times); None stays None."""
    if millis_value is None:
        return None
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis_value)


def millis(moment: datetime) -> int:
    """A datetime (naive: UTC) as epoch milliseconds."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
