"""``apply-updates --materialize`` in the Arrow engine: the retired statements folded into the
rows in the lakectl process (:mod:`lakectl.arrow.statement_fold`), the delete events and new
rows written by :func:`lakectl.arrow.acid_writer.write_changes`, and the same commit as the
Spark engine's (:mod:`lakectl.ops.materialize`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakectl.errors import UsageError
from lakectl.ops.updates import MATERIALIZE_OPERATION
from lakectl.scan.target import ReadTarget
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import TableStore
from lakectl.updates.statements import Statement


def arrow_problem(meta: TableMetadata, statements: Sequence[Statement]) -> str | None:
    """Why the Arrow engine cannot materialize ``statements`` into this table as Spark does
    (a column type its writer cannot write, a statement it cannot apply), or None."""
    from lakectl.arrow.acid_writer import unsupported_reason
    from lakectl.arrow.statements import compile_statements

    problem = unsupported_reason(meta)
    if problem is not None:
        return problem
    try:
        compile_statements(statements, meta.schema)
    except UsageError as exc:
        return exc.message
    return None


def fold_and_commit_arrow(
    store: TableStore,
    state: TableState,
    target: ReadTarget,
    statements: Sequence[Statement],
    effective_at: int,
    info: dict[str, Any],
) -> tuple[int, dict[str, int], tuple[str, ...]]:
    """Fold ``statements`` into the live rows of ``target`` (``state`` as read) and commit the
    changes with ``info`` as one transaction; returns its write id, counts and new
    directories."""
    from lakectl.arrow.acid_writer import write_transaction_changes
    from lakectl.arrow.partition_reader import MergeSpec
    from lakectl.arrow.statement_fold import fold_statements
    from lakectl.arrow.statements import compile_statements

    meta = target.metadata
    spec = MergeSpec.of_table(store.storage, meta, target.valid)
    compiled = compile_statements(statements, meta.schema)
    folded = fold_statements(spec, target.plans, compiled, meta)
    counts = {
        "rewritten": folded.updated,
        "deleted": folded.deleted,
        "retired": len(info["retired"]),
    }
    with store.transaction(MATERIALIZE_OPERATION, read=state) as txn:
        write_id = txn.version
        if folded.updated or folded.deleted:
            write_transaction_changes(txn, meta, folded.partitions())
        txn.commit(effective_at=effective_at, counts=counts, info=info)
    return write_id, counts, tuple(sorted(txn.added))
