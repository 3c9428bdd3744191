"""Cost limits of Type 7 statements: what one statement, and a table's statements together, may
cost a reader.

Anyone who can write to the lake can install statements, and every reader runs them, so what a
statement may cost is bounded, at install and again at every read. The limits are table
properties (``updates.max.*``, see :mod:`lakectl.table.properties`); the checks are pure and linear in the
size of the statements:

- the size of an ``.updates`` file and the number of statements of a table;
- the number of nodes and the depth of each statement's expression tree (deep trees would
  exhaust the recursion of the compiler and of Spark's optimizer);
- the length of strings a statement can produce: literals and ``lpad``/``rpad`` lengths at most
  ``updates.max.string.length`` characters, and a value at most ``updates.max.string.growth``
  times as long as the longest stored value, following columns through the statements in order
  (34 statements ``SET c = c || c`` each look harmless; together they would make values 2^34
  times as long);
- ``%`` wildcards in a ``LIKE`` pattern.

A table property above its ceiling (:func:`lakectl.table.properties.ceiling`) counts as the
ceiling. On top of these, a read has a budget no table can change (:class:`ReadBudget`): the
statements it applies, together, have at most so many characters of text, expression nodes and
LIKE work per row.

(The compiler keeps a ``DELETE``'s filter from being pushed through the projections of earlier
statements, where it would grow as the product of their sizes; see
:mod:`lakectl.spark.statement_compile`.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlglot import exp

from lakectl.errors import BadInputError, UsageError
from lakectl.expr.check import MAX_DEPTH, CheckedStatement, integer_literal
from lakectl.expr.parse import Location
from lakectl.table.metadata import TableMetadata
from lakectl.table.properties import ceiling, ceiling_env, property_value
from lakectl.table.schema import Schema

# What a value of another type takes as a string (a decimal(38,x), a timestamp, a double).
_NON_STRING_LENGTH = 64
# StatementLimits field -> table property (defaults and help: lakectl.table.properties).
_PROPERTY_OF = {
    "file_size": "updates.max.file.size",
    "statements": "updates.max.statements",
    "nodes": "updates.max.expression.nodes",
    "depth": "updates.max.expression.depth",
    "string_length": "updates.max.string.length",
    "string_growth": "updates.max.string.growth",
    "like_wildcards": "updates.max.like.wildcards",
}


@dataclass(frozen=True)
class StatementLimits:
    """The limits a table's statements must keep (table properties ``updates.max.*``)."""

    file_size: int
    statements: int
    nodes: int
    depth: int
    string_length: int
    string_growth: int
    like_wildcards: int

    @classmethod
    def of(cls, meta: TableMetadata) -> StatementLimits:
        """The limits set on (or defaulted for) the table ``meta`` describes."""
        return cls(**{field: property_value(meta, key) for field, key in _PROPERTY_OF.items()})


def _refuse(location: Location | str, what: str, key: str, limit: int) -> BadInputError:
    where = location if isinstance(location, str) else location.at()
    return BadInputError(
        f"{where}: {what}; the limit is {limit} (table property {key})",
        hint=f"simplify the statements, or raise the limit with `lakectl set TABLE {key}=...` "
        f"(up to the ceiling, {ceiling(key)}, which a reader raises for itself only, with the "
        f"environment variable {ceiling_env(key)})",
    )


def check_file_size(size: int, source: str, limits: StatementLimits) -> None:
    """Refuse an ``.updates`` file larger than ``updates.max.file.size``."""
    if size > limits.file_size:
        raise _refuse(
            source, f"the file has {size} bytes", "updates.max.file.size", limits.file_size
        )


def check_statement_count(count: int, source: str, limits: StatementLimits) -> None:
    """Refuse more active statements than ``updates.max.statements``."""
    if count > limits.statements:
        raise _refuse(
            source,
            f"the table would have {count} active statements",
            "updates.max.statements",
            limits.statements,
        )


def check_tree_shape(stmt: CheckedStatement, limits: StatementLimits) -> int:
    """Refuse a statement with too many nodes or too deep a tree (iterative: any input is safe);
    returns its number of nodes."""
    depth_limit = min(limits.depth, MAX_DEPTH)
    roots = [value for _, value in stmt.assignments]
    if stmt.where is not None:
        roots.append(stmt.where)
    nodes = 0
    stack: list[tuple[exp.Expression, int]] = [(root, 1) for root in roots]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > depth_limit:
            raise _refuse(
                stmt.location,
                "the expression nests deeper than the limit (a chain of AND/OR counts one "
                "level per operator: use IN (...) for long lists)",
                "updates.max.expression.depth",
                depth_limit,
            )
        if nodes > limits.nodes:
            raise _refuse(
                stmt.location,
                "the statement has more expression nodes than the limit",
                "updates.max.expression.nodes",
                limits.nodes,
            )
        stack.extend((child, depth + 1) for child in _children(node))
    return nodes


def _children(node: exp.Expression) -> Iterator[exp.Expression]:
    for value in node.args.values():
        if isinstance(value, exp.Expression):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, exp.Expression))


@dataclass(frozen=True)
class _Length:
    """A bound on a string's length: ``scale`` times the longest stored value, plus ``extra``."""

    scale: int
    extra: int

    def __add__(self, other: _Length) -> _Length:
        return _Length(self.scale + other.scale, self.extra + other.extra)

    def widest(self, other: _Length) -> _Length:
        return _Length(max(self.scale, other.scale), max(self.extra, other.extra))


_OTHER = _Length(0, _NON_STRING_LENGTH)


class CostCheck:
    """Follows a table's statements in order: how long each string column can become."""

    def __init__(self, schema: Schema, limits: StatementLimits) -> None:
        self.schema = schema
        self.limits = limits
        self.lengths: dict[str, _Length] = {
            c.name.lower(): (_Length(1, 0) if _is_string(c.type) else _OTHER)
            for c in schema.columns
        }
        self.like_work = 0  # of the statement last added
        self.branches = 0  # likewise

    def add(self, stmt: CheckedStatement) -> None:
        """Check one statement given those before it; raises :class:`BadInputError`.

        Afterwards :attr:`like_work` estimates what its LIKE tests cost a row: the length of the
        value tested (a stored value taken as ``updates.max.string.length`` long) times the
        pattern's; :attr:`branches` counts its CASE and IF branches (Spark compiles a long
        CASE into code too large to optimize: 7,000 branches cost seconds a read)."""
        self.like_work = self.branches = 0
        if stmt.where is not None:
            self._check_strings(stmt.where, stmt.location)
        new_lengths: dict[str, _Length] = {}
        for name, value in stmt.assignments:
            key = name.lower()
            length = self._check_strings(value, stmt.location)
            new_lengths[key] = self.lengths[key].widest(length)
        for key, length in new_lengths.items():
            if length.scale > self.limits.string_growth:
                raise _refuse(
                    stmt.location,
                    f"after this statement, {key} can be {length.scale} times as long as the "
                    "longest stored value",
                    "updates.max.string.growth",
                    self.limits.string_growth,
                )
        self.lengths.update(new_lengths)

    def _check_strings(self, tree: exp.Expression, location: Location) -> _Length:
        """The length bound of ``tree``'s value; refuses literals, pads and LIKE patterns over
        the limits on the way (post-order, iterative)."""
        bounds: dict[int, _Length] = {}
        for node in _post_order(tree):
            bound = self._bound(node, bounds, location)
            if bound.extra > self.limits.string_length:
                raise _refuse(
                    location,
                    f"{_describe(node)} can produce a string of {bound.extra} characters",
                    "updates.max.string.length",
                    self.limits.string_length,
                )
            bounds[id(node)] = bound
        return bounds[id(tree)]

    def _bound(
        self, node: exp.Expression, bounds: dict[int, _Length], location: Location
    ) -> _Length:
        children = [bounds[id(c)] for c in _children(node) if id(c) in bounds]
        if isinstance(node, exp.Literal):
            return _Length(0, len(str(node.this))) if node.is_string else _OTHER
        if isinstance(node, exp.Column):
            return self.lengths.get(node.name.lower(), _OTHER)
        if isinstance(node, (exp.Concat, exp.DPipe, exp.ConcatWs)):
            return sum(children, _Length(0, 0))
        if isinstance(node, exp.Pad):
            width = integer_literal(node.expression)
            return _Length(0, max(width or 0, 0))
        if isinstance(node, exp.Replace):
            return _replace_bound(node, bounds[id(node.this)])
        if isinstance(node, exp.If):  # also each WHEN of a CASE
            self.branches += 1
        if isinstance(node, (exp.Like, exp.ILike)):
            self._check_like(node, location)
            value = bounds[id(node.this)]
            length = value.scale * self.limits.string_length + value.extra
            self.like_work += length * max(1, len(str(node.expression.this)))
        if isinstance(node, (exp.Upper, exp.Lower, exp.Initcap, exp.Trim, exp.Reverse)):
            return bounds[id(node.this)]
        if isinstance(node, exp.Substring):
            return bounds[id(node.this)]
        widest = _OTHER
        for child in children:
            widest = widest.widest(child)
        return widest

    def _check_like(self, node: exp.Like | exp.ILike, location: Location) -> None:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return  # the checker refuses patterns that are not literals
        wildcards = _wildcards(str(pattern.this))
        if wildcards > self.limits.like_wildcards:
            raise _refuse(
                location,
                f"the LIKE pattern {str(pattern.this)[:40]!r} has {wildcards} % wildcards",
                "updates.max.like.wildcards",
                self.limits.like_wildcards,
            )


def check_costs(
    statements: Sequence[CheckedStatement], schema: Schema, limits: StatementLimits
) -> None:
    """Check ``statements`` (in the order a reader applies them) against ``limits``."""
    check = CostCheck(schema, limits)
    for stmt in statements:
        check.add(stmt)


def _post_order(tree: exp.Expression) -> Iterator[exp.Expression]:
    stack: list[tuple[exp.Expression, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _replace_bound(node: exp.Replace, value: _Length) -> _Length:
    """``replace(value, search, replacement)``: each occurrence of ``search`` can grow by the
    ratio of the lengths (the checker requires both to be literals)."""
    search, replacement = node.expression, node.args.get("replacement")
    found = len(str(search.this)) if isinstance(search, exp.Literal) else 1
    put = len(str(replacement.this)) if isinstance(replacement, exp.Literal) else 0
    factor = max(1, -(-put // max(found, 1))) if found else 1
    return _Length(value.scale * factor, value.extra * factor)


def _wildcards(pattern: str) -> int:
    """``%`` wildcards of a LIKE pattern (``\\%`` is a literal percent sign)."""
    count, i = 0, 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        count += pattern[i] == "%"
        i += 1
    return count


def _describe(node: exp.Expression) -> str:
    if isinstance(node, exp.Literal):
        return "a string literal"
    if isinstance(node, exp.Pad):
        return "lpad/rpad"
    return f"{node.key} expression"


def _is_string(type_name: str) -> bool:
    return type_name.startswith(("string", "varchar", "char"))


# A read's budget: what all the statements a read applies may cost together. The table cannot
# change it; the reader can, with these environment variables.
BUDGET_ENV = {
    "text": "LAKECTL_READ_BUDGET_TEXT",
    "nodes": "LAKECTL_READ_BUDGET_NODES",
    "branches": "LAKECTL_READ_BUDGET_BRANCHES",
    "like_work": "LAKECTL_READ_BUDGET_LIKE",
}
_BUDGET_DEFAULTS = {
    "text": 8 * 1024 * 1024,
    "nodes": 1_000_000,
    "branches": 10_000,
    "like_work": 100_000_000,
}
_BUDGET_WHAT = {
    "text": "characters of statement text",
    "nodes": "expression nodes",
    "branches": "CASE and IF branches",
    "like_work": "steps of LIKE matching per row (value length times pattern length)",
}


@dataclass(frozen=True)
class ReadBudget:
    """What the statements of one read may cost together: characters of text, expression nodes
    (each is work per row), CASE and IF branches, and LIKE work per row (see
    :class:`CostCheck`)."""

    text: int
    nodes: int
    branches: int
    like_work: int

    @classmethod
    def of_reader(cls) -> ReadBudget:
        """The defaults, or this reader's ``LAKECTL_READ_BUDGET_*`` settings."""
        values = {}
        for field, env in BUDGET_ENV.items():
            text = os.environ.get(env, "").strip()
            if not text:
                values[field] = _BUDGET_DEFAULTS[field]
                continue
            if not text.isdigit() or int(text) == 0:
                raise UsageError(f"{env}={text}: expected a whole number above 0")
            values[field] = int(text)
        return cls(**values)


class BudgetCheck:
    """Adds up the cost of a read's statements, in the order it applies them."""

    def __init__(self, budget: ReadBudget) -> None:
        self.budget = budget
        self.spent = dict.fromkeys(BUDGET_ENV, 0)

    def add(self, stmt: CheckedStatement, text: int, nodes: int, costs: CostCheck) -> None:
        """Count one statement (``costs`` has just added it); raises :class:`BadInputError`
        naming it when a total goes over the budget."""
        found = {
            "text": text,
            "nodes": nodes,
            "branches": costs.branches,
            "like_work": costs.like_work,
        }
        for field, cost in found.items():
            self.spent[field] += cost
            limit = getattr(self.budget, field)
            if self.spent[field] > limit:
                env = BUDGET_ENV[field]
                raise BadInputError(
                    f"{stmt.location.at()}: with this statement the statements of the read need "
                    f"{self.spent[field]} {_BUDGET_WHAT[field]}; a read's budget is {limit} "
                    f"({env})",
                    hint=f"raise your own budget with the environment variable {env}, read "
                    "with --raw or --as-of before the statement, or shrink the table's "
                    "statements: fold them into the data with `lakectl apply-updates TABLE "
                    "--materialize --until TIME`, or undo their install with `lakectl restore`",
                )
