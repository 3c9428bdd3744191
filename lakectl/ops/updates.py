"""``lakectl apply-updates`` and ``lakectl updates``: Type 7 statements as transactions.

The log is the source of truth: an ``apply-updates`` commit carries its statements. The table's
``.updates`` file (statements with ``-- time=`` directives) is rewritten from the log after each
install so people and other tools can read it; a table without a lakectl log (a plain or
Hive-written directory) has its hand-written ``.updates`` read instead. Statements are checked when
installed and again whenever they are read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.errors import BadInputError, TableNotFoundError
from lakectl.ops.context import Context
from lakectl.ops.results import Listing
from lakectl.scan.statements import InstalledStatement, check_reader_costs, installed_statements
from lakectl.table.log import Operation
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import UPDATES_FILE, TableStore
from lakectl.updates.limits import StatementLimits, check_file_size
from lakectl.updates.statements import Statement, parse_updates_text
from lakectl.updates.stored_form import encode_tree
from lakectl.updates.validate import parsed_statement, validate_statement

OPERATION = Operation.APPLY_UPDATES
MATERIALIZE_OPERATION = Operation.MATERIALIZE


def _to_json(stmt: Statement) -> dict[str, Any]:
    """A statement as an ``apply-updates`` record holds it: its text and, when it has one, the
    stored form of its parse (readers rebuild it instead of parsing the text again)."""
    data: dict[str, Any] = {
        "effective_ms": stmt.effective_ms,
        "sql": stmt.sql,
        "kind": stmt.kind,
        "table": stmt.table,
        "line": stmt.line,
        "source": stmt.source,
    }
    form = encode_tree(parsed_statement(stmt.sql))
    if form is not None:
        data["tree"] = form
    return data


@dataclass(frozen=True)
class InstallResult:
    table: str
    version: int
    installed: int
    active_statements: int
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "version": self.version,
            "installed": self.installed,
            "active_statements": self.active_statements,
            "warnings": list(self.warnings),
        }


def install(
    ctx: Context, table_ref: str | None, file: str, timezone: str | None = None
) -> InstallResult:
    """Validate every statement of ``file`` and append them to the table's statements atomically."""
    from lakectl.storage.fs import storage_for
    from lakectl.storage.inputs import require_input_file

    store = ctx.table(table_ref)
    store.require_log()
    state = store.read_state()
    schema = state.metadata.schema
    storage, path = storage_for(file)
    if not storage.exists(path):
        raise TableNotFoundError(f"updates file {file} does not exist")
    require_input_file(storage, path, "updates file", file)
    limits = StatementLimits.of(state.metadata)
    check_file_size(storage.du(path), file, limits)
    try:
        text = storage.read_text(path)
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{file}: not a UTF-8 text file") from exc
    parsed = parse_updates_text(text, file, timezone, schema)
    if not parsed.statements:
        raise BadInputError(f"{file}: no statements found; nothing was installed")
    check_installable(installed_statements(state), parsed.statements, state.metadata)
    with store.transaction(OPERATION, read=state) as txn:
        write_id = txn.version
        txn.commit(
            counts={"statements": len(parsed.statements)},
            info={"source": file, "statements": [_to_json(s) for s in parsed.statements]},
        )
    new_state = store.read_state()
    active = installed_statements(new_state, check=False)  # checked above; only the texts
    write_updates_file(store, [i.statement for i in active])
    return InstallResult(
        store.name or store.url, write_id, len(parsed.statements), len(active), parsed.warnings
    )


def check_installable(
    active: list[InstalledStatement], new: tuple[Statement, ...], meta: TableMetadata
) -> None:
    """Refuse ``new`` statements that a reader could not apply after the ``active`` ones: over the
    cost limits (every later read would then fail), or refused by the Spark compiler."""
    from lakectl.spark.statement_compile import check_compilable

    usable = [e.statement for e in active if e.problem is None]
    for stmt in new:
        validate_statement(stmt, meta.schema)
    check_reader_costs(
        [*usable, *new],
        meta,
        [e.origin for e in active if e.problem is None] + [f"{s.source}:{s.line}" for s in new],
    )
    check_compilable(list(new), meta.schema)


def render_updates_file(statements: list[Statement]) -> str:
    """The ``.updates`` format: statements with ``-- time=`` directives where the time changes."""
    lines = ["-- Generated by lakectl from the table's log; edits here are not read back."]
    current: int | None = 0
    for stmt in statements:
        if stmt.effective_ms != current:
            lines.append(f"-- time={stmt.effective_ms}")
            current = stmt.effective_ms
        lines.append(stmt.sql + ";")
    return "\n".join(lines) + "\n"


def write_updates_file(store: TableStore, statements: list[Statement]) -> None:
    store.storage.write_bytes(store.path(UPDATES_FILE), render_updates_file(statements).encode())


class Statements(Listing[InstalledStatement]):
    """The active statements ``updates`` lists (``statements``), in install order."""

    items_key = "statements"
    columns = (
        "effective",
        "sql",
        "kind",
        "source",
        "line",
        "version",
        "index",
        "installed_at",
        "problem",
    )

    @property
    def statements(self) -> list[InstalledStatement]:
        return list(self)


def list_installed(store: TableStore) -> Statements:
    """``lakectl updates``: the installed statements (no Spark)."""
    return Statements(installed_statements(store.read_state()), table=store.name or store.url)
