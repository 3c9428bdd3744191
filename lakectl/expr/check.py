"""The safety check of the expression language: which SQL is accepted, decided without Spark.

Statements (``.updates`` files, ``delete --where``, ``update --set``) and a read's ``--where``
are data that anyone with write access to the lake, or any caller, can choose, so they are
parsed with sqlglot and then checked against a whitelist: UPDATE or DELETE of one table, the
table's own columns, literals, operators and a vetted list of pure, deterministic scalar
functions. Everything else (subqueries, other tables, aggregates, window functions, UDFs,
``reflect``, file readers, ``rand``, ``current_timestamp``, ...) is refused with an error naming
the file, line and construct. The engines' compilers only ever see trees that passed it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from sqlglot import exp

from lakectl.errors import BadInputError, UsageError
from lakectl.expr.like import like_problem
from lakectl.expr.parse import (
    DIALECT,
    Location,
    parse_condition,
    statement_name,
)
from lakectl.expr.tree import Node
from lakectl.table.schema import Schema, normalize_type


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Column and CAST types a statement can produce, besides decimal(p,s).
SETTABLE_TYPES = _names(
    """
    tinyint smallint int bigint float double boolean string date timestamp
    """
)

# Functions refused with a specific reason; every other unknown function is refused too.
_NON_DETERMINISTIC = _names(
    """
    current_date current_timestamp current_time now localtimestamp curdate current_timezone
    rand random randn uuid shuffle monotonically_increasing_id spark_partition_id
    unix_timestamp current_user user session_user current_database current_catalog
    current_schema input_file_name input_file_block_start input_file_block_length
    """
)
_OUTSIDE_WORLD = _names(
    """
    reflect java_method try_reflect read_files read_csv read_json read_parquet from_avro
    to_avro from_protobuf to_protobuf url_decode parse_url input_file_name aes_encrypt
    aes_decrypt secret assert_true raise_error
    """
)


@dataclass(frozen=True)
class CheckedStatement:
    """A statement that passed the check: its parts, with columns resolved to schema names."""

    kind: str  # "update" | "delete"
    table: str
    assignments: tuple[tuple[str, exp.Expression], ...]
    where: exp.Expression | None
    location: Location
    # The SET values and the WHERE bound by the expression layer (lakectl.expr.bind: every
    # conversion explicit), what the engines compile; only with a schema.
    values: tuple[tuple[str, Node], ...] = field(default=(), compare=False, hash=False)
    condition: Node | None = field(default=None, compare=False, hash=False)

    def reads(self) -> frozenset[str]:
        """Lower-cased names of the columns this statement reads (WHERE and SET values)."""
        nodes: list[exp.Expression] = [value for _, value in self.assignments]
        if self.where is not None:
            nodes.append(self.where)
        return frozenset(c.name.lower() for n in nodes for c in n.find_all(exp.Column))


# ---------------------------------------------------------------------------------------------
# Parsing one statement


# The checker, the compiler and Spark's optimizer recurse over expression trees; a table property
# (updates.max.expression.depth) can only lower this.
MAX_DEPTH = 200


def _check_depth(tree: exp.Expression, location: Location) -> None:
    """Refuse trees deeper than :data:`MAX_DEPTH` before anything recurses over them."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadInputError(
                f"{location.at()}: the expression nests more than {MAX_DEPTH} levels deep, the "
                "most any table allows (updates.max.expression.depth, default 100); a chain of "
                "AND/OR counts one level per operator: use IN (...) for long lists"
            )
        stack.extend((child, depth + 1) for child in node.iter_expressions())


def render_sql(statement: exp.Expression) -> str:
    """The normalized single-line text of a parsed statement, as stored and read back."""
    return statement.sql(dialect=DIALECT, comments=False)


# ---------------------------------------------------------------------------------------------
# Statement-level check


def check_statement(
    statement: exp.Expression, location: Location, schema: Schema | None = None
) -> CheckedStatement:
    """Check a parsed statement against the whitelist; with ``schema``, also its columns and values.

    Raises :class:`BadInputError` naming the file, line (and column when known) of the first
    refused construct.
    """
    _check_depth(statement, location)
    if isinstance(statement, exp.Update):
        kind = "update"
        _refuse_extra_args(statement, {"this", "expressions", "where"}, location, "UPDATE")
    elif isinstance(statement, exp.Delete):
        kind = "delete"
        if statement.args.get("tables"):
            raise BadInputError(f"{location.at(1, 1)}: write DELETE FROM <table> [WHERE ...]")
        _refuse_extra_args(statement, {"this", "where"}, location, "DELETE")
    else:
        raise BadInputError(
            f"{location.at(1, 1)}: only UPDATE and DELETE statements are allowed in an "
            f".updates file, not {statement_name(statement)}"
        )
    table_node = statement.this
    if not isinstance(table_node, exp.Table):
        raise BadInputError(f"{location.of(statement)}: {kind.upper()} needs a table name")
    table, alias = _table_name(table_node, location, kind.upper())
    checker = _ExpressionChecker(location, schema, {table.lower().split(".")[-1], alias})

    assignments: list[tuple[str, exp.Expression]] = []
    seen: set[str] = set()
    for assignment in statement.expressions if kind == "update" else []:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise BadInputError(
                f"{location.of(assignment)}: SET expects column = expression, "
                f"got {assignment.sql(dialect=DIALECT)!r}"
            )
        name = checker.column_name(assignment.this)
        if name.lower() in seen:
            raise BadInputError(f"{location.of(assignment)}: column {name!r} is set twice")
        seen.add(name.lower())
        checker.check(assignment.expression)
        if schema is not None:
            _check_settable(name, assignment.expression, schema, location.of(assignment))
        assignments.append((name, assignment.expression))

    if kind == "update" and not assignments:
        raise BadInputError(f"{location.at(1, 1)}: UPDATE needs SET column = value")
    where_clause = statement.args.get("where")
    where = where_clause.this if where_clause is not None else None
    if where is not None:
        checker.check(where)
    if schema is not None:  # the coercion rules every engine applies (lakectl.expr.bind)
        from lakectl.expr.bind import Binder

        binder = Binder(schema, location.at(), location)
        values = tuple((name, binder.assignment(name, value)) for name, value in assignments)
        condition = None if where is None else binder.condition(where)
        return CheckedStatement(kind, table, tuple(assignments), where, location, values, condition)
    return CheckedStatement(kind, table, tuple(assignments), where, location)


# ---------------------------------------------------------------------------------------------
# A read's --where


@functools.lru_cache(maxsize=16)
def check_where(where: str, schema: Schema) -> exp.Expression:
    """Check a read's ``--where`` without Spark: exactly one condition over ``schema``'s columns,
    built from what statements may use (the same whitelist: vetted pure functions only).

    Raises :class:`UsageError` for an empty or misshapen condition (several statements, a
    trailing word Spark would read as an alias, a value that is not a condition), and
    :class:`BadInputError` for a syntax error, an unknown column or a refused construct.
    A read checks its condition in several places (pruning, stripe statistics, the filter):
    the tree is parsed once and shared (callers must not modify it).
    """
    text = where.strip()
    if not text:
        raise UsageError(
            "--where is empty", hint="leave it out to read every row, or give a condition"
        )
    location = Location("--where", 1)
    try:
        return _check_where_tree(where, text, location, schema)
    except RecursionError as exc:
        raise BadInputError(f"--where {where[:80]!r}: the condition is nested too deeply") from exc


def _check_where_tree(where: str, text: str, location: Location, schema: Schema) -> exp.Expression:
    tree = parse_condition(text, "--where")
    _ExpressionChecker(location, schema, set()).check(tree)
    if not _may_be_boolean(tree, schema):
        raise UsageError(
            f"--where {where!r} is not a condition", hint="compare it: store_id = 'S01'"
        )
    return tree


def _may_be_boolean(node: exp.Expression, schema: Schema) -> bool:
    """False when ``node`` is certainly not a boolean (a number, a string, arithmetic, a column
    of another type); true for comparisons, AND/OR/NOT and what only Spark can type."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Predicate, exp.Connector, exp.Not, exp.Boolean)):
        return True
    if isinstance(node, exp.Column):
        column = schema.find(node.name)
        return column is None or column.type == "boolean"
    return not isinstance(node, (exp.Literal, exp.Null, exp.Binary, exp.Neg))


def _refuse_extra_args(
    node: exp.Expression, allowed: set[str], location: Location, what: str
) -> None:
    for key, value in node.args.items():
        if key in allowed or not value:
            continue
        first = value[0] if isinstance(value, list) else value
        where = location.of(first) if isinstance(first, exp.Expression) else location.at(1, 1)
        if key in ("from_", "using", "joins", "with_"):
            raise BadInputError(f"{where}: {what} may not read other tables ({_keyword(key)})")
        raise BadInputError(f"{where}: {_keyword(key)} is not supported in {what} statements")


def _keyword(arg_key: str) -> str:
    return arg_key.rstrip("_").upper()


def _table_name(table: exp.Table, location: Location, what: str) -> tuple[str, str]:
    joins = table.args.get("joins")
    if joins:
        raise BadInputError(f"{location.of(joins[0])}: {what} may not read other tables (JOIN)")
    for key, value in table.args.items():
        if value and key not in ("this", "db", "catalog", "alias"):
            raise BadInputError(
                f"{location.of(table)}: the statement must name exactly one table, "
                f"got {table.sql(dialect=DIALECT)!r}"
            )
    if not isinstance(table.this, exp.Identifier):
        raise BadInputError(f"{location.of(table)}: invalid table name")
    alias = table.args.get("alias")
    alias_name = ""
    if alias is not None:
        if not isinstance(alias.this, exp.Identifier) or alias.args.get("columns"):
            raise BadInputError(f"{location.of(table)}: invalid table alias")
        alias_name = alias.this.name.lower()
    parts = [p.name for p in (table.args.get("catalog"), table.args.get("db"), table.this) if p]
    return ".".join(parts), alias_name


# ---------------------------------------------------------------------------------------------
# Expression whitelist


@dataclass(frozen=True)
class _Rule:
    """An accepted node type: its display name and the args it may carry (children or flags)."""

    name: str
    args: frozenset[str]


def _rule(name: str, *args: str) -> _Rule:
    return _Rule(name, frozenset(args))


_BINARY = ("this", "expression")
RULES: dict[type[exp.Expression], _Rule] = {
    # structure and operators
    exp.Column: _rule("column", "this", "table"),
    exp.Literal: _rule("literal", "this", "is_string"),
    exp.Boolean: _rule("boolean", "this"),
    exp.Null: _rule("NULL"),
    exp.Paren: _rule("parentheses", "this"),
    exp.Neg: _rule("-", "this"),
    exp.Not: _rule("NOT", "this"),
    exp.And: _rule("AND", *_BINARY),
    exp.Or: _rule("OR", *_BINARY),
    exp.Add: _rule("+", *_BINARY),
    exp.Sub: _rule("-", *_BINARY),
    exp.Mul: _rule("*", *_BINARY),
    exp.Div: _rule("/", *_BINARY, "typed", "safe"),
    exp.Mod: _rule("%", *_BINARY),
    exp.EQ: _rule("=", *_BINARY),
    exp.NEQ: _rule("<>", *_BINARY),
    exp.LT: _rule("<", *_BINARY),
    exp.LTE: _rule("<=", *_BINARY),
    exp.GT: _rule(">", *_BINARY),
    exp.GTE: _rule(">=", *_BINARY),
    exp.NullSafeEQ: _rule("<=>", *_BINARY),
    exp.NullSafeNEQ: _rule("IS DISTINCT FROM", *_BINARY),
    exp.Is: _rule("IS NULL", *_BINARY),
    exp.In: _rule("IN", "this", "expressions"),
    exp.Between: _rule("BETWEEN", "this", "low", "high"),
    exp.Like: _rule("LIKE", *_BINARY, "negate"),
    exp.ILike: _rule("ILIKE", *_BINARY, "negate"),
    exp.Case: _rule("CASE", "this", "ifs", "default"),
    exp.If: _rule("if", "this", "true", "false"),
    exp.Cast: _rule("CAST", "this", "to"),
    exp.TryCast: _rule("CAST", "this", "to", "safe"),
    exp.Coalesce: _rule("coalesce", "this", "expressions", "is_nvl", "is_null"),
    exp.Nullif: _rule("nullif", *_BINARY),
    # string functions
    exp.Upper: _rule("upper", "this"),
    exp.Lower: _rule("lower", "this"),
    exp.Trim: _rule("trim", "this", "expression", "position"),
    exp.Length: _rule("length", "this"),
    exp.Substring: _rule("substring", "this", "start", "length"),
    exp.Concat: _rule("concat", "expressions", "safe", "coalesce"),
    exp.DPipe: _rule("||", *_BINARY, "safe"),
    exp.ConcatWs: _rule("concat_ws", "expressions", "safe", "coalesce", "flatten"),
    exp.Replace: _rule("replace", "this", "expression", "replacement"),
    exp.Pad: _rule("lpad/rpad", "this", "expression", "fill_pattern", "is_left"),
    exp.Initcap: _rule("initcap", "this", "expression"),
    exp.Reverse: _rule("reverse", "this"),
    exp.StrPosition: _rule("locate/instr", "this", "substr", "position"),
    # math functions
    exp.Abs: _rule("abs", "this"),
    exp.Round: _rule("round", "this", "decimals"),
    exp.Floor: _rule("floor", "this"),
    exp.Ceil: _rule("ceil", "this"),
    exp.Sqrt: _rule("sqrt", "this"),
    exp.Pow: _rule("power", *_BINARY),
    exp.Greatest: _rule("greatest", "this", "expressions", "ignore_nulls"),
    exp.Least: _rule("least", "this", "expressions", "ignore_nulls"),
    exp.Sign: _rule("sign", "this"),
    # date functions
    exp.Year: _rule("year", "this"),
    exp.Month: _rule("month", "this"),
    exp.Day: _rule("day", "this"),
    exp.DayOfMonth: _rule("dayofmonth", "this"),
    exp.TsOrDsAdd: _rule("date_add", *_BINARY, "unit"),
    exp.DateDiff: _rule("datediff", *_BINARY),
    exp.TsOrDsToDate: _rule("to_date", "this", "safe", "format"),  # format: refused below
}

# Args that hold parser flags or fixed keywords rather than sub-expressions to check.
_NOT_CHILDREN = frozenset(
    {
        "to",
        "unit",
        "position",
        "negate",
        "is_string",
        "safe",
        "typed",
        "coalesce",
        "flatten",
        "ignore_nulls",
        "is_left",
        "is_nvl",
        "is_null",
    }
)


class _ExpressionChecker:
    """Walks an expression and refuses anything outside :data:`RULES`."""

    def __init__(self, location: Location, schema: Schema | None, table_names: set[str]) -> None:
        self.location = location
        self.schema = schema
        self.table_names = {n for n in table_names if n}

    def column_name(self, column: exp.Column) -> str:
        """Check a column reference and return its name as the schema spells it."""
        for key, value in column.args.items():
            if value and key not in ("this", "table"):
                raise BadInputError(
                    f"{self.location.of(column)}: {column.sql(dialect=DIALECT)!r} refers to "
                    "another table or a nested field: only the table's own columns can be used"
                )
        qualifier = column.args.get("table")
        if qualifier is not None and qualifier.name.lower() not in self.table_names:
            raise BadInputError(
                f"{self.location.of(column)}: {column.sql(dialect=DIALECT)!r} refers to another "
                f"table ({qualifier.name}): only the table's own columns can be used"
            )
        if not isinstance(column.this, exp.Identifier):
            raise BadInputError(
                f"{self.location.of(column)}: unsupported column reference "
                f"{column.sql(dialect=DIALECT)!r}"
            )
        name = column.this.name
        if self.schema is None:
            return name
        found = self.schema.find(name)
        if found is None:
            raise BadInputError(
                f"{self.location.of(column)}: unknown column {name!r}; the table's columns "
                f"are: {', '.join(self.schema.names)}",
                hint=f"if {name!r} is a value, quote it: '{name}'",
            )
        return found.name

    def check(self, node: exp.Expression) -> None:
        rule = RULES.get(type(node))
        if rule is None:
            raise BadInputError(f"{self.location.of(node)}: {_refusal(node)}")
        for key, value in node.args.items():
            if value is None or value is False or value == []:
                continue
            if key not in rule.args:
                if isinstance(value, exp.Expression) and value.find(exp.Query, exp.Subquery):
                    raise BadInputError(f"{self.location.of(value)}: subqueries are not allowed")
                raise BadInputError(
                    f"{self.location.of(node)}: unsupported form of {rule.name}: "
                    f"{node.sql(dialect=DIALECT)!r}"
                )
        special = getattr(self, f"_check_{type(node).__name__.lower()}", None)
        if special is not None:
            special(node, rule)
        if isinstance(node, exp.Column):
            self.column_name(node)
            return
        for child in _children(node):
            self.check(child)

    # Node types with restrictions beyond their args ---------------------------------------

    def _fail(self, node: exp.Expression, message: str) -> None:
        raise BadInputError(f"{self.location.of(node)}: {message}")

    def _check_literal(self, node: exp.Literal, rule: _Rule) -> None:
        if not node.is_string:
            try:
                number = literal_number(node)
            except ValueError:
                self._fail(node, f"invalid number {node.this!r}")
                return
            if not isinstance(number, float) and len(str(node.this).replace(".", "")) > 38:
                self._fail(node, f"number {node.this} has more than 38 digits")

    def _check_is(self, node: exp.Is, rule: _Rule) -> None:
        if not isinstance(node.expression, exp.Null):
            self._fail(node, "only IS NULL and IS NOT NULL are supported")

    def _check_cast(self, node: exp.Cast, rule: _Rule) -> None:
        target = cast_target_type(node)
        if target is None:
            self._fail(node, f"CAST to {node.to.sql(dialect=DIALECT)} is not supported")
        constant = constant_value(node.this)
        if constant is not None and target is not None:
            problem = cast_problem(constant, target)
            if problem:
                self._fail(
                    node, f"cannot cast {node.this.sql(dialect=DIALECT)} to {target}: {problem}"
                )

    _check_trycast = _check_cast

    def _check_trim(self, node: exp.Trim, rule: _Rule) -> None:
        if node.args.get("position") not in (None, "LEADING", "TRAILING", "BOTH"):
            self._fail(node, f"unsupported form of trim: {node.sql(dialect=DIALECT)!r}")

    def _check_initcap(self, node: exp.Initcap, rule: _Rule) -> None:
        delimiters = node.args.get("expression")
        if delimiters is not None and not (
            isinstance(delimiters, exp.Literal) and delimiters.is_string and delimiters.this == " "
        ):
            self._fail(node, "initcap takes one argument")

    def _check_concatws(self, node: exp.ConcatWs, rule: _Rule) -> None:
        separator = node.expressions[0] if node.expressions else None
        if not (isinstance(separator, exp.Literal) and separator.is_string):
            self._fail(node, "the separator of concat_ws must be a string literal")
        if len(node.expressions) < 2:
            self._fail(node, "concat_ws needs a separator and at least one value")

    def _check_strposition(self, node: exp.StrPosition, rule: _Rule) -> None:
        substr = node.args.get("substr")
        if not (isinstance(substr, exp.Literal) and substr.is_string):
            self._fail(node, "the substring searched by locate/instr must be a string literal")
        position = node.args.get("position")
        if position is not None and integer_literal(position) is None:
            self._fail(node, "the start position of locate must be an integer literal")
        if position is not None:
            self._check_range(position, "the start position of locate", INT_RANGE)

    def _check_substring(self, node: exp.Substring, rule: _Rule) -> None:
        for key, what in (("start", "position"), ("length", "length")):
            argument = node.args.get(key)
            if argument is not None:
                self._check_range(argument, f"the {what} of substring", INT_RANGE)

    def _check_round(self, node: exp.Round, rule: _Rule) -> None:
        decimals = node.args.get("decimals")
        if decimals is not None and integer_literal(decimals) is None:
            self._fail(node, "the scale of round must be an integer literal")
        if decimals is not None:
            self._check_range(decimals, "the scale of round", ROUND_SCALE_RANGE)

    def _check_greatest(self, node: exp.Greatest, rule: _Rule) -> None:
        if not node.expressions:
            self._fail(node, f"{rule.name} needs at least two arguments")

    _check_least = _check_greatest

    def _check_tsordsadd(self, node: exp.TsOrDsAdd, rule: _Rule) -> None:
        unit = node.args.get("unit")
        if unit is not None and unit.name.upper() != "DAY":
            self._fail(node, "only date_add(date, days) and date_sub(date, days) are supported")
        self._check_days(node.expression, "the days of date_add/date_sub")

    def _check_add(self, node: exp.Add, rule: _Rule) -> None:
        """``date + n`` and ``date - n`` are date_add and date_sub."""
        for this, other in ((node.this, node.expression), (node.expression, node.this)):
            if self._column_type(this) == "date":
                self._check_days(other, f"the days added to or taken from {this.name}")

    _check_sub = _check_add

    def _check_days(self, days: exp.Expression, what: str) -> None:
        """A number of days: a constant within :data:`DAYS_RANGE`; a column of an int type."""
        self._check_range(days, what, DAYS_RANGE)
        column_type = self._column_type(days)
        if column_type is not None and column_type not in ("tinyint", "smallint", "int"):
            self._fail(days, f"{what} must be an int, tinyint or smallint, not {column_type}")

    def _column_type(self, node: exp.Expression) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if self.schema is None or not isinstance(node, exp.Column):
            return None
        found = self.schema.find(node.name)
        return None if found is None else found.type

    def _check_range(self, node: exp.Expression, what: str, bounds: tuple[int, int]) -> None:
        """Refuse a constant integer (folded: ``-(2 * 3) + 1`` is -5) outside ``bounds``; what
        is not constant is the readers' to bound."""
        value = constant_integer(node)
        if value is not None and not bounds[0] <= value <= bounds[1]:
            self._fail(
                node,
                f"{what} is {_shown(value)}; it must be between {bounds[0]} and {bounds[1]} "
                "(beyond that no read could apply the statement)",
            )

    def _check_tsordstodate(self, node: exp.TsOrDsToDate, rule: _Rule) -> None:
        if node.args.get("format") is not None:
            self._fail(node, "to_date with a format is not supported: use to_date(value)")

    def _check_like(self, node: exp.Like, rule: _Rule) -> None:
        if not _is_string_literal(node.expression):
            self._fail(node, f"the pattern of {rule.name} must be a string literal")
        problem = like_problem(str(node.expression.this))
        if problem is not None:
            self._fail(node.expression, problem)

    _check_ilike = _check_like

    def _check_pad(self, node: exp.Pad, rule: _Rule) -> None:
        width = integer_literal(node.expression)
        if width is None or width < 0:
            self._fail(node, "the length of lpad/rpad must be a non-negative integer literal")
        fill = node.args.get("fill_pattern")
        if fill is not None and not _is_string_literal(fill):
            self._fail(node, "the padding of lpad/rpad must be a string literal")

    def _check_replace(self, node: exp.Replace, rule: _Rule) -> None:
        replacement = node.args.get("replacement")
        if not _is_string_literal(node.expression) or not (
            replacement is None or _is_string_literal(replacement)
        ):
            self._fail(node, "the search and replacement strings of replace must be literals")

    def _check_datediff(self, node: exp.DateDiff, rule: _Rule) -> None:
        if node.args.get("unit") is not None:
            self._fail(node, "only datediff(end, start) in days is supported")


def _is_string_literal(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _children(node: exp.Expression) -> Iterator[exp.Expression]:
    for key, value in node.args.items():
        if key in _NOT_CHILDREN:
            continue
        if isinstance(value, exp.Expression):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, exp.Expression))


def _refusal(node: exp.Expression) -> str:
    """Why a node type is refused, naming the function or construct."""
    if isinstance(node, (exp.Query, exp.Subquery, exp.Exists)):
        return "subqueries are not allowed"
    if isinstance(node, exp.Window):
        return f"window function {function_name(node.this)!r} is not allowed"
    if isinstance(node, exp.AggFunc):
        return f"aggregate function {function_name(node)!r} is not allowed"
    if isinstance(node, exp.Func):
        name = function_name(node)
        if name in _OUTSIDE_WORLD:
            reason = "it reaches outside the table (JVM, files or network)"
        elif name in _NON_DETERMINISTIC:
            reason = (
                "it is not deterministic: a read as of a given time must always give the same rows"
            )
        else:
            reason = "it is not on the list of allowed pure scalar functions"
        return f"function {name!r} is not allowed: {reason}"
    if isinstance(node, (exp.Table, exp.Join, exp.From)):
        return "other tables cannot be used"
    return f"unsupported SQL construct {node.sql(dialect=DIALECT)!r}"


def function_name(node: exp.Expression) -> str:
    """The name of a function node as the user wrote it (lower-cased)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key.lower()


# ---------------------------------------------------------------------------------------------
# Literals and casts


def literal_number(node: exp.Literal) -> int | Decimal | float:
    """The value of a numeric literal with Spark SQL's typing: int, exact decimal, or double."""
    text = str(node.this)
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"\d*\.\d*", text) and text != ".":
        return Decimal(text)
    value = float(text)  # raises ValueError for junk
    return value


# Arguments Spark takes as an int; the scale of round (Spark's decimals have at most 38 digits,
# and a larger scale overflows at read); days between any two dates of years 1 to 9999.
INT_RANGE = (-(2**31) + 1, 2**31 - 1)
ROUND_SCALE_RANGE = (-38, 38)
DAYS_RANGE = (-3_652_058, 3_652_058)
# Folded constants beyond this are not computed further (no huge products).
_FOLD_LIMIT = 2**64


def constant_integer(node: exp.Expression) -> int | None:
    """The value of an integer constant: literals, ``-``, parentheses, ``+``, ``-`` and ``*`` of
    integer constants (as Spark folds them, without overflow); ``None`` for anything else.
    Iterative: any tree is safe."""
    values: dict[int, int] = {}
    stack: list[tuple[exp.Expression, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        children = [current.this] if isinstance(current, (exp.Neg, exp.Paren)) else []
        if isinstance(current, (exp.Add, exp.Sub, exp.Mul)):
            children = [current.this, current.expression]
        if not expanded and children:
            stack.append((current, True))
            stack.extend((child, False) for child in children)
            continue
        if isinstance(current, exp.Literal):
            text = str(current.this)
            if current.is_string or not text.isdecimal() or not text.isascii() or len(text) > 40:
                return None
            values[id(current)] = int(text)
            continue
        if not children:
            return None
        found = [values[id(child)] for child in children]
        if isinstance(current, exp.Paren):
            result = found[0]
        elif isinstance(current, exp.Neg):
            result = -found[0]
        elif isinstance(current, exp.Add):
            result = found[0] + found[1]
        elif isinstance(current, exp.Sub):
            result = found[0] - found[1]
        else:
            result = found[0] * found[1]
        values[id(current)] = max(-_FOLD_LIMIT, min(result, _FOLD_LIMIT))
    return values[id(node)]


def _shown(value: int) -> str:
    return (
        f"beyond {'-' if value < 0 else ''}{_FOLD_LIMIT}"
        if abs(value) >= _FOLD_LIMIT
        else str(value)
    )


def integer_literal(node: exp.Expression) -> int | None:
    """The value of an integer literal (optionally negated), else ``None``."""
    sign = 1
    while isinstance(node, (exp.Neg, exp.Paren)):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdecimal():
        return sign * int(node.this)
    return None


@dataclass(frozen=True)
class Constant:
    """A constant SET value: its SQL kind (``number``, ``string``, ``boolean``, ``null``, or a
    cast target type such as ``date``) and the Python value of the literal."""

    kind: str
    value: object


def constant_value(node: exp.Expression) -> Constant | None:
    """The value of a literal (possibly negated, parenthesized or cast), else ``None``."""
    sign = 1
    while isinstance(node, (exp.Neg, exp.Paren)):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Null):
        return Constant("null", None)
    if isinstance(node, exp.Boolean) and sign == 1:
        return Constant("boolean", bool(node.this))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Constant("string", str(node.this)) if sign == 1 else None
        try:
            number = literal_number(node)
        except ValueError:
            return None
        return Constant("number", -number if sign < 0 else number)
    if isinstance(node, (exp.Cast, exp.TryCast)) and sign == 1:
        target = cast_target_type(node)
        inner = constant_value(node.this)
        if target is None or inner is None:
            return None
        if inner.kind == "null":
            return inner
        if cast_problem(inner, target) is None:
            return Constant(target, inner.value)
    return None


def cast_target_type(node: exp.Cast) -> str | None:
    """The Spark type name a CAST converts to, or ``None`` when the type is not supported."""
    try:
        target = normalize_type(node.to.sql(dialect=DIALECT))
    except UsageError:
        return None
    if target in SETTABLE_TYPES or target.startswith("decimal("):
        return target
    return None


_INT_RANGES = {
    "tinyint": 2**7,
    "smallint": 2**15,
    "int": 2**31,
    "bigint": 2**63,
}
# Matched against the stripped text (no leading/trailing blanks in the patterns: two adjacent
# optional runs of blanks backtrack quadratically on long inputs).
_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T].*)?", re.DOTALL)
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?)?"
    r"(?:\s*(Z|[+-]\d{2}:?\d{2}))?"
)
# The timestamps every reader can show in every time zone (Spark's rows become Python datetimes
# in the local zone: years 1 to 9999 only, and none within a day of year 1).
TIMESTAMP_RANGE = (datetime(1, 1, 3), datetime(9999, 12, 31))
# No date or timestamp text is longer than this; longer text is refused without matching.
_MAX_DATE_TEXT = 64
_TRUE_STRINGS = {"t", "true", "y", "yes", "1"}
_FALSE_STRINGS = {"f", "false", "n", "no", "0"}
_FLOAT_MAX = 3.4028235e38


def cast_problem(constant: Constant, target: str) -> str | None:
    """Why ``constant`` cannot be converted to ``target`` without becoming NULL or changing value.

    ``None`` when it can. Stricter than Spark in places (``'1.5'`` into an int is refused rather
    than truncated), never looser.
    """
    kind, value = constant.kind, constant.value
    if kind == "null" or target == "string":
        return None
    if kind == target:
        return None
    if target in _INT_RANGES:
        return _integer_problem(kind, value, target)
    if target in ("float", "double"):
        if kind == "boolean":
            return None
        number = _as_decimal(kind, value)
        if number is None:
            return "not a number"
        if target == "float" and number.is_finite() and abs(number) > Decimal(_FLOAT_MAX):
            return "out of range for float"
        return None
    if target.startswith("decimal("):
        return _decimal_problem(kind, value, target)
    if target == "boolean":
        if kind in ("boolean", "number"):
            return None
        if kind == "string" and str(value).strip().lower() in _TRUE_STRINGS | _FALSE_STRINGS:
            return None
        return "not a boolean (true/false)"
    if target == "date":
        if kind in ("date", "timestamp"):
            return None
        if kind == "string" and _valid_date_text(str(value), _DATE):
            return None
        return "not a date (yyyy-mm-dd)"
    if target == "timestamp":
        if kind not in ("string", "date", "timestamp") or not _valid_date_text(
            str(value), _TIMESTAMP
        ):
            return "not a timestamp (yyyy-mm-dd[ hh:mm[:ss[.ffffff]]])"
        moment = _utc_time(str(value))
        if moment is not None and not TIMESTAMP_RANGE[0] <= moment <= TIMESTAMP_RANGE[1]:
            low, high = (t.isoformat(sep=" ") for t in TIMESTAMP_RANGE)
            return f"out of range for a timestamp (from {low} to {high} UTC)"
        return None
    return f"values of type {target} cannot be set"


def _integer_problem(kind: str, value: object, target: str) -> str | None:
    if kind == "boolean":
        return None
    number = _as_decimal(kind, value)
    if number is None:
        return "not an integer"
    if not number.is_finite() or number != number.to_integral_value():
        return "not an integer (it would be truncated)"
    limit = _INT_RANGES[target]
    if not -limit <= number < limit:
        return f"out of range for {target}"
    return None


def _decimal_problem(kind: str, value: object, target: str) -> str | None:
    precision, scale = (int(x) for x in target[len("decimal(") : -1].split(","))
    if kind == "boolean":
        return "not a number"
    number = _as_decimal(kind, value)
    if number is None or not number.is_finite():
        return "not a number"
    try:
        rounded = number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return f"out of range for {target}"
    if rounded != 0 and rounded.adjusted() >= precision - scale:
        return f"out of range for {target}"
    return None


def _as_decimal(kind: str, value: object) -> Decimal | None:
    if (
        kind == "number"
        or kind.startswith("decimal(")
        or kind in _INT_RANGES
        or kind in ("float", "double")
    ):
        return Decimal(str(value)) if isinstance(value, float) else Decimal(value)  # type: ignore[arg-type]
    if kind == "string":
        text = str(value).strip()
        try:
            return Decimal(text)
        except InvalidOperation:
            return None
    return None


def _utc_time(text: str) -> datetime | None:
    """The UTC time a valid timestamp (or date) text names (no offset: UTC, as readers take it);
    ``None`` for a time that is not one (e.g. a leap second)."""
    match = _TIMESTAMP.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, offset = match.groups()
    moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0))
    if second:
        moment = moment.replace(second=int(second))
    if offset and offset != "Z":
        digits = offset[1:].replace(":", "")
        shift = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            moment = moment - shift if offset[0] == "+" else moment + shift
        except OverflowError:
            return datetime.min if offset[0] == "+" else datetime.max
    return moment


def _valid_date_text(text: str, pattern: re.Pattern[str]) -> bool:
    text = text.strip()
    if len(text) > _MAX_DATE_TEXT:
        return False
    match = pattern.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(match.group(i)) for i in (1, 2, 3))
    try:
        date(year, month, day)
    except ValueError:
        return False
    groups = match.groups()
    if len(groups) > 3 and groups[3] is not None:
        hour, minute = int(groups[3]), int(groups[4])
        second = int(groups[5]) if groups[5] else 0
        if hour > 23 or minute > 59 or second > 59:
            return False
    return True


def _check_settable(name: str, value: exp.Expression, schema: Schema, where: str) -> None:
    column = schema[name]
    target = column.type
    if not (target in SETTABLE_TYPES or target.startswith("decimal(")):
        raise BadInputError(f"{where}: column {name!r} has type {target}, which SET cannot change")
    constant = constant_value(value)
    if constant is None:
        return
    if constant.kind == "null":
        if not column.nullable:
            raise BadInputError(f"{where}: column {name!r} is NOT NULL and cannot be set to NULL")
        return
    problem = cast_problem(constant, target)
    if problem:
        raise BadInputError(
            f"{where}: cannot set column {name!r} ({target}) to {value.sql(dialect=DIALECT)}: "
            f"{problem}"
        )
