"""``lakectl alter``: change a table's schema as one commit, without rewriting a file.

Columns are added at the end (as Hive's ``ADD COLUMNS``) and numeric columns widened; every change is checked first (:func:`lakectl.table.evolution.evolve`) and a bad one
writes nothing. Files written before keep their columns; readers map them to the new schema
by position (:mod:`lakectl.table.evolution`). Runs without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.table.evolution import SchemaChange, changed_columns, evolve
from lakectl.table.log import CommitRecord, Operation, TableState
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
    schema: Schema

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "log_seq": self.log_seq,
            "added": self.added,
            "widened": self.widened,
            "schema": self.schema.to_json(),
        }


def alter(store: TableStore, change: SchemaChange, source: str = "alter") -> AlterResult:
    """Check ``change`` against the table and commit the new schema (one log record)."""
    state = store.read_state()
    record, new_meta = alter_record(state, change, source)
    committed = store.commit(record)
    changes = changed_columns(state.metadata, new_meta)
    return AlterResult(
        store.name or store.url,
        committed.seq,
        changes["added"],
        changes["widened"],
        new_meta.schema,
    )


def alter_record(
    state: TableState, change: SchemaChange, source: str = "alter"
) -> tuple[CommitRecord, TableMetadata]:
    """The commit record of ``change`` on ``state`` (not committed) and the new metadata."""
    meta = state.metadata
    new_meta = evolve(meta, change)
    record = CommitRecord.draft(
        operation=OPERATION,
        read_seq=state.last_seq,
        metadata=new_meta,
        info={"source": source, **changed_columns(meta, new_meta)},
    )
    return record, new_meta


__all__ = ["AlterResult", "alter", "alter_record"]
