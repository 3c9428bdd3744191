"""Table schemas as plain values: parsed from ``"sell_id bigint, ..."`` and rendered for Spark.

Types are Spark SQL type names (``int``, ``bigint``, ``decimal(10,2)``, ``date``, ...). No Spark
import here: the CLI's fast commands and the planners use schemas without a JVM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lakectl.errors import UsageError
from lakectl.table.json_input import field_bool, field_str

_SIMPLE_TYPES = {
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "float": "float",
    "real": "float",
    "double": "double",
    "boolean": "boolean",
    "bool": "boolean",
    "string": "string",
    "varchar": "string",
    "char": "string",
    "text": "string",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}
_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_NAMES = frozenset(
    {"operation", "originaltransaction", "bucket", "rowid", "currenttransaction", "row"}
)


def normalize_type(type_name: str) -> str:
    """Return the canonical Spark SQL name of a column type, or raise :class:`UsageError`."""
    t = type_name.strip().lower()
    if t in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[t]
    if t == "decimal":
        return "decimal(10,0)"
    m = _DECIMAL.match(t)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2) or 0)
        if not 1 <= precision <= 38 or scale > precision:
            raise UsageError(
                f"invalid decimal type {type_name!r}: precision 1..38, scale <= precision"
            )
        return f"decimal({precision},{scale})"
    m = re.match(r"^(?:varchar|char)\s*\(\s*\d+\s*\)$", t)
    if m:
        return "string"
    raise UsageError(
        f"unsupported column type {type_name!r}",
        hint="use one of: int, bigint, smallint, tinyint, float, double, boolean, string, "
        "decimal(p,s), date, timestamp, binary",
    )


@dataclass(frozen=True)
class Column:
    """One column: a name, a canonical Spark SQL type name, and an optional default (text)."""

    name: str
    type: str
    nullable: bool = True
    default: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name, "type": self.type, "nullable": self.nullable}
        if self.default is not None:
            data["default"] = self.default
        return data

    @staticmethod
    def from_json(data: dict[str, object]) -> Column:
        """The column a log record holds. Its name and type must be ones lakectl writes (they
        reach Spark DDL): :class:`UsageError` otherwise, ``ValueError`` for a wrong type."""
        column = Column(
            field_str(data, "name"),
            field_str(data, "type"),
            field_bool(data, "nullable", True),
            field_str(data, "default", None),
        )
        check_column_name(column.name)
        if normalize_type(column.type) != column.type:
            raise UsageError(f"column {column.name!r} has the type {column.type[:40]!r}")
        return column


@dataclass(frozen=True)
class Schema:
    """An ordered list of columns with case-insensitive lookup (as Hive and Spark resolve names)."""

    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def find(self, name: str) -> Column | None:
        lowered = name.lower()
        for c in self.columns:
            if c.name.lower() == lowered:
                return c
        return None

    def __getitem__(self, name: str) -> Column:
        col = self.find(name)
        if col is None:
            raise KeyError(name)
        return col

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def types(self) -> dict[str, str]:
        """Column name -> Spark SQL type name, in column order."""
        return {c.name: c.type for c in self.columns}

    def to_ddl(self) -> str:
        """Spark DDL string, e.g. ```a` bigint, `b` string``."""
        return ", ".join(f"`{c.name}` {c.type}" for c in self.columns)

    def select(self, names: list[str]) -> Schema:
        return Schema(tuple(self[n] for n in names))

    def without(self, names: list[str]) -> Schema:
        drop = {n.lower() for n in names}
        return Schema(tuple(c for c in self.columns if c.name.lower() not in drop))

    def to_json(self) -> list[dict[str, object]]:
        return [c.to_json() for c in self.columns]

    @staticmethod
    def from_json(data: list[dict[str, object]]) -> Schema:
        return Schema(tuple(Column.from_json(d) for d in data))


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    quoted = False  # inside a 'default' text, where commas and parentheses are the value's
    for ch in text:
        if ch == "'":
            quoted = not quoted  # '' (an escaped quote) toggles twice
        elif ch == "(" and not quoted:
            depth += 1
        elif ch == ")" and not quoted:
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


# An unquoted default that calls a function (a default is one constant).
_CALL = re.compile(r"[(){}]")


def parse_schema(text: str) -> Schema:
    """Parse ``"sell_id bigint, total_amt decimal(10,2), ..."`` into a :class:`Schema`."""
    columns: list[Column] = []
    seen: set[str] = set()
    for part in _split_top_level(text):
        pieces = part.split(None, 1)
        if len(pieces) != 2:
            raise UsageError(
                f"schema entry {part!r} needs a name and a type, e.g. 'sell_id bigint'"
            )
        name, type_name = pieces[0].strip("`"), pieces[1]
        default = None
        m = re.match(r"^(.*?)\s+default\s+(?:'((?:[^']|'')*)'|(\S+))\s*$", type_name, re.I | re.S)
        if m:
            type_name = m.group(1)
            default = m.group(2).replace("''", "'") if m.group(2) is not None else m.group(3)
            if m.group(2) is None and _CALL.search(default):
                raise UsageError(
                    f"column {name!r}: default {default} is not a constant (functions such as "
                    "current_timestamp() are not allowed)",
                    hint=f"give a value of the column's type; quote text: default '{default}'",
                )
        not_null = False
        if type_name.lower().rstrip().endswith("not null"):
            type_name, not_null = type_name[: -len("not null")].rstrip(), True
        check_column_name(name)
        if name.lower() in seen:
            raise UsageError(f"column {name!r} appears twice in the schema")
        seen.add(name.lower())
        columns.append(Column(name, normalize_type(type_name), not not_null, default))
    if not columns:
        raise UsageError("the schema is empty", hint='e.g. --schema "id bigint, name string"')
    return Schema(tuple(columns))


def check_column_name(name: str) -> None:
    """Refuse names Hive ACID files or partition paths cannot hold."""
    if not _NAME.match(name):
        raise UsageError(
            f"invalid column name {name!r}: use letters, digits and underscores, not starting "
            "with a digit"
        )
