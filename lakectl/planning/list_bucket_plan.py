"""List bucketing as values and pure decisions: mappings, validation, recommendations, rewrites.

Where the data lives. A list-bucketed partition is one whose current base was written split by
the values of its skewed column(s), as Hive's list bucketing laid out a partition::

    ds=2024-01-02/base_0000007_v0000009/x=6/bucket_00000
    ds=2024-01-02/base_0000007_v0000009/x=20/bucket_00000
    ds=2024-01-02/base_0000007_v0000009/HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME/bucket_00000
    ds=2024-01-02/delta_0000008_0000008_0000/bucket_00000      (a later load: not split)

Several skewed columns nest (``x=10/y=a/``) and the default directory repeats once per column,
as Hive named it. The split is a property of one base directory: the log record that added the
base stores its mapping (``info.list_bucketing``: base path -> columns and skewed values), so
the mapping changes per partition and per day, time travel reads the mapping of the base it
reads, and ``--off`` is simply a base written without one. Deltas written by later loads stay
plain: they are read whole (they are small), and the next major compaction folds them into a
base split by the same mapping.

A reader that does not know any mapping still reads every file (the listing descends into the
list-bucketing directories) and gets every row; a reader that knows it reads only the directories
a ``--where`` predicate can match (see :mod:`lakectl.planning.prune`).

Hive's list-bucketing validation rules and what lakectl does with each:

* with bucketing (``CLUSTERED BY``): refused: a row's file would be chosen both by the hash of
  its key and by its value (``--buckets`` tables cannot be list-bucketed);
* external tables, CTAS, ``ALTER TABLE ... CONCATENATE`` on non-RCFile: do not exist here;
* ``LOAD DATA`` / ``INSERT INTO`` on a list-bucketed table: allowed: loads write plain deltas
  that every reader reads whole, so nothing can land in the wrong directory;
* non-partitioned tables: allowed: the mapping belongs to a base directory, not a partition;
* a partition value equal to the default directory's name: refused;
* skewed columns must be data columns (not partition columns) of a type with one canonical text
  (integers, string, date, boolean); skewed values must be distinct, non-NULL, non-empty, and at
  most :data:`MAX_SKEWED_VALUES` per partition (each is a directory and an entry in the log).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakectl.errors import UnknownColumnError, UsageError
from lakectl.planning.compaction_plan import MAJOR, PartitionCompaction
from lakectl.planning.prune import PRUNABLE_TYPES, Constraints, allows
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import (
    LIST_BUCKETING_DEFAULT_DIR,
    base_dir_name,
    list_bucketing_dir,
    unescape_partition_value,
)
from lakectl.table.listing import FileEntry
from lakectl.table.log import CommitRecord, Operation
from lakectl.table.metadata import TableMetadata

MAX_SKEWED_VALUES = 1000
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SUPPORTED_TYPES = PRUNABLE_TYPES
OPERATION = Operation.LIST_BUCKET
INFO_KEY = "list_bucketing"
# Subdirectory numbers in a split write: 0.. skewed values, then these two.
DEFAULT_SUBDIR = -1
NO_SUBDIR = -2


@dataclass(frozen=True)
class ListBucketing:
    """One partition's list-bucketing mapping: skewed columns and their skewed value tuples.

    Values are canonical texts (Spark's ``CAST(v AS STRING)``), one per column.
    """

    columns: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]

    @property
    def default_dir(self) -> str:
        return list_bucketing_dir(self.columns, None)

    def dir_of(self, values: tuple[str, ...]) -> str:
        return list_bucketing_dir(self.columns, values)

    def subdir_names(self) -> dict[int, str]:
        """Directory number -> directory, as the writer numbers them."""
        names = {i: self.dir_of(v) for i, v in enumerate(self.values)}
        names[DEFAULT_SUBDIR] = self.default_dir
        return names

    def describe(self) -> str:
        keys = ", ".join(v[0] if len(v) == 1 else "(" + ", ".join(v) + ")" for v in self.values[:8])
        more = f", ... ({len(self.values)} in all)" if len(self.values) > 8 else ""
        return f"{', '.join(self.columns)}: {keys}{more} + default"

    def to_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "values": [list(v) for v in self.values]}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ListBucketing:
        return ListBucketing(
            tuple(data["columns"]), tuple(tuple(str(x) for x in v) for v in data["values"])
        )


# --- the mapping in the log -------------------------------------------------------------------


def layouts_by_dir(records: Iterable[CommitRecord]) -> dict[str, ListBucketing]:
    """Every base directory (relative path) written split, with its mapping."""
    out: dict[str, ListBucketing] = {}
    for record in records:
        for rel, data in (record.info.get(INFO_KEY) or {}).items():
            if data:
                out[rel] = ListBucketing.from_json(data)
    return out


def layout_of(
    plan: PartitionReadPlan, layouts: Mapping[str, ListBucketing]
) -> ListBucketing | None:
    """The mapping of the base a reader uses in this partition (``None``: plain layout)."""
    return layouts.get(plan.base.relative) if plan.base is not None else None


# --- validation ---------------------------------------------------------------------------------


def validate_columns(
    meta: TableMetadata, columns: Sequence[str], *, for_list_bucketing: bool = True
) -> tuple[str, ...]:
    """The skewed columns as the schema spells them; refuses what list bucketing cannot do
    (``for_list_bucketing=False``: only what measuring skew cannot do)."""
    if not columns:
        raise UsageError("give the skewed column(s) with --column")
    if for_list_bucketing and meta.buckets:
        raise UsageError(
            f"the table is bucketed (--buckets {meta.buckets}): list bucketing cannot be combined "
            "with bucketing (Hive's rule), a row's file would be chosen both by its key's hash "
            "and by its value",
            hint="list-bucket a table created without --buckets",
        )
    out: list[str] = []
    for name in columns:
        col = meta.schema.find(name)
        if col is None:
            raise UnknownColumnError(
                f"--column {name!r} is not a column of the table "
                f"(columns: {', '.join(meta.schema.names)})"
            )
        if col.name in meta.partition_by:
            raise UsageError(
                f"--column {col.name!r} is a partition column: every partition already holds one "
                "value of it; choose a data column"
            )
        if for_list_bucketing and col.type not in SUPPORTED_TYPES:
            raise UsageError(
                f"--column {col.name!r} has type {col.type}: list bucketing needs a column of type "
                f"{', '.join(sorted(SUPPORTED_TYPES))} (values must have one exact text to name "
                "a directory)"
            )
        if col.name in out:
            raise UsageError(f"--column {col.name!r} is given twice")
        out.append(col.name)
    return tuple(out)


def validate_partition(plan: PartitionReadPlan) -> None:
    """Hive's rule: a partition value must not be the default list-bucketing directory name."""
    if any(v == LIST_BUCKETING_DEFAULT_DIR for v in plan.values):
        raise UsageError(
            f"partition {plan.relative}: a partition value may not be "
            f"{LIST_BUCKETING_DEFAULT_DIR} (the name of list bucketing's default directory)"
        )


def parse_keys(
    text: str, columns: tuple[str, ...], types: Sequence[str]
) -> tuple[tuple[str, ...], ...]:
    """``--keys 6,20,30`` (one column) or ``--keys "(10,'a'),(20,'c')"`` (several) -> value tuples.

    A bare word is taken as a string (``--keys US,DE``); numbers for integer columns, quoted
    strings or bare words for string columns, ``'yyyy-MM-dd'`` for dates, true/false.
    """
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from lakectl.expr.parse import parse_expression

    try:
        tree = parse_expression(f"({text})")
    except (SqlglotError, ValueError) as exc:
        raise UsageError(f"--keys {text!r}: not a list of values ({exc})") from exc
    items = tree.expressions if isinstance(tree, exp.Tuple) else [tree.this]
    keys: list[tuple[str, ...]] = []
    for item in items:
        parts = item.expressions if isinstance(item, exp.Tuple) else [item]
        if isinstance(item, exp.Paren):
            parts = [item.this]
        if len(parts) != len(columns):
            raise UsageError(
                f"--keys {text!r}: {item.sql()} has {len(parts)} value(s) for "
                f"{len(columns)} column(s) ({', '.join(columns)}); write several columns' keys "
                "as tuples: --keys \"(10,'a'),(20,'b')\""
            )
        values = []
        for part, col, col_type in zip(parts, columns, types, strict=True):
            if isinstance(part, exp.Column) and col_type == "string":
                part = exp.Literal.string(part.name)
            value = _key_text(part, col_type)
            if value is None or value == "":
                raise UsageError(
                    f"--keys {text!r}: {part.sql()} is not a {col_type} value for column {col!r}"
                    + (
                        " (NULL and empty values go to the default directory)"
                        if value == ""
                        else ""
                    )
                )
            values.append(value)
        keys.append(tuple(values))
    return check_keys(keys, columns)


def _key_text(node: Any, column_type: str) -> str | None:
    """The canonical text of one ``--keys`` value (a parsed literal) for a column of
    ``column_type``; ``None`` when it is not a value of that type written plainly (a string
    for an integer column, NULL, an expression)."""
    import datetime as dt

    from sqlglot import exp

    negative = False
    if isinstance(node, exp.Neg):
        node, negative = node.this, True
    if isinstance(node, exp.Paren):
        return None if negative else _key_text(node.this, column_type)
    if column_type in ("tinyint", "smallint", "int", "bigint"):
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            return str(-int(node.this) if negative else int(node.this))
        return None
    if negative:
        return None
    if column_type == "string":
        return node.this if isinstance(node, exp.Literal) and node.is_string else None
    if column_type == "date":
        if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DATE:
            node = node.this
        if isinstance(node, exp.Literal) and node.is_string and _ISO_DATE.match(node.this):
            try:
                return dt.date.fromisoformat(node.this).isoformat()
            except ValueError:
                return None
        return None
    if column_type == "boolean" and isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return None


def check_keys(
    keys: Sequence[tuple[str, ...]], columns: tuple[str, ...]
) -> tuple[tuple[str, ...], ...]:
    """Distinct, bounded in number; returned in the given order."""
    if not keys:
        raise UsageError("--keys: give at least one skewed value")
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise UsageError(f"--keys: value {', '.join(dup)} is given twice")
    if len(keys) > MAX_SKEWED_VALUES:
        raise UsageError(
            f"--keys: {len(keys)} skewed values for {', '.join(columns)}; at most "
            f"{MAX_SKEWED_VALUES} (each is a directory: list bucketing pays off for a few heavy "
            "values only)"
        )
    return tuple(keys)


# --- recommendation ------------------------------------------------------------------------------


ValueTuple = tuple[str | None, ...]
"""The values of the skew columns in one row, as Spark's ``CAST(v AS STRING)`` (None: NULL)."""


def heaviest(groups: Sequence[tuple[ValueTuple, int]], top: int) -> list[tuple[ValueTuple, int]]:
    """The ``top`` value tuples of one partition with the most rows, heaviest first; ties are
    broken by the values' text, NULL first, so every engine ranks the same counts alike."""
    import heapq

    return heapq.nsmallest(
        top, groups, key=lambda g: (-g[1], [(v is not None, v or "") for v in g[0]])
    )


def recommend(
    counts: Sequence[tuple[tuple[str | None, ...], int]],
    total: int,
    min_share: float,
    max_values: int,
) -> tuple[tuple[str, ...], ...]:
    """The values worth a directory: share of rows >= ``min_share``, heaviest first, at most
    ``max_values``. NULL and empty values never get one (they belong to the default directory).
    """
    if total <= 0:
        return ()
    ranked = sorted(counts, key=lambda c: (-c[1], [v or "" for v in c[0]]))
    out: list[tuple[str, ...]] = []
    for values, count in ranked:
        if len(out) >= max_values or count / total < min_share:
            break
        if any(v is None or v == "" for v in values):
            continue
        out.append(tuple(v for v in values if v is not None))
    return tuple(out)


# --- rewrites -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionDecision:
    """What ``list-bucket`` does to one partition: a rewrite (``compaction``) or why not."""

    relative: str
    current: ListBucketing | None
    wanted: ListBucketing | None
    compaction: PartitionCompaction | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        c = self.compaction
        return {
            "partition": self.relative,
            "rewrite": c is not None,
            "reason": self.reason,
            "before": self.current.to_json() if self.current else None,
            "after": self.wanted.to_json() if self.wanted else None,
            "inputs": [d.relative for d in c.inputs] if c else [],
            "output": c.output_path(c.output_base) if c and c.output_base else None,
        }


def decide_rewrite(
    plan: PartitionReadPlan,
    current: ListBucketing | None,
    wanted: ListBucketing | None,
    *,
    lowest_open: int | None,
    visibility_txn: int,
) -> PartitionDecision:
    """Rewrite ``plan``'s partition into a base split by ``wanted`` (``None``: plain).

    Like a major compaction: the base and every delta below the lowest open write id are folded
    into ``base_<top>_v<visibility_txn>``, rows keep their identity, newer deltas stay. Nothing
    to do when the partition is empty or already has the wanted layout.
    """

    def below(d: Any) -> bool:
        return lowest_open is None or d.acid.max_write_id < lowest_open

    name = plan.relative
    deltas = tuple(d for d in plan.deltas if below(d))
    deletes = tuple(d for d in plan.delete_deltas if below(d))
    waiting = tuple(d for d in (*plan.deltas, *plan.delete_deltas) if not below(d))
    base = plan.base
    if base is not None and not below(base):
        return PartitionDecision(
            name,
            current,
            wanted,
            None,
            f"base {base.acid.name} is above open write id {lowest_open}",
        )
    if base is None and not deltas:
        return PartitionDecision(name, current, wanted, None, "empty partition: nothing to rewrite")
    if current == wanted:
        # Idempotent: later deltas are read whole; a major compaction folds them in, split alike.
        what = f"already list-bucketed by {wanted.describe()}" if wanted else "not list-bucketed"
        return PartitionDecision(name, current, wanted, None, what)
    top = max(
        [base.acid.max_write_id if base else 0, *(d.acid.max_write_id for d in deltas + deletes)]
    )
    low = base.acid.max_write_id if base else min(d.acid.min_write_id for d in deltas + deletes)
    what = f"split by {wanted.describe()}" if wanted else "rewrite plain (list bucketing off)"
    compaction = PartitionCompaction(
        name,
        MAJOR,
        what,
        base,
        deltas,
        deletes,
        waiting,
        output_base=base_dir_name(top, visibility_txn),
        min_write_id=low,
        max_write_id=top,
    )
    return PartitionDecision(name, current, wanted, compaction, what)


def subdir_names(
    partitions: Iterable[str], layouts: Mapping[str, ListBucketing]
) -> dict[tuple[str, int], str]:
    """(partition, directory number) -> list-bucketing directory for a split write;
    partitions without a mapping write their files directly into the base (:data:`NO_SUBDIR`)."""
    out: dict[tuple[str, int], str] = {}
    for partition in partitions:
        out[(partition, NO_SUBDIR)] = ""
        layout = layouts.get(partition)
        if layout is not None:
            out.update({(partition, n): d for n, d in layout.subdir_names().items()})
    return out


# --- pruning --------------------------------------------------------------------------------------


def _subdir_values(subdir: str, columns: tuple[str, ...]) -> tuple[str | None, ...] | None:
    """Values named by ``x=6/y=a`` (``None`` for a default segment); ``None`` if not a match."""
    parts = subdir.split("/")
    if len(parts) != len(columns):
        return None
    values: list[str | None] = []
    for part, col in zip(parts, columns, strict=True):
        if part == LIST_BUCKETING_DEFAULT_DIR:
            values.append(None)
            continue
        key, sep, raw = part.partition("=")
        if not sep or key.lower() != col.lower():
            return None
        values.append(unescape_partition_value(raw))
    return tuple(values)


def file_may_match(
    entry: FileEntry,
    layout: ListBucketing | None,
    constraints: Constraints,
    canonical: Mapping[str, Any],
) -> bool:
    """Can a row of this base file pass ``constraints``? ``canonical`` maps a skewed column to a
    function turning directory text into canonical text (``None``: undecidable).

    A file outside any list-bucketing directory, or in one the mapping does not explain, is
    always read. A skewed directory holds only its values; the default directory holds only
    value tuples *not* in the mapping, so it is skipped only when every tuple the predicate
    allows is a skewed one.
    """
    if not entry.subdir or layout is None or not constraints:
        return True
    named = _subdir_values(entry.subdir, layout.columns)
    if named is None:
        return True
    if all(v is None for v in named):
        return not _only_skewed(layout, constraints)
    if any(v is None for v in named):
        return True
    for col, text in zip(layout.columns, named, strict=True):
        value = canonical[col](text)
        if value is not None and not allows(constraints, col, value):
            return False
    return True


def _only_skewed(layout: ListBucketing, constraints: Constraints, limit: int = 10_000) -> bool:
    """Does every value tuple the constraints allow have its own directory?"""
    sets = [constraints.get(c.lower()) for c in layout.columns]
    if any(s is None for s in sets):
        return False
    size = 1
    for s in sets:
        size *= len(s or ())
    if size > limit:
        return False
    skewed = set(layout.values)
    return all(combo in skewed for combo in itertools.product(*[sorted(s or ()) for s in sets]))


def kept_layouts(
    records: Iterable[CommitRecord], compactions: Iterable[PartitionCompaction]
) -> dict[str, ListBucketing]:
    """Partition -> mapping for major compactions of list-bucketed bases: the new base is split
    the same way (the layout survives compaction)."""
    layouts = layouts_by_dir(records)
    return {
        p.relative: layouts[p.base.relative]
        for p in compactions
        if p.kind == MAJOR and p.base is not None and p.base.relative in layouts
    }


def layout_info(
    compactions: Iterable[PartitionCompaction], layouts: Mapping[str, ListBucketing | None]
) -> dict[str, Any]:
    """The log record's ``info.list_bucketing``: new base path -> mapping (``None``: plain)."""
    return {
        p.output_path(p.output_base): (
            layouts[p.relative].to_json() if layouts.get(p.relative) else None  # type: ignore[union-attr]
        )
        for p in compactions
        if p.output_base and p.relative in layouts
    }
