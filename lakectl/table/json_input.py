"""The one way lakectl parses JSON it finds inside a table: bounded in size and depth, typed.

Anyone who can write to a table can write its ``_lakectl`` files, so their contents are data to
check, never structures to trust: a file larger than its kind's limit is not read past the limit,
nesting deeper than :data:`MAX_DEPTH` is refused by a linear scan *before* the parser sees it (a
``[`` repeated 100,000 times would otherwise exhaust the interpreter's recursion limit), and the
field readers below (:func:`field_int`, :func:`field_str`, ...) turn a value of the wrong type or
out of range into a :class:`JsonInputError` instead of a crash further on. Every failure is a
:class:`~lakectl.errors.FormatError` naming the file.

Warnings about damage that lakectl works around (a checkpoint it skips, a status file it ignores)
are issued as :class:`TableWarning` through Python's :mod:`warnings`: the CLI prints each once as
``warning: ...`` on stderr; library users see them as ordinary Python warnings.
"""

from __future__ import annotations

import json
import operator
import re
import warnings
from collections.abc import Callable
from enum import IntEnum
from itertools import accumulate, count
from typing import Any, TypeVar

from lakectl.errors import FormatError
from lakectl.storage.fs import Storage


class SizeLimit(IntEnum):
    """The largest file of each kind lakectl parses, in bytes.

    Generous on purpose: a limit only stops a file from exhausting memory. A checkpoint holds
    every commit record of the table (a few hundred bytes each, more for records listing many
    directories), so a table of millions of commits stays well under its limit.
    """

    LOG_RECORD = 64 * 2**20
    CHECKPOINT = 2**30
    TXN = 2**20
    COMPACTION_STATUS = 64 * 2**20
    WRITE_SUMMARY = 2**20


MAX_DEPTH = 400
"""The deepest nesting of arrays and objects accepted. Log records nest about 6 levels; room is
left for statements stored as expression trees (at most ``updates.max.expression.depth`` deep),
and the parser's own recursion stays far below the interpreter's limit of 1,000 frames."""

MAX_INT = 2**63 - 1
MIN_INT = -(2**63)

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# Brackets as 2 (opening) and 0 (closing), every other byte deleted: the running sum minus the
# number of brackets so far is the depth (UTF-8 never uses these bytes inside a character).
_BRACKETS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_OTHER_BYTES = bytes(b for b in range(256) if b not in b"[]{}")


class TableWarning(UserWarning):
    """Damage in a table's files that lakectl worked around (the command still ran)."""


def warn(message: str) -> None:
    """Issue ``message`` as a :class:`TableWarning` (the CLI prints it on stderr)."""
    warnings.warn(message, TableWarning, stacklevel=2)


class JsonInputError(FormatError):
    """A table file whose JSON is too large, too deep, unparseable or of the wrong shape."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(
            f"{where} is damaged: {why}",
            hint="restore the file from a backup, or remove it if lakectl can do without it",
        )
        self.where = where
        self.why = why


def nesting_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text``, outside strings (no recursion).

    Text that is not valid JSON may count deeper than a parser would go; never shallower.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return _bracket_depth(_STRING.sub(b"", raw))


def _bracket_depth(raw: bytes) -> int:
    steps = raw.translate(_BRACKETS, _OTHER_BYTES)
    return max(map(operator.sub, accumulate(steps), count(1)), default=0)


def parse_json(raw: bytes | str, where: str, *, limit: int) -> Any:
    """The JSON value of ``raw`` (the contents of ``where``), checked for size and depth.

    Raises :class:`JsonInputError` naming ``where``; never ``RecursionError``.
    """
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if len(data) > limit:
        raise _damaged(where, f"larger than {limit:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _damaged(where, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    # Counting the brackets inside strings too bounds the depth from above, at a fraction of the
    # cost of finding the strings: only a file above the limit by that count is scanned exactly.
    depth = _bracket_depth(data)
    if depth > MAX_DEPTH:
        depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise _damaged(where, f"nested {depth} levels deep (at most {MAX_DEPTH} are read)")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: only on an already deep stack
        raise _damaged(where, f"not valid JSON ({str(exc)[:200]})") from exc


def read_json(storage: Storage, path: str, *, limit: int) -> Any:
    """Read and parse the table file ``path`` (at most ``limit`` bytes are read).

    ``FileNotFoundError`` passes through; a directory where a file belongs is a
    :class:`JsonInputError`.
    """
    where = storage.url(path)
    try:
        raw = storage.read_head(path, limit + 1)
    except IsADirectoryError as exc:
        raise _damaged(where, "a directory, not a file") from exc
    return parse_json(raw, where, limit=limit)


def read_json_object(storage: Storage, path: str, *, limit: int) -> dict[str, Any]:
    """:func:`read_json` for a file that must hold a JSON object."""
    value = read_json(storage, path, limit=limit)
    if not isinstance(value, dict):
        raise _damaged(storage.url(path), f"holds JSON {_kind(value)}, not an object")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _damaged(where: str, why: str) -> JsonInputError:
    return JsonInputError(where, why)


# --- typed fields ------------------------------------------------------------------------------

T = TypeVar("T")
REQUIRED: Any = object()
"""The default of a field that must be present."""


def _kind(value: object) -> str:
    """``value``'s JSON kind with its article: "a string", "an array", "null"."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if value is None:
        return "null"
    return "an array" if isinstance(value, list) else names.get(type(value), "an object")


def _get(data: dict[str, Any], key: str, default: Any) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"expected an object, found {_kind(data)}")
    if key in data:
        return data[key]
    if default is REQUIRED:
        raise ValueError(f"field {key!r} is missing")
    return default


def as_int(value: object, what: str, low: int = MIN_INT, high: int = MAX_INT) -> int:
    """``value`` when it is a JSON integer (not a boolean) in ``[low, high]``."""
    if type(value) is not int:
        raise ValueError(f"{what} must be an integer, not {_kind(value)}")
    if not low <= value <= high:
        raise ValueError(f"{what} is out of range ({low}..{high})")
    return value


def as_str(value: object, what: str) -> str:
    """``value`` when it is a JSON string."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {_kind(value)}")
    return value


def field_int(
    data: dict[str, Any],
    key: str,
    default: Any = REQUIRED,
    *,
    low: int = MIN_INT,
    high: int = MAX_INT,
) -> Any:
    """The integer ``data[key]`` (``default`` when absent; a null is ``default`` too when the
    default is None)."""
    value = _get(data, key, default)
    if value is None and default is None:
        return None
    return as_int(value, f"field {key!r}", low, high)


def field_str(data: dict[str, Any], key: str, default: Any = REQUIRED) -> Any:
    """The string ``data[key]`` (``default`` when absent, or null with a None default)."""
    value = _get(data, key, default)
    if value is None and default is None:
        return None
    return as_str(value, f"field {key!r}")


def field_bool(data: dict[str, Any], key: str, default: bool) -> bool:
    """The boolean ``data[key]`` (``default`` when absent)."""
    value = _get(data, key, default)
    if not isinstance(value, bool):
        raise ValueError(f"field {key!r} must be true or false, not {_kind(value)}")
    return value


def field_list(
    data: dict[str, Any], key: str, item: Callable[[object, str], T], default: Any = ()
) -> list[T]:
    """The array ``data[key]`` with each element checked by ``item`` (e.g. :func:`as_str`)."""
    value = _get(data, key, default)
    if not isinstance(value, list | tuple):
        raise ValueError(f"field {key!r} must be an array, not {_kind(value)}")
    return [item(v, f"an element of {key!r}") for v in value]


def field_dict(data: dict[str, Any], key: str, default: Any = REQUIRED) -> dict[str, Any]:
    """The object ``data[key]`` (``default`` when absent)."""
    value = _get(data, key, default)
    if not isinstance(value, dict):
        raise ValueError(f"field {key!r} must be an object, not {_kind(value)}")
    return value


def field_str_dict(
    data: dict[str, Any], key: str, item: Callable[[object, str], T], default: Any = REQUIRED
) -> dict[str, T]:
    """The object ``data[key]`` with each value checked by ``item``."""
    value = field_dict(data, key, default)
    return {k: item(v, f"{key}[{k!r}]") for k, v in value.items()}


__all__ = [
    "MAX_DEPTH",
    "REQUIRED",
    "JsonInputError",
    "SizeLimit",
    "TableWarning",
    "as_int",
    "as_str",
    "field_bool",
    "field_dict",
    "field_int",
    "field_list",
    "field_str",
    "field_str_dict",
    "nesting_depth",
    "parse_json",
    "read_json",
    "read_json_object",
    "warn",
]
