"""The Type 7 statements a read applies: those a table state holds active, read back from its
log and checked again (or, for a table without a log, its hand-written ``.updates`` file)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from lakectl.errors import BadInputError
from lakectl.table.log import ALWAYS, CommitRecord, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import UPDATES_FILE, TableStore
from lakectl.times import format_millis, millis, utc
from lakectl.updates.limits import (
    BudgetCheck,
    CostCheck,
    ReadBudget,
    StatementLimits,
    check_costs,
    check_statement_count,
    check_tree_shape,
)
from lakectl.updates.statements import Statement, parse_updates_text, statements_effective_at
from lakectl.updates.stored_form import decode_tree
from lakectl.updates.validate import check_stored_statement, remember_parse


@dataclass(frozen=True)
class InstalledStatement:
    """An active statement with where it came from: install version and position in it.

    ``problem`` says why a statement read back from the log is refused (a damaged or hand-edited
    record); only reads that need it fail (:func:`require_usable`).
    """

    statement: Statement
    version: int | None
    installed_at: datetime
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
            "installed_at": format_millis(millis(self.installed_at)),
            "problem": self.problem,
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
        if record.operation in (Operation.MATERIALIZE, Operation.RESTORE):
            for version, index in record.info.get("retired", []):
                active.discard((version, index))
            for version, index in record.info.get("reactivated", []):
                if (version, index) in installed:
                    active.add((version, index))
            continue
        if record.operation != Operation.APPLY_UPDATES:
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
