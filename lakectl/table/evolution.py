"""Schema evolution as pure values: which changes are allowed, and what old files hold.

A table's schema changes by commits (``lakectl alter``, ``lakectl load --evolve``): columns are
added at the end, as Hive adds them, numeric types widen as ORC's schema evolution reads
them (int -> bigint, float -> double, decimal precision up), and data columns may be renamed
(their position is their identity). Files are never rewritten for it:
the ACID ``row`` struct of a file keeps the columns it was written with, and readers map its
fields to the table's columns *by position*, filling the columns a file lacks with the
column's default (or NULL) and casting widened ones. Which schema each directory was written
with follows from the log: the schema of the state its writer read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lakectl.errors import UsageError
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Column, Schema, check_column_name, parse_schema

_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


@dataclass(frozen=True)
class SchemaChange:
    """What ``alter`` asks for: columns to add (``"name type [not null] [default v]"``),
    columns to widen (``"name type"``) and columns to rename (``"old=new"``)."""

    add_columns: tuple[str, ...] = ()
    widen: tuple[str, ...] = ()
    rename: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.add_columns or self.widen or self.rename)


def is_widening(old: str, new: str) -> bool:
    """Whether a column of type ``old`` may become ``new``: an integer type to a larger one,
    float to double, or a decimal to a larger precision at the same scale."""
    if old in _INTEGER_BITS and new in _INTEGER_BITS:
        return _INTEGER_BITS[new] > _INTEGER_BITS[old]
    if (old, new) == ("float", "double"):
        return True
    m_old, m_new = _DECIMAL.match(old), _DECIMAL.match(new)
    if m_old and m_new:
        return m_old.group(2) == m_new.group(2) and int(m_new.group(1)) > int(m_old.group(1))
    return False


def evolve(meta: TableMetadata, change: SchemaChange) -> TableMetadata:
    """``meta`` with ``change`` applied (renames first, then widenings, then additions), every
    part checked; :class:`UsageError` names the first problem (nothing is applied then).

    What the metadata alone cannot tell, whether an installed statement or a list-bucketing
    layout names a renamed column, and whether the default of an added or widened column is a
    value of its type (the expression language's conversion), the caller checks
    (:mod:`lakectl.ops.alter`)."""
    if change.is_empty:
        raise UsageError(
            "nothing to change: give --add-column, --widen or --rename-column",
            hint='e.g. lakectl alter sales --add-column "discount double default 0"',
        )
    meta = _renamed(meta, change.rename)
    columns = _widened(meta, list(meta.schema.columns), change.widen)
    added = _added(Schema(tuple(columns)), change.add_columns)
    # After the data columns, before the partition columns (they stay last, as Hive has them).
    parts = {p.lower() for p in meta.partition_by}
    data = [c for c in columns if c.name.lower() not in parts]
    partition = [c for c in columns if c.name.lower() in parts]
    return replace(meta, schema=Schema(tuple(data + added + partition)))


def parse_renames(texts: tuple[str, ...]) -> list[tuple[str, str]]:
    """``("old=new", ...)`` as (old, new) pairs, or :class:`UsageError` for a malformed one."""
    pairs = []
    for text in texts:
        old, sep, new = text.partition("=")
        old, new = old.strip().strip("`"), new.strip().strip("`")
        if not sep or not old or not new:
            raise UsageError(
                f"--rename-column {text!r}: expected OLD=NEW, e.g. 'qty=quantity'",
            )
        pairs.append((old, new))
    return pairs


def _renamed(meta: TableMetadata, texts: tuple[str, ...]) -> TableMetadata:
    """``meta`` with the data columns ``texts`` name renamed, the key renamed with them.

    A stored file keeps the names it was written with; readers match its ``row`` fields to
    the table's columns by position, so a renamed column reads its old values, and a column
    added later under the old name reads its default. Partition columns name directories and
    cannot be renamed."""
    if not texts:
        return meta
    columns = list(meta.schema.columns)
    key = list(meta.primary_key)
    parts = {p.lower() for p in meta.partition_by}
    for old, new in parse_renames(texts):
        schema = Schema(tuple(columns))
        current = schema.find(old)
        if current is None:
            raise UsageError(
                f"--rename-column {old!r}: no such column (columns: {', '.join(schema.names)})"
            )
        if current.name.lower() in parts:
            raise UsageError(
                f"--rename-column {current.name!r}: a partition column cannot be renamed (its "
                "name is part of every partition directory's name)"
            )
        check_column_name(new)
        if new == current.name:
            raise UsageError(f"--rename-column {old}={new}: the column already has that name")
        taken = schema.find(new)
        if taken is not None and taken is not current:
            raise UsageError(
                f"--rename-column {current.name}={new}: the table already has a column "
                f"{taken.name!r}",
                hint="rename that one first, or choose another name",
            )
        columns = [replace(c, name=new) if c is current else c for c in columns]
        key = [new if k.lower() == current.name.lower() else k for k in key]
    return replace(meta, schema=Schema(tuple(columns)), primary_key=tuple(key))


def renamed_columns(old: TableMetadata, new: TableMetadata) -> dict[str, str]:
    """Old name -> new name of the data columns ``new`` renamed (matched by position)."""
    return {
        before.name: after.name
        for before, after in zip(old.data_schema.columns, new.data_schema.columns, strict=False)
        if before.name != after.name
    }


def _added(schema: Schema, texts: tuple[str, ...]) -> list[Column]:
    """The columns ``texts`` describe, checked against ``schema`` and each other."""
    added: list[Column] = []
    for text in texts:
        parsed = parse_schema(text).columns
        if len(parsed) != 1:
            raise UsageError(
                f"--add-column {text!r}: one column per option, e.g. 'discount double default 0'"
            )
        column = parsed[0]
        taken = schema.find(column.name) or next(
            (c for c in added if c.name.lower() == column.name.lower()), None
        )
        if taken is not None:
            raise UsageError(
                f"--add-column {column.name!r}: the table already has a column {taken.name!r}",
                hint="choose another name; --widen changes an existing column's type",
            )
        if not column.nullable and column.default is None:
            raise UsageError(
                f"--add-column {column.name!r}: a NOT NULL column needs a default (the rows "
                "already stored have no value for it)",
                hint=f"e.g. --add-column '{column.name} {column.type} not null default 0'",
            )
        if not column.nullable and (column.default or "").strip().lower() == "null":
            raise UsageError(f"--add-column {column.name!r}: NOT NULL with a NULL default")
        added.append(column)
    return added


def _widened(meta: TableMetadata, columns: list[Column], texts: tuple[str, ...]) -> list[Column]:
    for text in texts:
        pieces = text.split(None, 1)
        if len(pieces) != 2:
            raise UsageError(f"--widen {text!r}: expected 'COLUMN TYPE', e.g. 'qty bigint'")
        schema = Schema(tuple(columns))
        current = schema.find(pieces[0].strip("`"))
        if current is None:
            raise UsageError(
                f"--widen {pieces[0]!r}: no such column (columns: {', '.join(schema.names)})"
            )
        new_type = parse_schema(f"{current.name} {pieces[1]}").columns[0].type
        if current.name.lower() in {p.lower() for p in meta.partition_by}:
            raise UsageError(
                f"--widen {current.name!r}: a partition column's type cannot change (its "
                "values are directory names)"
            )
        if meta.buckets and current.name.lower() in {k.lower() for k in meta.primary_key}:
            raise UsageError(
                f"--widen {current.name!r}: the key of a bucketed table cannot change type (a "
                "key's bucket is a hash of its typed value)"
            )
        if not is_widening(current.type, new_type):
            raise UsageError(
                f"--widen {current.name!r}: {current.type} -> {new_type} is not a widening "
                "old files can be read as",
                hint="allowed: tinyint -> smallint -> int -> bigint, float -> double, "
                "decimal(p,s) -> decimal(p2,s) with p2 > p",
            )
        widened = replace(current, type=new_type)
        columns = [widened if c is current else c for c in columns]
    return columns


def changed_columns(old: TableMetadata, new: TableMetadata) -> dict[str, list[str]]:
    """What an evolution changed, for results and the log: added, widened and renamed columns."""
    added = [c.name for c in new.data_schema.columns[len(old.data_schema.columns) :]]
    widened = [
        f"{after.name} {before.type} -> {after.type}"
        for before, after in zip(old.data_schema.columns, new.data_schema.columns, strict=False)
        if before.type != after.type
    ]
    renamed = [f"{a} -> {b}" for a, b in renamed_columns(old, new).items()]
    return {"added": added, "widened": widened, "renamed": renamed}


def written_schemas(state: TableState) -> dict[str, Schema]:
    """Directory (relative to the table) -> the data schema it was written with, for every
    directory of ``state`` written with another data schema than the current one.

    A writer writes with the schema of the state it read (``read_seq``); a record that carries
    metadata of its own wrote with that.
    """
    current = state.metadata.data_schema
    if all(r.metadata.data_schema == current for r in state.records if r.metadata is not None):
        return {}  # never evolved: every directory holds the current columns
    out: dict[str, Schema] = {}
    schema_at: list[tuple[int, Schema]] = []
    for record in state.records:
        read = record.read_seq if record.read_seq is not None else record.seq
        if record.metadata is not None:
            written = record.metadata.data_schema
            schema_at.append((record.seq, written))
        else:
            written = next((s for seq, s in reversed(schema_at) if seq <= read), current)
        if written != current:
            for rel in record.added:
                out[rel] = written
    return out


__all__ = [
    "SchemaChange",
    "changed_columns",
    "evolve",
    "is_widening",
    "parse_renames",
    "renamed_columns",
    "written_schemas",
]
