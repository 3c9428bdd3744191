"""``lakectl apply-updates`` and ``lakectl updates``: Type 7 statements as transactions.

The log is the source of truth: an ``apply-updates`` commit carries its statements. The table's
``.updates`` file (statements with ``-- time=`` directives) is rewritten from the log after each
install so people and other tools can read it; a table without a lakectl log (a plain or
Hive-written directory) has its hand-written ``.updates`` read instead. Statements are checked when
installed and again whenever they are read back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from lakectl.errors import BadInputError, TableNotFoundError
from lakectl.ops.context import Context
from lakectl.ops.results import Listing, iso_time, utc
from lakectl.table.log import ALWAYS, CommitRecord, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import UPDATES_FILE, TableStore
from lakectl.table.transaction import WriteTransaction
from lakectl.updates.limits import (
    BudgetCheck,
    CostCheck,
    ReadBudget,
    StatementLimits,
    check_costs,
    check_file_size,
    check_statement_count,
    check_tree_shape,
)
from lakectl.updates.statements import Statement, parse_updates_text, statements_effective_at
from lakectl.updates.stored_form import decode_tree, encode_tree
from lakectl.updates.times import format_millis
from lakectl.updates.validate import (
    check_stored_statement,
    parsed_statement,
    remember_parse,
    validate_statement,
)

OPERATION = Operation.APPLY_UPDATES
MATERIALIZE_OPERATION = Operation.MATERIALIZE


@dataclass(frozen=True)
class InstalledStatement:
    """An active statement with where it came from: install version and position in it.

    ``problem`` says why a statement read back from the log is refused (a damaged or hand-edited
    record); only reads that need it fail (:func:`require_usable`).
    """

    statement: Statement
    version: int | None
    installed_at: dt.datetime
    index: int = 0
    problem: str | None = None
    nodes: int | None = None  # expression nodes, once checked (see check_tree_shape)

    @property
    def origin(self) -> str:
        """How messages name the statement: by the log entry that holds it."""
        return (
            f"statement {self.index + 1} installed by version {self.version} "
            f"(from {self.statement.source}:{self.statement.line})"
        )

    @property
    def effective(self) -> str:
        """When the statement takes effect, as ISO-8601 UTC."""
        return format_millis(self.statement.effective_ms)

    @property
    def sql(self) -> str:
        return self.statement.sql

    @property
    def kind(self) -> str:
        return self.statement.kind

    @property
    def source(self) -> str:
        """The statement file it was installed from."""
        return self.statement.source

    @property
    def line(self) -> int:
        """Its line in that file."""
        return self.statement.line

    def to_dict(self) -> dict[str, Any]:
        return {
            "effective": self.effective,
            "sql": self.sql,
            "kind": self.kind,
            "source": self.source,
            "line": self.line,
            "version": self.version,
            "index": self.index,
            "installed_at": iso_time(self.installed_at),
            "problem": self.problem,
        }


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


def _from_json(data: dict[str, Any]) -> Statement:
    return Statement(
        int(data["effective_ms"]),
        str(data["sql"]),
        str(data["kind"]),
        str(data["table"]),
        int(data["line"]),
        str(data.get("source", "<log>")),
    )


def _read_installed(
    data: object,
    record: CommitRecord,
    index: int,
    meta: TableMetadata,
    limits: StatementLimits | None,
    costs: bool = True,
) -> InstalledStatement:
    """One statement of an ``apply-updates`` record, checked again (unless ``limits`` is
    None); a refusal is kept as its ``problem`` (with an effective time of "always" when the
    record cannot say). Without ``costs``, its cost limits are left to the reader, which
    checks them for the statements it applies, in order (:func:`require_usable`)."""
    try:
        if not isinstance(data, dict):
            raise TypeError("not an object")
        stmt = _from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        damaged = Statement(ALWAYS, "", "update", "", 0, "<damaged log record>")
        entry = InstalledStatement(damaged, record.write_id, utc(record.committed_at), index)
        return replace(entry, problem=f"{entry.origin}: damaged statement record ({exc})")
    entry = InstalledStatement(stmt, record.write_id, utc(record.committed_at), index)
    if limits is None:
        return entry
    _reuse_stored_form(stmt.sql, data.get("tree"))
    try:
        checked = check_stored_statement(stmt, meta.schema, entry.origin, canonical=True)
        nodes = check_tree_shape(checked, limits)
        if costs:
            check_costs([checked], meta.schema, limits)  # alone; readers check the sequence
    except BadInputError as exc:
        return replace(entry, problem=exc.message)
    return replace(entry, nodes=nodes)


def _reuse_stored_form(sql: str, form: object) -> None:
    """Rebuild the parse of ``sql`` from its stored form, when the record has one that is
    sound and renders to ``sql``; otherwise the check parses the text (same result, slower)."""
    if form is None:
        return
    tree = decode_tree(form)
    if tree is not None:
        remember_parse(sql, tree)


def installed_statements(
    state: TableState, *, check: bool = True, costs: bool = True
) -> list[InstalledStatement]:
    """The active statements of ``state`` in install (log) order, checked again against the schema.

    A statement stops being active when a ``materialize`` record of the same state retires it
    (its effect is then in the data), or a ``restore`` record goes back to before its install; a
    ``restore`` to before a ``materialize`` makes the statements it retired active again.
    Deciding this from ``state``'s own records means a read of an earlier state (``--as-of``
    before the materialize took effect, ``--known-at`` before it committed) still applies the
    statements to the rows as they were.

    Without ``check``, the statements are not checked again (``problem`` stays unset): for
    writers that only copy their texts, such as the ``.updates`` file beside the data. Without
    ``costs``, each statement's cost limits are not checked alone: for a reader, which checks
    them for the statements it applies, in order (:func:`require_usable`).
    """
    limits = StatementLimits.of(state.metadata)
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
            installed[(record.write_id, index)] = _read_installed(
                data, record, index, state.metadata, limits if check else None, costs
            )
            active.add((record.write_id, index))
    return [entry for key, entry in installed.items() if key in active]


_UNUSABLE_HINT = (
    "read before the statement's effective time or with --raw; `lakectl updates TABLE` lists "
    "the statements and what is wrong with them"
)


def require_usable(
    entries: list[InstalledStatement], meta: TableMetadata, *, shapes_checked: bool = False
) -> list[Statement]:
    """The statements of ``entries`` for a reader that applies them all, in order: refused
    records and statements over the table's cost limits are errors naming the statement.

    With ``shapes_checked``, ``entries`` were read under ``meta``'s schema and limits, so their
    node counts are reused, and their costs may not have been checked alone
    (``installed_statements(costs=False)``): the check of the sequence covers them (a statement
    over a limit alone is over it after those before it too), and when it fails, the first
    statement that fails alone is named as that check would have."""
    for entry in entries:
        if entry.problem is not None:
            raise BadInputError(entry.problem, hint=_UNUSABLE_HINT)
    statements = [e.statement for e in entries]
    origins = [e.origin for e in entries]
    nodes = [e.nodes for e in entries] if shapes_checked else None
    try:
        check_reader_costs(statements, meta, origins, nodes)
    except BadInputError:
        if shapes_checked:
            _require_costs_alone(entries, meta)
        raise
    return statements


def _require_costs_alone(entries: list[InstalledStatement], meta: TableMetadata) -> None:
    """Raise, as :func:`require_usable` does for a refused record, for the first of ``entries``
    over the table's cost limits on its own."""
    limits = StatementLimits.of(meta)
    for entry in entries:
        checked = check_stored_statement(entry.statement, meta.schema, entry.origin, True)
        try:
            check_costs([checked], meta.schema, limits)
        except BadInputError as exc:
            raise BadInputError(exc.message, hint=_UNUSABLE_HINT) from None


def check_reader_costs(
    statements: list[Statement],
    meta: TableMetadata,
    origins: list[str] | None = None,
    nodes: Sequence[int | None] | None = None,
) -> None:
    """Check ``statements`` (as a reader applies them, in order) against the table's
    ``updates.max.*`` limits (each at most its ceiling) and, together, against the reader's
    budget (:class:`~lakectl.updates.limits.ReadBudget`). ``nodes`` are the statements'
    expression node counts when their shapes were already checked under these limits."""
    limits = StatementLimits.of(meta)
    check_statement_count(len(statements), "the table's statements", limits)
    costs = CostCheck(meta.schema, limits)
    budget = BudgetCheck(ReadBudget.of_reader())
    for position, stmt in enumerate(statements):
        origin = origins[position] if origins else None
        one = check_stored_statement(stmt, meta.schema, origin, canonical=origin is not None)
        known = nodes[position] if nodes else None
        count = check_tree_shape(one, limits) if known is None else known
        costs.add(one)
        budget.add(one, len(stmt.sql), count, costs)


def statement_keys(entries: list[InstalledStatement]) -> list[tuple[int | None, int]]:
    """How records name installed statements: (install version, position in that install)."""
    return [(e.version, e.index) for e in entries]


def statements_for_read(
    store: TableStore, state: TableState | None, meta: TableMetadata, as_of: int
) -> list[Statement]:
    """The statements a read as of ``as_of`` applies, in order, checked against the limits.

    Statements effective later are not needed, so a refused one among them does not fail it.
    """
    if state is not None:
        # Each statement's limits are checked once: in order, with those before it.
        same = state.metadata.schema == meta.schema and StatementLimits.of(
            state.metadata
        ) == StatementLimits.of(meta)
        active = installed_statements(state, costs=not same)
        entries = [e for e in active if e.statement.effective_ms <= as_of]
        return require_usable(entries, meta, shapes_checked=same)
    path = store.path(UPDATES_FILE)
    if not store.storage.exists(path):
        return []
    parsed = parse_updates_text(
        store.storage.read_text(path), store.url + "/" + UPDATES_FILE, None, meta.schema
    )
    statements = statements_effective_at(parsed.statements, as_of)
    check_reader_costs(statements, meta)
    return statements


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
    from lakectl.spark.statement_compile import compile_to_sql

    usable = [e.statement for e in active if e.problem is None]
    for stmt in new:
        validate_statement(stmt, meta.schema)
    check_reader_costs(
        [*usable, *new],
        meta,
        [e.origin for e in active if e.problem is None] + [f"{s.source}:{s.line}" for s in new],
    )
    compile_to_sql(list(new), meta.schema)


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
