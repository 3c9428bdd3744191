"""Errors raised to Python callers name the Python arguments, not the command line's flags.

The operations word their errors for the command line (``--as-of: ...``, ``use --engine
spark``). :func:`python_names` rewrites such a message and its hint for a caller of
:mod:`lakectl.api`: ``--as-of`` becomes ``as_of=``, a switch such as ``--dry-run`` becomes
``dry_run=True``, ``--engine spark`` becomes ``engine='spark'`` and ``--out PATH`` the path
given to ``write``. A command quoted in backquotes (```lakectl load --create```) is left as
the command line's.
"""

from __future__ import annotations

import re

from lakectl.errors import LakectlError

SWITCHES = frozenset(
    {"create", "evolve", "force", "raw", "dry-run", "off", "auto", "wait", "key-order"}
)
"""Flags without a value: keyword arguments set to ``True`` in Python."""

RENAMED = {
    "add-column": "add_columns",
    "rename-column": "rename",
    "column": "columns",
    "set": "assignments",
    "partition": "partitions",
    "state": "states",
    "conf": "conf",
}
"""Flags whose Python argument has another name than the flag's."""

SPELLED = {"out": "write(path)", "scd2": "scd2()", "json": "to_dict()"}
"""Flags that are a method or a value in Python rather than a keyword argument."""

_FLAG = re.compile(
    r"(?<![\w-])--(?P<name>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)"
    r"(?: (?P<value>[a-z][a-z0-9_]*|-?\d+)(?=[\s:,;.)]|$)| (?P<metavar>[A-Z][A-Z_]+)\b)?"
)
_CHOICES = frozenset({"parquet", "orc", "csv", "json", "table", "tsv", "spark", "arrow"})


def _argument(match: re.Match[str]) -> str:
    name, value = match["name"], match["value"]
    if name in SPELLED:
        return SPELLED[name] + ("" if value is None else f" {value}")
    argument = RENAMED.get(name, name.replace("-", "_"))
    if name in SWITCHES:
        return f"{argument}=True" + ("" if value is None else f" {value}")
    if value is None:
        return f"{argument}="
    if value.lstrip("-").isdigit():
        return f"{argument}={value}"
    if value in _CHOICES:
        return f"{argument}={value!r}"
    return f"{argument}= {value}"


def python_text(text: str) -> str:
    """``text`` with each command-line flag replaced by the Python argument it stands for; a
    quoted command (```lakectl alter TABLE --add-column ...```) stays as it is."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # outside backquotes
        parts[index] = _FLAG.sub(_argument, parts[index])
    return "`".join(parts)


def python_names(error: LakectlError) -> LakectlError:
    """``error`` (the same object) with its message and hint naming Python arguments."""
    error.message = python_text(error.message)
    error.args = (error.message, *error.args[1:])
    if error.hint:
        error.hint = python_text(error.hint)
    return error


__all__ = ["python_names", "python_text"]
