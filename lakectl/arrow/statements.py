"""Type 7 statements applied to Arrow rows, with the semantics of
:mod:`lakectl.spark.statement_compile`: in order, each seeing the result of the ones before; an
UPDATE computes every SET value from the row as it was before it, cast to the column's type, and
changes the rows its WHERE is true for (NULL matches nothing); a DELETE drops them.

The statements are checked again (:func:`~lakectl.updates.validate.check_stored_statement`),
bound by the expression layer (:class:`lakectl.expr.bind.Binder`: the coercion rules of every
engine) and compiled with :mod:`lakectl.arrow.compile_expr`. What Arrow cannot evaluate with
Spark's result is refused, naming the statement and the construct: rows are never returned
without a statement that applies to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.expr.tree import Call, Col, Lit, Node, walk
from lakectl.table.schema import Schema
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_stored_statement

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.acero as acero
    import pyarrow.compute as pc


@dataclass(frozen=True)
class CompiledStatement:
    """One statement as Arrow expressions: the rows it touches and, for an UPDATE, the new
    value of every column (unchanged ones as themselves)."""

    matches: pc.Expression  # true where the statement applies (never null)
    delete: bool
    columns: dict[str, pc.Expression]
    reads: frozenset[str] = frozenset()  # lower-cased names of the columns it reads
    values: tuple[tuple[str, pc.Expression], ...] = ()  # an UPDATE's SET values, by column


def compile_statements(statements: Sequence[Statement], schema: Schema) -> list[CompiledStatement]:
    """``statements`` (in order) as Arrow expressions over ``schema``'s columns; raises
    :class:`~lakectl.errors.UsageError` naming a statement the Arrow reader cannot apply."""
    return [_compile(s, schema) for s in statements]


def _compile(statement: Statement, schema: Schema) -> CompiledStatement:
    import pyarrow.compute as pc

    from lakectl.arrow.compile_expr import arrow_expression
    from lakectl.expr.bind import Binder

    checked = check_stored_statement(statement, schema)
    label = f"Type 7 statement at {statement.source} line {statement.line} ({statement.sql[:120]})"
    binder = Binder(schema, label)
    if checked.where is None:
        matches = pc.scalar(True)
    else:
        condition = arrow_expression(binder.condition(checked.where), label)
        matches = pc.coalesce(condition, pc.scalar(False))
    columns = {c.name: pc.field(c.name) for c in schema.columns}
    values = []
    for name, node in checked.assignments:
        column = schema[name]
        bound = binder.assignment(column.name, node)
        if checked.where is not None and _may_fail(bound):
            bound = _only_where(bound, binder.condition(checked.where), {})
        value = _readable(arrow_expression(bound, label), bound)
        columns[column.name] = pc.if_else(matches, value, pc.field(column.name))
        values.append((column.name, value))
    return CompiledStatement(
        matches, checked.kind == "delete", columns, checked.reads(), tuple(values)
    )


def _readable(value: pc.Expression, node: Node) -> pc.Expression:
    """A SET value of a date or timestamp computed from data: outside what every reader can
    show (:data:`lakectl.expr.convert.READABLE`) it becomes NULL, as in Spark."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from lakectl.arrow.types import arrow_type
    from lakectl.expr.convert import READABLE

    if node.type not in READABLE or not isinstance(node, Call):
        return value
    low, high = READABLE[node.type]
    number = value.cast(pa.int32() if node.type == "date" else pa.int64())
    inside = pc.and_kleene(
        pc.greater_equal(number, pc.scalar(low)), pc.less_equal(number, pc.scalar(high))
    )
    return pc.if_else(inside, value, pc.scalar(pa.scalar(None, arrow_type(node.type))))


# Operations that fail on a value that does not fit (lakectl.expr's checked arithmetic).
_FAILING = frozenset(("add", "sub", "mul", "fit"))


def _may_fail(node: Node) -> bool:
    """Whether evaluating ``node`` may raise the overflow error."""
    return any(isinstance(n, Call) and n.op in _FAILING for n in walk(node))


def _only_where(node: Node, where: Node, done: dict[int, Node]) -> Node:
    """``node`` reading NULL for every column where ``where`` is not true: Arrow computes a SET
    value for every row, and a value that fails only on rows the WHERE leaves alone must not
    fail the read (Spark computes it for the matching rows only)."""
    if isinstance(node, Col):
        return Call(node.type, "case", (where, node, Lit(node.type, None)))
    if not isinstance(node, Call):
        return node
    known = done.get(id(node))
    if known is None:
        args = tuple(_only_where(a, where, done) for a in node.args)
        known = done[id(node)] = Call(node.type, node.op, args, node.param)
    return known


# Statements fused into one pass over the rows at most (bounds the depth of the expressions).
MAX_FUSED = 64


def apply_compiled(rows: pa.Table, statements: Sequence[CompiledStatement]) -> pa.Table:
    """``rows`` after ``statements``, in order (columns and types kept).

    Consecutive statements none of which reads a column an earlier one of them writes are
    applied in one pass: each then sees the same values as in order (the columns it reads are
    the pass's input), so their DELETEs filter together and the SET values of one column nest
    (the later statement's outermost). The passes form one Acero plan (a filter and a
    projection each) run once, on this thread (readers apply statements to several batches in
    parallel): a pass then costs about what its own work does, so thousands of statements are
    cheap to apply."""
    import pyarrow.acero as acero

    if not statements or not rows.num_rows:
        return rows
    names = rows.schema.names
    steps = [acero.Declaration("table_source", acero.TableSourceNodeOptions(rows))]
    for group in _groups(statements):
        steps.extend(_group_steps(group, names))
    if len(steps) == 1:
        return rows
    return acero.Declaration.from_sequence(steps).to_table(use_threads=False).cast(rows.schema)


def _groups(statements: Sequence[CompiledStatement]) -> list[list[CompiledStatement]]:
    groups: list[list[CompiledStatement]] = []
    written: set[str] = set()
    for statement in statements:
        if not groups or len(groups[-1]) >= MAX_FUSED or statement.reads & written:
            groups.append([])
            written = set()
        groups[-1].append(statement)
        written.update(name.lower() for name, _ in statement.values)
    return groups


def _group_steps(group: list[CompiledStatement], names: list[str]) -> list[acero.Declaration]:
    """One pass of statements as plan steps: a filter for its DELETEs, a projection for its
    SET values."""
    import pyarrow.acero as acero
    import pyarrow.compute as pc

    from lakectl.arrow.where import any_of

    steps = []
    deletes = [s.matches for s in group if s.delete]
    if deletes:
        steps.append(acero.Declaration("filter", acero.FilterNodeOptions(~any_of(deletes))))
    columns: dict[str, pc.Expression] = {}
    for statement in group:
        for name, value in statement.values:
            current = columns.get(name, pc.field(name))
            columns[name] = pc.if_else(statement.matches, value, current)
    if columns:
        projection = [columns.get(name, pc.field(name)) for name in names]
        steps.append(acero.Declaration("project", acero.ProjectNodeOptions(projection, names)))
    return steps


__all__ = ["CompiledStatement", "apply_compiled", "compile_statements"]
