"""What a load's batch must hold, and the errors naming what it lacks: one set of rules and
messages for every engine that checks a batch (:mod:`lakectl.spark.batch`,
:mod:`lakectl.arrow.batch`).

A batch's columns are matched to the table's by name, case-insensitively. A table column the
batch lacks is filled with its default (or NULL) when the table allows it
(:meth:`~lakectl.table.metadata.TableMetadata.may_be_absent`); any other missing column, and any
batch column the table does not have (the op column of a CDC batch aside), is an error. The
shaped batch holds the table's columns (cast to their types) and the columns below.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakectl.errors import BadInputError, SourceParseError
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Column

ACTION_COL = "__lakectl_op"
ORDER_COL = "__lakectl_order"
POSITION_COL = "__lakectl_pos"
# Where a change was read from, when Spark read it from files: its file's place among the
# source's files in name order, and the start of the part of that file it was read with. A
# change's place in the source is (file, part, position): Spark reads files in an order of its
# own, the position orders the rows within a part.
SOURCE_FILE_COL = "__lakectl_file"
SOURCE_PART_COL = "__lakectl_part"
SOURCE_ORDER = (SOURCE_FILE_COL, SOURCE_PART_COL, POSITION_COL)


@dataclass(frozen=True)
class BatchOptions:
    mode: LoadMode
    op_column: str | None = None
    op_values: dict[str, str] | None = None  # code -> insert|update|delete
    order_by: str | None = None


@dataclass(frozen=True)
class BatchStats:
    """What the validation pass learned: row count and the partitions the batch touches
    (each partition's values cast to text, as Spark casts them)."""

    rows: int
    partitions: tuple[tuple[str | None, ...], ...]


@dataclass(frozen=True)
class BatchColumns:
    """How a batch's columns (``source``) map to the table's."""

    source: tuple[str, ...]
    op_column: str | None
    """The batch's op column as the batch spells it (a CDC batch), else None."""
    absent: tuple[Column, ...]
    """Table columns the batch lacks, each filled with its default or NULL."""

    def name_of(self, column: str) -> str | None:
        """The batch's spelling of the table column ``column`` (None: absent)."""
        return match_column(self.source, column)


def match_column(columns: tuple[str, ...] | list[str], name: str) -> str | None:
    """The name among ``columns`` equal to ``name`` ignoring case (the last such), or None."""
    lowered = {c.lower(): c for c in columns}
    return lowered.get(name.lower())


def batch_columns(
    columns: list[str], meta: TableMetadata, options: BatchOptions, source: str
) -> BatchColumns:
    """Match the batch's ``columns`` to the table's; raise :class:`BadInputError` naming a
    missing op column, missing required columns and unknown columns."""
    expected = {c.lower() for c in meta.schema.names}
    op_col = match_column(columns, options.op_column) if options.op_column else None
    if options.mode is LoadMode.CDC and op_col is None:
        raise BadInputError(
            f"{source}: no op column {options.op_column!r} (columns: {', '.join(columns)})",
            hint="name it with --op-column",
        )
    allowed_extra = {op_col.lower()} if op_col else set()
    extra = [c for c in columns if c.lower() not in expected and c.lower() not in allowed_extra]
    absent = [c for c in meta.schema.columns if match_column(columns, c.name) is None]
    missing = [c.name for c in absent if not meta.may_be_absent(c.name)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unknown column(s) {', '.join(extra)}")
        raise BadInputError(
            f"{source}: {' and '.join(parts)}; the table has {', '.join(meta.schema.names)}",
            hint=_columns_hint(extra, missing),
        )
    return BatchColumns(tuple(columns), op_col, tuple(absent))


def _columns_hint(extra: list[str], missing: list[str]) -> str:
    if extra:
        return (
            "add --evolve to add the new column(s) to the table with the load, or add them "
            f'first with `lakectl alter TABLE --add-column "{extra[0]} TYPE"`'
        )
    return (
        f"every row needs {', '.join(missing)} (a key, partition or NOT NULL column without a "
        "default): add it to the source"
    )


def empty_batch_error(source: str, *, columns: bool) -> BadInputError:
    """The error for a batch without rows (``columns``: it has columns) ."""
    what = "no rows" if columns else "no columns, no rows"
    return BadInputError(f"{source}: the batch is empty ({what}); nothing was loaded")


def parse_error(source: str, detail: str) -> SourceParseError:
    """The error for a source that cannot be parsed; ``detail`` names the problem on one line."""
    return SourceParseError(f"{source}: cannot be parsed: {detail}")


def type_error(source: str, column: Column, count: int, example: object) -> BadInputError:
    """The error for ``count`` values of ``column`` that do not fit its type (``example``: the
    first one, as text)."""
    return BadInputError(
        f"{source}: column {column.name!r}: {count} value(s) do not fit type {column.type}, "
        f"e.g. {example!r}"
    )


def null_key_error(source: str, key: str, count: int) -> BadInputError:
    """The error for ``count`` rows whose key column ``key`` is null."""
    return BadInputError(f"{source}: key column {key!r} is null in {count} row(s)")


def op_code_error(
    source: str, op_column: str, count: int, example: str, op_values: dict[str, str]
) -> BadInputError:
    """The error for ``count`` rows whose op code is not one of ``op_values`` (``example``: the
    first, ``'NULL'`` for a missing code)."""
    return BadInputError(
        f"{source}: column {op_column!r}: {count} row(s) have an unknown op code, e.g. "
        f"{example!r} (known: {', '.join(sorted(op_values.keys()))})",
        hint="map codes with --op-values I=insert,U=update,D=delete",
    )


__all__ = [
    "ACTION_COL",
    "ORDER_COL",
    "POSITION_COL",
    "SOURCE_FILE_COL",
    "SOURCE_ORDER",
    "SOURCE_PART_COL",
    "BatchColumns",
    "BatchOptions",
    "BatchStats",
    "batch_columns",
    "empty_batch_error",
    "match_column",
    "null_key_error",
    "op_code_error",
    "parse_error",
    "type_error",
]
