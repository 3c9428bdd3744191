"""What every result object shares: ``to_dict()``, the JSON-ready form ``--json`` prints.

The keys of a result's ``to_dict()`` are the names of its fields (or properties) in Python, with
the same nesting, so a script reading ``--json`` and a program calling :mod:`lakectl.api` see one
shape. Times are ISO-8601 UTC strings (:func:`iso_time`), sizes and counts are numbers, and
what is unknown is ``None`` (JSON ``null``). A listing (``history``, ``compactions``,
``updates``) is a :class:`Listing`: a list of entries that also knows its table, printed as one
object ``{"table": ..., "<entries>": [...]}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Protocol, TypeVar

from lakectl.updates.times import format_millis


def iso_time(millis: int | None) -> str | None:
    """Epoch milliseconds as ISO-8601 UTC (``2024-01-02T03:04:05Z``); None stays None."""
    return None if millis is None else format_millis(millis)


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
