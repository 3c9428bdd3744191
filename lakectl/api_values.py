"""Python values the library API takes where the command line takes text: times and column
lists."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from lakectl.errors import UsageError

TimeLike = int | str | dt.datetime | dt.date
"""A point in time: epoch milliseconds, a date or ISO date-time text, or a date/datetime
(naive values are UTC). For ``as_of``, ``-1`` means the raw data without Type 7 statements."""


def to_millis(value: TimeLike | None, what: str, timezone: str | None = None) -> int | None:
    """``value`` as epoch milliseconds (``None`` stays ``None``); text as ``--as-of`` takes it.

    Args:
        value: the time.
        what: the argument's name, for the error message.
        timezone: the zone of text without an offset (default UTC).

    Returns:
        Epoch milliseconds, or None.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{what}=: expected a time, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return int(aware.timestamp() * 1000)
    if isinstance(value, dt.date):
        return to_millis(dt.datetime(value.year, value.month, value.day), what)
    if isinstance(value, str):
        from lakectl.times import parse_time

        try:
            return parse_time(value, timezone).millis
        except UsageError:
            raise
        except Exception as exc:  # BadInputError: the value itself is malformed
            message = getattr(exc, "message", str(exc))
            raise UsageError(f"{what}=: {message}") from exc
    raise UsageError(f"{what}=: expected a time, got {type(value).__name__}")


def column_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Column names given as a list or as comma-separated text."""
    if value is None:
        return ()
    if isinstance(value, str):
        from lakectl.ops.create import split_columns

        return split_columns(value)
    return tuple(value)


__all__ = ["TimeLike", "column_names", "to_millis"]
