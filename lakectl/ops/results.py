"""What every result object shares: ``to_dict()``, the JSON-ready form ``--json`` prints.

The keys of a result's ``to_dict()`` are the names of its fields (or properties) in Python, with
the same nesting, so a script reading ``--json`` and a program calling :mod:`lakectl.api` see one
shape. Times are ISO-8601 UTC strings (:func:`iso_time`), sizes and counts are numbers, and
what is unknown is ``None`` (JSON ``null``). A listing (``history``, ``compactions``,
``updates``) is a :class:`Listing`: a list of entries that also knows its table, printed as one
object ``{"table": ..., "<entries>": [...]}``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from lakectl.times import format_millis, millis

if TYPE_CHECKING:
    import pandas as pd


def iso_time(moment: int | dt.datetime | None) -> str | None:
    """Epoch milliseconds (or a UTC datetime) as ISO-8601 UTC (``2024-01-02T03:04:05Z``); None
    stays None."""
    if isinstance(moment, dt.datetime):
        return format_millis(millis(moment))
    return None if moment is None else format_millis(moment)


def brief(obj: object, *fields: str) -> str:
    """A short repr: the class name, then ``fields`` that are set (``LoadResult('sales',
    version=3, inserted=10)``); the first field, when it is the table, goes unnamed."""
    parts = []
    for index, name in enumerate(fields):
        value = getattr(obj, name)
        if value is None:
            continue
        if isinstance(value, dt.datetime):
            value = iso_time(value)
        elif isinstance(value, Enum):
            value = value.value
        parts.append(repr(value) if index == 0 and name == "table" else f"{name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


class HasDict(Protocol):
    """A result entry: a dataclass whose ``to_dict()`` is its JSON form."""

    def to_dict(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=HasDict)


class Listing(list[E]):
    """The entries a listing command returns (oldest first), and the table they belong to.

    ``to_dict()`` is ``{"table": ..., ITEMS: [entry.to_dict(), ...]}``, where ``ITEMS`` is the
    subclass's :attr:`items_key` (also a property of the same name returning the entries)."""

    items_key: ClassVar[str] = "items"
    columns: ClassVar[tuple[str, ...]] = ()
    """The keys of each entry's ``to_dict()``, in order: the columns of ``--format csv``."""

    def __init__(self, entries: Iterable[E] = (), table: str = "") -> None:
        super().__init__(entries)
        self.table = table

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, self.items_key: [entry.to_dict() for entry in self]}

    def records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per entry: the rows of ``--format json|csv|tsv``."""
        return [entry.to_dict() for entry in self]

    def to_pandas(self) -> pd.DataFrame:
        """The entries as a pandas DataFrame, one row per entry and one column per field of
        ``to_dict()`` (:attr:`columns`), times as UTC timestamps.

        Returns:
            A :class:`pandas.DataFrame`.
        """
        import pandas as pd

        rows = [{c: getattr(entry, c, None) for c in self.columns} for entry in self]
        return pd.DataFrame(rows, columns=list(self.columns))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.table!r}, {len(self)} {self.items_key})"
