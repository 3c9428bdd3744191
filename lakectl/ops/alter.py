"""``lakectl alter``: change a table's schema as one commit, without rewriting a file.

Columns are added at the end (as Hive's ``ADD COLUMNS``), numeric columns widened and data
columns renamed; every change is checked first (:func:`lakectl.table.evolution.evolve`, then
:func:`check_renames` against what the log names columns in) and a bad one writes nothing.
Files written before keep their columns; readers map them to the new schema by position
(:mod:`lakectl.table.evolution`). Runs without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.errors import BadInputError, UsageError
from lakectl.planning.list_bucket_plan import ListBucketing, layouts_by_dir
from lakectl.scan.statements import installed_statements
from lakectl.table.evolution import SchemaChange, changed_columns, evolve, renamed_columns
from lakectl.table.layout import parse_acid_dir
from lakectl.table.log import Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Schema
from lakectl.table.store import TableStore

OPERATION = Operation.ALTER


@dataclass
class AlterResult:
    table: str
    log_seq: int
    added: list[str]
    widened: list[str]
    renamed: list[str]
    schema: Schema

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "log_seq": self.log_seq,
            "added": self.added,
            "widened": self.widened,
            "renamed": self.renamed,
            "schema": self.schema.to_json(),
        }


def alter(store: TableStore, change: SchemaChange, source: str = "alter") -> AlterResult:
    """Check ``change`` against the table and commit the new schema (one log record)."""
    state = store.read_state()
    new_meta, changes = evolved_metadata(state, change)
    with store.transaction(OPERATION, read=state) as txn:
        committed = txn.commit(metadata=new_meta, info={"source": source, **changes})
    return AlterResult(
        store.name or store.url,
        committed.seq,
        changes["added"],
        changes["widened"],
        changes["renamed"],
        new_meta.schema,
    )


def evolved_metadata(
    state: TableState, change: SchemaChange
) -> tuple[TableMetadata, dict[str, list[str]]]:
    """The metadata ``change`` gives ``state``'s table (checked, not committed) and the columns
    it adds, widens and renames."""
    from lakectl.expr.convert import default_value

    meta = state.metadata
    new_meta = evolve(meta, change)
    check_renames(state, new_meta)
    for column in new_meta.schema.columns:  # a default must be a value of its (new) type
        before = meta.schema.find(column.name)
        if column.default is not None and (before is None or before.type != column.type):
            default_value(column)
    return new_meta, changed_columns(meta, new_meta)


def check_renames(state: TableState, new_meta: TableMetadata) -> None:
    """Refuse renames of columns that the log names: an active Type 7 statement must still
    check against the new schema (it reads or sets columns by name), and no list-bucketing
    layout may use a renamed column (its directories are named ``column=value``)."""
    renamed = renamed_columns(state.metadata, new_meta)
    if not renamed:
        return
    lowered = {old.lower(): old for old in renamed}
    for rel, layout in sorted(_live_layouts(state).items()):
        for column in layout.columns:
            if column.lower() in lowered:
                raise UsageError(
                    f"--rename-column {lowered[column.lower()]!r}: the column is list-bucketed "
                    f"({rel} holds a directory per value of it), so it cannot be renamed",
                    hint="rewrite the partition plain first (`lakectl list-bucket TABLE --off`)",
                )
    from lakectl.updates.validate import check_stored_statement

    for entry in installed_statements(state):
        if entry.problem is not None:
            continue
        try:
            check_stored_statement(entry.statement, new_meta.schema, entry.origin, canonical=True)
        except BadInputError as exc:
            raise UsageError(
                f"--rename-column: {entry.origin} names a column by its old name, so the "
                f"rename would break it ({exc.message})",
                hint="materialize the table's statements first (`lakectl apply-updates "
                "--materialize`), then rename",
            ) from exc


def _live_layouts(state: TableState) -> dict[str, ListBucketing]:
    """The list-bucketing layouts of the bases no newer base of their partition replaced."""
    newest: dict[str, tuple[int, int]] = {}
    for record in state.records:
        for rel in record.added:
            parent, order = _base_order(rel)
            if order is not None:
                newest[parent] = max(newest.get(parent, order), order)
    live = {}
    for rel, layout in layouts_by_dir(state.records).items():
        parent, order = _base_order(rel)
        if order is not None and order >= newest.get(parent, order):
            live[rel] = layout
    return live


def _base_order(rel: str) -> tuple[str, tuple[int, int] | None]:
    """A directory's partition and, for a base, how it orders among the partition's bases
    (write id, then the visibility id a compaction's base carries)."""
    parent, _, name = rel.rpartition("/")
    acid = parse_acid_dir(name)
    if acid is None or not acid.is_base:
        return parent, None
    return parent, (acid.max_write_id, acid.visibility_txn or 0)


__all__ = ["AlterResult", "alter", "check_renames", "evolved_metadata"]
