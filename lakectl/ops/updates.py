"""``lakectl apply-updates`` and ``lakectl updates``: Type 7 statements as transactions.

The log is the source of truth: an ``apply-updates`` commit carries its statements. The table's
``.updates`` file (seed 000's format, with ``-- time=`` directives) is rewritten from the log after
each install so people and other tools can read it; a table without a lakectl log (a plain or
Hive-written directory) has its hand-written ``.updates`` read instead. Statements are checked when
installed and again whenever they are read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.errors import BadInputError, TableNotFoundError
from lakectl.ops.context import Context
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.schema import Schema
from lakectl.table.store import UPDATES_FILE, TableStore
from lakectl.table.transaction import WriteTransaction
from lakectl.updates.statements import Statement, parse_updates_text
from lakectl.updates.times import format_millis
from lakectl.updates.validate import validate_statement

OPERATION = Operation.APPLY_UPDATES
MATERIALIZE_OPERATION = Operation.MATERIALIZE


@dataclass(frozen=True)
class InstalledStatement:
    """An active statement with where it came from: install version and position in it."""

    statement: Statement
    version: int | None
    installed_at: int
    index: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "effective_ms": self.statement.effective_ms,
            "effective": format_millis(self.statement.effective_ms),
            "sql": self.statement.sql,
            "kind": self.statement.kind,
            "source": self.statement.source,
            "line": self.statement.line,
            "version": self.version,
            "index": self.index,
            "installed_at": self.installed_at,
        }


def _to_json(stmt: Statement) -> dict[str, Any]:
    return {
        "effective_ms": stmt.effective_ms,
        "sql": stmt.sql,
        "kind": stmt.kind,
        "table": stmt.table,
        "line": stmt.line,
        "source": stmt.source,
    }


def _from_json(data: dict[str, Any]) -> Statement:
    return Statement(
        int(data["effective_ms"]),
        str(data["sql"]),
        str(data["kind"]),
        str(data["table"]),
        int(data["line"]),
        str(data.get("source", "<log>")),
    )


def installed_statements(state: TableState) -> list[InstalledStatement]:
    """The active statements of ``state`` in install (log) order, checked again against the schema.

    A statement stops being active when a ``materialize`` record of the same state retires it
    (its effect is then in the data), or a ``restore`` record goes back to before its install; a
    ``restore`` to before a ``materialize`` makes the statements it retired active again.
    Deciding this from ``state``'s own records means a read of an earlier state (``--as-of``
    before the materialize took effect, ``--known-at`` before it committed) still applies the
    statements to the rows as they were.
    """
    schema = state.metadata.schema
    installed: dict[tuple[int | None, int], InstalledStatement] = {}
    active: set[tuple[int | None, int]] = set()
    for record in state.records:
        if record.operation in (MATERIALIZE_OPERATION, Operation.RESTORE):
            for version, index in record.info.get("retired", []):
                active.discard((version, index))
            for version, index in record.info.get("reactivated", []):
                if (version, index) in installed:
                    active.add((version, index))
            continue
        if record.operation != OPERATION:
            continue
        for index, data in enumerate(record.info.get("statements", [])):
            stmt = _from_json(data)
            validate_statement(stmt, schema)
            installed[(record.write_id, index)] = InstalledStatement(
                stmt, record.write_id, record.committed_at, index
            )
            active.add((record.write_id, index))
    return [entry for key, entry in installed.items() if key in active]


def statement_keys(entries: list[InstalledStatement]) -> list[tuple[int | None, int]]:
    """How records name installed statements: (install version, position in that install)."""
    return [(e.version, e.index) for e in entries]


def statements_for_read(
    store: TableStore, state: TableState | None, schema: Schema
) -> list[Statement]:
    """The statements a read applies (before filtering by effective time)."""
    if state is not None:
        return [i.statement for i in installed_statements(state)]
    path = store.path(UPDATES_FILE)
    if not store.storage.exists(path):
        return []
    parsed = parse_updates_text(
        store.storage.read_text(path), store.url + "/" + UPDATES_FILE, None, schema
    )
    return list(parsed.statements)


@dataclass(frozen=True)
class InstallResult:
    table: str
    version: int
    installed: int
    total_active: int
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "version": self.version,
            "installed": self.installed,
            "active_statements": self.total_active,
            "warnings": list(self.warnings),
        }


def install(
    ctx: Context, table_ref: str | None, file: str, timezone: str | None = None
) -> InstallResult:
    """Validate every statement of ``file`` and append them to the table's statements atomically."""
    from lakectl.storage.fs import storage_for

    store = ctx.table(table_ref)
    store.require_log()
    state = store.read_state()
    schema = state.metadata.schema
    storage, path = storage_for(file)
    if not storage.exists(path):
        raise TableNotFoundError(f"updates file {file} does not exist")
    try:
        text = storage.read_text(path)
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{file}: not a UTF-8 text file") from exc
    parsed = parse_updates_text(text, file, timezone, schema)
    if not parsed.statements:
        raise BadInputError(f"{file}: no statements found; nothing was installed")
    for stmt in parsed.statements:
        validate_statement(stmt, schema)
    txn = WriteTransaction.begin(store, OPERATION)
    write_id = txn.write_id
    record = CommitRecord.draft(
        operation=OPERATION,
        write_id=write_id,
        read_seq=state.last_seq,
        counts={"statements": len(parsed.statements)},
        info={"source": file, "statements": [_to_json(s) for s in parsed.statements]},
    )
    try:
        txn.commit(record)
    except BaseException as exc:
        txn.abort(exc)
        raise
    new_state = store.read_state()
    active = installed_statements(new_state)
    write_updates_file(store, [i.statement for i in active])
    return InstallResult(
        store.name or store.url, write_id, len(parsed.statements), len(active), parsed.warnings
    )


def render_updates_file(statements: list[Statement]) -> str:
    """Seed 000's format: statements with ``-- time=`` directives where the time changes."""
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


def list_installed(store: TableStore) -> list[InstalledStatement]:
    """``lakectl updates``: the installed statements (no Spark)."""
    return installed_statements(store.read_state())
