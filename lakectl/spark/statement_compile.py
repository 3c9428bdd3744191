"""Compiling ``.updates`` statements into Spark SQL expressions: the Spark side of Type 7 SCD.

Each statement is re-checked (:mod:`lakectl.updates.validate`) and its checked sqlglot tree is
rendered, node by node, into Spark SQL expression text by this module's own table
(:data:`COMPILERS`): only whitelisted node types have a rendering, column references are quoted
identifiers of the schema's columns, operators and function names are fixed text, and literals are
written from their parsed values (a string outside a plain alphabet becomes hex bytes, so no quote,
backslash or ``${`` of a statement ever reaches Spark's parser, whose variable substitution would
otherwise expand ``${...}``). The statement's own text is never handed to Spark. All projections
and filters form one query of nested ``SELECT`` layers over the input DataFrame, given to
``spark.sql`` once: one call into the JVM for 100 statements rather than thousands of ``Column``
calls, and the same code works under Spark Connect.

Semantics: statements apply in order, each seeing the result of the ones before. An UPDATE is one
projection whose SET values are all computed from the row as it was before the statement (so
``SET a = b, b = a`` swaps); a DELETE is one filter. A WHERE that is NULL matches nothing.

Consecutive statements are fused into one projection while no statement reads a column that an
earlier one in the group wrote (SET values and WHERE then see the same row either way); a DELETE
that reads no written column filters before the pending projection. Runs of point statements on
one key column (:mod:`lakectl.updates.keyed`) become one hash-set test and a map lookup per
written column. A string column that many statements test for equality with a literal, and none
writes, is hashed once per row, and the tests compare hashes first
(:mod:`lakectl.updates.prefilter`). Each projection then stays a separate operator with its
own small generated method (see :meth:`_PlanBuilder._stage`), which the JVM compiles quickly.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from sqlglot import exp

from lakectl.errors import BadInputError
from lakectl.expr.tree import Lit
from lakectl.table.schema import Schema
from lakectl.updates.keyed import KeyedStatement, keyed_form
from lakectl.updates.like import linear_regex, parse_like
from lakectl.updates.prefilter import hashed_columns, string_equality
from lakectl.updates.validate import (
    RULES,
    TIMESTAMP_RANGE,
    CheckedStatement,
    cast_target_type,
    check_stored_statement,
    integer_literal,
    literal_number,
    validate_statement,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakectl.updates.statements import Statement

__all__ = ["analyze_statements", "apply_statements", "validate_statement"]


def apply_statements(
    df: DataFrame,
    statements: Sequence[Statement],
    schema: Schema,
    *,
    deleted_flag: str | None = None,
) -> DataFrame:
    """Apply UPDATE/DELETE ``statements`` in order to ``df`` (a table with ``schema``'s columns).

    Columns of ``df`` that are not in ``schema`` (e.g. row ids) pass through unchanged; column order,
    names and types are kept (nullability may change: a SET can make a NOT NULL column nullable
    in the plan, or a nullable one non-nullable). Raises :class:`BadInputError` for a statement that fails the safety check
    or that Spark cannot analyze (e.g. a type mismatch), naming its file and line.

    With ``deleted_flag`` (a boolean column of ``df`` that is false), a DELETE sets it instead of
    removing the row, for writers that must know which stored rows the statements delete.
    """
    checked = [check_stored_statement(s, schema) for s in statements]
    if not checked:
        return df
    try:
        result = _build(df, checked, schema, fuse=True, deleted_flag=deleted_flag)
        _ = result.schema  # analysis now (it is lazy under Spark Connect), not at the first action
    except AnalysisException as exc:
        raise _culprit(df, checked, schema, exc) from exc
    return result


def analyze_statements(
    spark: SparkSession, statements: Sequence[Statement], schema: Schema
) -> None:
    """Check with Spark's analyzer that ``statements`` apply to a table of ``schema`` (no data read).

    Catches what the Spark-free check cannot, such as ``datediff(number, 1)`` on an int column.
    """
    empty = spark.createDataFrame([], schema.to_ddl())
    apply_statements(empty, statements, schema)


def compile_to_sql(statements: Sequence[Statement], schema: Schema) -> None:
    """Run the compiler over ``statements`` without Spark (at install: a statement the compiler
    would refuse must never be installed, since every read would then fail)."""
    refs = {c.name.lower(): quote_name(f"__lakectl_c{i}") for i, c in enumerate(schema.columns)}
    compiler = _ExpressionCompiler(schema, refs, {})
    for stmt in statements:
        checked = check_stored_statement(stmt, schema)
        compiler.literals.update(checked.literals)
        for _, value in checked.assignments:
            compiler.compile(value)
        if checked.where is not None:
            compiler.compile(checked.where)


def _build(
    df: DataFrame,
    checked: Sequence[CheckedStatement],
    schema: Schema,
    *,
    fuse: bool,
    deleted_flag: str | None = None,
) -> DataFrame:
    hashed = hashed_columns(checked, schema, keyed=fuse)
    plan = _PlanBuilder(df, schema, deleted_flag, hashed)
    for stmt in checked:
        plan.add(stmt, fuse=fuse)
    return plan.finish()


def _culprit(
    df: DataFrame, checked: Sequence[CheckedStatement], schema: Schema, exc: AnalysisException
) -> BadInputError:
    """Find the first statement Spark cannot analyze, applying them one projection at a time."""
    for count in range(1, len(checked) + 1):
        try:
            _ = _build(df, checked[:count], schema, fuse=False).schema
        except AnalysisException as inner:
            where = checked[count - 1].location.at()
            return BadInputError(
                f"{where}: the statement cannot be applied to the table: {_first_line(inner)}"
            )
    return BadInputError(f"the statements cannot be applied to the table: {_first_line(exc)}")


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:500] if text else type(exc).__name__


# --- SQL text that is safe by construction ---------------------------------------------------

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Characters a string literal may show as they are: nothing the lexer or variable substitution
# treats specially (quotes, backslash, backtick, ``$``, braces) and nothing outside ASCII.
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9 _.,:;%@#&|!?=<>()\[\]+\-*/^~]*")
_NUMBER = re.compile(r"[0-9]+|[0-9]*\.[0-9]+|[0-9]+\.")
_TYPE = re.compile(r"[a-z]+|decimal\(\d+,\d+\)")


def quote_name(name: str) -> str:
    """A column reference in generated SQL; only for names :data:`_PLAIN_NAME` accepts."""
    if not _PLAIN_NAME.fullmatch(name):
        raise AssertionError(f"column name {name!r} must be renamed before it is written as SQL")
    return f"`{name}`"


def string_literal(value: str) -> str:
    """A Spark SQL expression for the string ``value``, whatever characters it holds."""
    if _PLAIN_TEXT.fullmatch(value):
        return f"'{value}'"
    data = value.encode("utf-8", "surrogatepass").hex().upper()
    return f"decode(X'{data}', 'UTF-8')"  # folded to a plain literal by the optimizer


def number_literal(node: exp.Literal) -> str:
    """A numeric literal with the type Spark SQL gives it (int, bigint, decimal or double)."""
    text = str(node.this)
    if all(c == "." or c.isdecimal() for c in text):  # other scripts' digits: written in ASCII
        text = "".join(c if c == "." else str(unicodedata.decimal(c, 0)) for c in text)
    if _NUMBER.fullmatch(text):  # the digits of an int, bigint or decimal literal
        return text
    value = float(literal_number(node))  # exponent forms: doubles
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return "CAST('Infinity' AS DOUBLE)"
    return f"{value!r}D"


def typed_literal(constant: Lit) -> str:
    """A constant of the typed tree (:mod:`lakectl.expr.tree`) as SQL text of its type."""
    value, kind = constant.value, constant.type
    if kind == "null":
        return "NULL"
    target = type_name(kind)
    if value is None:
        return f"CAST(NULL AS {target})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"CAST(({value}) AS {target})"
    if isinstance(value, float):
        if math.isnan(value):
            return f"CAST('NaN' AS {target})"
        if math.isinf(value):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS {target})"
        return f"CAST(({value!r}D) AS {target})"
    if isinstance(value, datetime):
        return f"CAST('{value.isoformat(sep=' ')}' AS TIMESTAMP)"
    if isinstance(value, date):
        return f"CAST('{value.isoformat()}' AS DATE)"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS {target})"
    return string_literal(str(value))


def type_name(spark_type: str) -> str:
    """A checked type name (``int``, ``decimal(10,2)``, ...) as SQL text."""
    if not _TYPE.fullmatch(spark_type):
        raise AssertionError(f"unexpected type name {spark_type!r}")
    return spark_type


def key_literal(value: int | str, key_type: str) -> str:
    """A point statement's key value, typed as its column."""
    text = str(int(value)) if isinstance(value, int) else string_literal(value)
    return f"CAST({text} AS {type_name(key_type)})"


# --- the plan --------------------------------------------------------------------------------


# The dates and timestamps a statement may produce, as days or microseconds since 1970
# (independent of the session's time zone): those validate.TIMESTAMP_RANGE allows, and the
# dates of years 1 to 9999. Beyond them Python's datetime (which rows become) fails. Statements
# cannot produce them from constants (refused at install); from data (``date_add(dt, n)``) they
# give NULL.
_EPOCH = datetime(1970, 1, 1)
_READABLE = {
    "date": ("unix_date", ((datetime.min - _EPOCH).days, (datetime.max - _EPOCH).days)),
    "timestamp": (
        "unix_micros",
        tuple((t - _EPOCH) // timedelta(microseconds=1) for t in TIMESTAMP_RANGE),
    ),
}
# A column that keeps groups of projections apart (see :meth:`_PlanBuilder._stage`).
_STAGE = "__lakectl_stage"
# The names of the hashes of string columns (see :mod:`lakectl.updates.prefilter`).
_HASH = "__lakectl_hash_"
# Projections Spark may fuse into one generated method. At 10M rows and 100 statements a read
# cost 1.51x a plain one with 1 (a method call per projection), 1.40x with 3 and 1.47x with 6
# (bigger methods wait longer for C2); 24-30 KB methods (all fused) never got compiled.
_FUSED_PROJECTIONS = 3
# Spark's analyzer resolves nested SELECTs one level per iteration and gives up after 100
# (spark.sql.analyzer.maxIterations): a query of a few hundred statements that do not fuse
# failed to analyze. Each query handed to Spark holds at most this many layers; the next one
# reads its (analyzed) result.
_LAYERS_PER_QUERY = 40
# Spark's optimizer and planner walk a plan recursively (TreeNode.clone, transforms): the few
# hundred layers of 2,000 statements that do not fuse overflowed the driver's thread stack
# (StackOverflowError). Every this many layers the plan is cut: the layers so far become a
# local checkpoint (lazy: computed once, by the read's own job, and kept by the executors for
# the layers above), so no plan Spark optimizes holds more than this many layers.
_LAYERS_PER_PLAN = 160


class _PlanBuilder:
    """Accumulates fused projections (SQL text per column) and filters over ``df``, as one
    query of nested ``SELECT`` layers that Spark parses and analyzes once (a DataFrame call per
    layer re-analyzed the growing plan each time: ~0.5 s for 100 statements)."""

    def __init__(
        self,
        df: DataFrame,
        schema: Schema,
        deleted_flag: str | None = None,
        hashed: Sequence[str] = (),
    ) -> None:
        self.schema = schema
        self.deleted_flag = deleted_flag
        self.names = list(df.columns)  # one schema lookup: the column list never changes
        # Columns whose names cannot be written as SQL text are renamed by position for the
        # duration (toDF: no parsing) and get their names back at the end.
        safe = [
            n if _PLAIN_NAME.fullmatch(n) else f"__lakectl_c{i}" for i, n in enumerate(self.names)
        ]
        self.renamed = safe != self.names
        self.df = df.toDF(*safe) if self.renamed else df
        self.refs = {n.lower(): quote_name(s) for n, s in zip(self.names, safe, strict=True)}
        # Hashes of string columns (prefilter): computed by the first layer, passed on by every
        # layer, dropped from the result; none where a column of the input has a hash's name.
        if any(n.lower().startswith(_HASH) for n in self.names):
            hashed = ()
        hashes = {n.lower(): quote_name(f"{_HASH}{i}") for i, n in enumerate(hashed)}
        self.helpers = list(hashes.values())
        self.sql = _ExpressionCompiler(schema, self.refs, hashes)
        self.pending: dict[str, str] = {}  # lower-cased name -> new value over the query
        self.query = ""  # the layers so far, over the relation {frame}; "" while there are none
        self.layers = 0
        self.flushes = 0
        self.staged = False  # does the query carry the stage column (see _stage)?
        self.pushable = False  # is the top projection one a filter would be pushed through?
        self.run: _KeyedRun | None = None  # point statements not yet folded into pending
        if hashes:
            # NULL for a NULL value, so that a test of it is NULL as ``col = 'lit'`` is. With
            # the stage column: no DELETE's filter is pushed below this layer (which would copy
            # the hash into the filter, once per DELETE).
            values = [
                f"if({self.refs[n]} IS NULL, NULL, hash({self.refs[n]})) AS {h}"
                for n, h in hashes.items()
            ]
            self._layer(", ".join(["*", *values, f"{self._stage(helpers=False)} AS `{_STAGE}`"]))
            self.staged = True

    def add(self, stmt: CheckedStatement, *, fuse: bool) -> None:
        self.sql.literals.update(stmt.literals)
        keyed = keyed_form(stmt, self.schema) if fuse else None
        if keyed is None or (self.run is not None and self.run.key != keyed.key):
            self._end_run()
        if not fuse or stmt.reads() & self.pending.keys():
            self._end_run()
            self._flush()
        if keyed is not None:
            if self.run is None:
                self.run = _KeyedRun(keyed.key)
            self.run.add(keyed)
            return
        condition = None if stmt.where is None else self.sql.compile(stmt.where)
        if stmt.kind == "delete":
            self._delete("TRUE" if condition is None else f"coalesce({condition}, FALSE)")
            return
        updated: dict[str, str] = {}
        for name, value_node in stmt.assignments:
            value = self._typed(self.sql.compile(value_node), name)
            lower = name.lower()
            if condition is None:
                updated[lower] = value
            else:  # CASE WHEN treats a NULL condition as false, as SQL's WHERE does
                current = self.pending.get(lower, self.refs[lower])
                updated[lower] = f"CASE WHEN {condition} THEN {value} ELSE {current} END"
        self.pending.update(updated)

    def finish(self) -> DataFrame:
        self._end_run()
        self._flush()
        if not self.query:
            return self.df.toDF(*self.names) if self.renamed else self.df
        columns = ", ".join(self.refs[n.lower()] for n in self.names)
        # The filter keeps the stage columns alive (it never drops a row).
        where = f" WHERE `{_STAGE}` >= 0" if self.staged else ""
        text = f"SELECT {columns} FROM ({self.query}) AS t{self.layers}{where}"
        result = self._sql(text)
        return result.toDF(*self.names) if self.renamed else result

    def _sql(self, text: str) -> DataFrame:
        """``text`` over the current input (``{frame}``) as a DataFrame."""
        # The text is generated from checked trees: no brace (the formatter's syntax) and no
        # ``${`` (Spark's variable substitution) can be in it; say so loudly if that changes.
        if any(c in text.replace("{frame}", "") for c in "{}$"):
            raise AssertionError("generated statement SQL contains '{', '}' or '$'")
        return self.df.sparkSession.sql(text, frame=self.df)

    def _layer(self, select: str, where: str = "") -> None:
        """Wrap the query so far in ``SELECT select FROM (query) [WHERE where]``; every
        :data:`_LAYERS_PER_QUERY` layers, the query so far is handed to Spark and the next
        layers read its result; every :data:`_LAYERS_PER_PLAN` layers, that result is a
        checkpoint that ends the plan."""
        if self.query and self.layers % _LAYERS_PER_QUERY == 0:
            self.df = self._sql(self.query)
            self.query = ""
            if self.layers % _LAYERS_PER_PLAN == 0:
                self.df = self.df.localCheckpoint(eager=False)  # see _LAYERS_PER_PLAN
        inner = f"({self.query}) AS t{self.layers}" if self.query else "{frame}"
        self.layers += 1
        self.query = f"SELECT {select} FROM {inner}" + (f" WHERE {where}" if where else "")

    def _typed(self, value: str, column: str) -> str:
        """``value`` as the column's type; a date or timestamp outside what every reader can
        show (:data:`_READABLE`) becomes NULL, as a cast that fails does."""
        column_type = self.schema[column].type
        typed = f"try_cast({value} AS {type_name(column_type)})"
        readable = _READABLE.get(column_type)
        if readable is None:
            return typed
        function, (low, high) = readable
        return f"(CASE WHEN {function}({typed}) BETWEEN {low} AND {high} THEN {typed} END)"

    def _flush(self) -> None:
        if not self.pending:
            return
        projection = []
        for name in self.names:
            ref = self.refs[name.lower()]
            value = self.pending.get(name.lower())
            projection.append(ref if value is None else f"{value} AS {ref}")
        projection.extend(self.helpers)
        self.flushes += 1
        if not self.staged or self.flushes % _FUSED_PROJECTIONS == 0:
            projection.append(f"{self._stage()} AS `{_STAGE}`")
            self.pushable = False
        else:  # passed through: Spark fuses this projection with its neighbours
            projection.append(f"`{_STAGE}`")
            self.pushable = True
        self.staged = True
        self._layer(", ".join(projection))
        self.pending = {}

    def _barrier(self) -> None:
        """A projection that only recomputes the stage column: Spark pushes no filter through
        it. Below a DELETE's filter it stops the filter from being pushed through the
        deterministic projections under it, which would copy their expressions into it
        (statements of k nodes each would make a filter of k^3 nodes)."""
        columns = [*(self.refs[n.lower()] for n in self.names), *self.helpers]
        self._layer(", ".join([*columns, f"{self._stage()} AS `{_STAGE}`"]))
        self.pushable = False
        self.flushes = 0

    def _stage(self, helpers: bool = True) -> str:
        """The stage column, computed by every :data:`_FUSED_PROJECTIONS`-th projection: the
        partition id (never negative), computed so that it is non-deterministic and reads the
        previous stage column twice and every other column once more (in a branch that never
        runs).

        That keeps Spark from fusing across it, and whole-stage codegen then gives each group
        of projections its own method: Spark moves an operator's code into a method when its
        consumer reads every column it outputs (a projection only counts columns it reads
        twice; a null check would not do, the optimizer folds it away for non-nullable columns). Fused, 100 statements
        made one ~24-30 KB method, which C1 cannot compile ("out of virtual registers") and C2
        gave up on at 10M rows ("out of nodes"), so it ran interpreted: 6-7x a plain read.
        Non-deterministic projections also keep Spark from pushing a DELETE's filter down
        through them, which would copy every rewritten column's expression into it.
        """
        # The helpers too (unless they are being defined): a group that passes one on without
        # reading it, between the statements that test it, would otherwise be fused with its
        # neighbours.
        columns = ", ".join(
            [*(self.refs[n.lower()] for n in self.names), *(self.helpers if helpers else [])]
        )
        if not self.staged:
            return f"if(spark_partition_id() < 0, hash({columns}), spark_partition_id())"
        previous = f"`{_STAGE}`"
        return f"if(spark_partition_id() < 0 OR {previous} < 0, hash({columns}), {previous})"

    def _delete(self, matched: str) -> None:
        """Drop the rows ``matched`` (never NULL) selects, as they are before the pending values;
        or, with a deleted flag, set it on them (the pending values do not read it)."""
        if self.deleted_flag is None:
            if self.pushable:
                self._barrier()
            self._layer("*", f"NOT ({matched})")
            return
        lower = self.deleted_flag.lower()
        self.pending[lower] = f"({self.pending.get(lower, self.refs[lower])} OR {matched})"

    def _end_run(self) -> None:
        """Fold the point statements of the current run into one filter and the pending values."""
        run, self.run = self.run, None
        if run is None:
            return
        key = self.refs[run.key.lower()]
        key_type = self.schema[run.key].type
        if run.deleted:
            doomed = ", ".join(key_literal(k, key_type) for k in run.deleted)
            self._delete(f"coalesce({key} IN ({doomed}), FALSE)")
        for lower, (name, by_key) in run.updated.items():
            values = {k: self._typed(self.sql.compile(v), name) for k, v in by_key.items()}
            if len(values) == 1:
                ((only_key, value),) = values.items()
                guard = f"{key} = {key_literal(only_key, key_type)}"
            else:
                guard = f"{key} IN ({', '.join(key_literal(k, key_type) for k in values)})"
                pairs = ", ".join(f"{key_literal(k, key_type)}, {v}" for k, v in values.items())
                value = f"try_element_at(map({pairs}), {key})"
            current = self.pending.get(lower, self.refs[lower])
            self.pending[lower] = f"CASE WHEN {guard} THEN {value} ELSE {current} END"


class _KeyedRun:
    """Consecutive point statements on one key column: last value per key wins, in file order."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.deleted: dict[int | str, None] = {}  # an ordered set
        self.updated: dict[str, tuple[str, dict[int | str, exp.Expression]]] = {}

    def add(self, stmt: KeyedStatement) -> None:
        if stmt.kind == "delete":
            self.deleted.update(dict.fromkeys(stmt.keys))
            return
        if not stmt.keys:
            return  # WHERE key IN (NULL): matches nothing
        for name, value in stmt.values:
            _, by_key = self.updated.setdefault(name.lower(), (name, {}))
            for key in stmt.keys:
                by_key.pop(key, None)  # re-insert: the map lists keys in the order last set
                by_key[key] = value


# --- expressions -----------------------------------------------------------------------------


class _ExpressionCompiler:
    """Turns a checked sqlglot expression into Spark SQL text, node by node."""

    def __init__(self, schema: Schema, refs: dict[str, str], hashes: dict[str, str]) -> None:
        self.schema = schema
        self.refs = refs  # lower-cased column name -> quoted identifier
        self.hashes = hashes  # lower-cased column name -> its hash column, where it has one
        # Constants as the expression layer converted them (CheckedStatement.literals): a
        # literal is written as its value of the type the binder gave it, so Spark applies
        # lakectl's conversion rules, not its own implicit casts.
        self.literals: dict[int, Lit] = {}

    def compile(self, node: exp.Expression) -> str:
        constant = self.literals.get(id(node))
        if constant is not None:
            return typed_literal(constant)
        handler = COMPILERS.get(type(node))
        if handler is None:  # validate.RULES and COMPILERS disagree: a bug, not bad input
            raise AssertionError(f"no Spark translation for checked node {type(node).__name__}")
        return handler(self, node)

    def args(self, node: exp.Expression) -> str:
        """``this`` then ``expressions``, compiled and comma-separated (variadic functions)."""
        nodes = [node.this] if node.this is not None else []
        return ", ".join(self.compile(n) for n in [*nodes, *node.expressions])

    def column(self, node: exp.Column) -> str:
        found = self.schema.find(node.name)
        if found is None or found.name.lower() not in self.refs:
            raise AssertionError(f"checked column {node.name!r} is not in the table")
        return self.refs[found.name.lower()]

    def literal(self, node: exp.Literal) -> str:
        return string_literal(str(node.this)) if node.is_string else number_literal(node)

    def equality(self, node: exp.EQ | exp.NEQ) -> str:
        """``=`` or ``<>``; against a string literal, of a hashed column, the hashes first."""
        symbol = "=" if isinstance(node, exp.EQ) else "<>"
        match = string_equality(node)
        column = None if match is None else self.schema.find(match[0].name)
        hash_ref = None if column is None else self.hashes.get(column.name.lower())
        if match is None or hash_ref is None:
            return f"({self.compile(node.this)} {symbol} {self.compile(node.expression)})"
        column_ref, literal = self.compile(match[0]), self.literal(match[1])
        test = f"(({hash_ref} = hash({literal})) AND ({column_ref} = {literal}))"
        return test if symbol == "=" else f"(NOT {test})"

    def case(self, node: exp.Case) -> str:
        subject = None if node.this is None else self.compile(node.this)
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            test = self.compile(branch.this)
            condition = test if subject is None else f"({subject} = {test})"
            parts.append(f"WHEN {condition} THEN {self.compile(branch.args['true'])}")
        default = node.args.get("default")
        if len(parts) == 1:  # CASE without WHEN cannot be parsed; keep the type checker happy
            return "NULL" if default is None else self.compile(default)
        if default is not None:
            parts.append(f"ELSE {self.compile(default)}")
        return " ".join([*parts, "END"])

    def if_(self, node: exp.If) -> str:
        otherwise = node.args.get("false")
        tail = "" if otherwise is None else f" ELSE {self.compile(otherwise)}"
        condition, value = self.compile(node.this), self.compile(node.args["true"])
        return f"CASE WHEN {condition} THEN {value}{tail} END"

    def cast(self, node: exp.Cast) -> str:
        target = cast_target_type(node)
        if target is None:
            raise AssertionError("unchecked CAST target")
        return f"try_cast({self.compile(node.this)} AS {type_name(target)})"

    def trim(self, node: exp.Trim) -> str:
        chars = node.args.get("expression")
        position = node.args.get("position") or "BOTH"
        if position not in ("LEADING", "TRAILING", "BOTH"):
            raise AssertionError(f"unchecked trim position {position!r}")
        value = self.compile(node.this)
        if chars is None:
            function = {"LEADING": "ltrim", "TRAILING": "rtrim", "BOTH": "trim"}[position]
            return f"{function}({value})"
        return f"trim({position} {self.compile(chars)} FROM {value})"

    def pad(self, node: exp.Pad) -> str:
        fill = node.args.get("fill_pattern")
        function = "lpad" if node.args.get("is_left") else "rpad"
        pattern = "' '" if fill is None else self.compile(fill)
        return f"{function}({self.compile(node.this)}, {self.compile(node.expression)}, {pattern})"

    def locate(self, node: exp.StrPosition) -> str:
        position = node.args.get("position")
        start = 1 if position is None else integer_literal(position)
        searched = string_literal(str(node.args["substr"].this))
        return f"locate({searched}, {self.compile(node.this)}, {int(start or 0)})"

    def round(self, node: exp.Round) -> str:
        decimals = node.args.get("decimals")
        scale = 0 if decimals is None else integer_literal(decimals)
        return f"round({self.compile(node.this)}, {int(scale or 0)})"

    def concat_ws(self, node: exp.ConcatWs) -> str:
        separator, *values = node.expressions
        rendered = ", ".join(self.compile(v) for v in values)
        return f"concat_ws({string_literal(str(separator.this))}, {rendered})"

    def substring(self, node: exp.Substring) -> str:
        length = node.args.get("length")
        tail = "" if length is None else f", {self.compile(length)}"
        return f"substring({self.compile(node.this)}, {self.compile(node.args['start'])}{tail})"

    def replace(self, node: exp.Replace) -> str:
        replacement = node.args.get("replacement")
        tail = "" if replacement is None else f", {self.compile(replacement)}"
        return f"replace({self.compile(node.this)}, {self.compile(node.expression)}{tail})"


_Compiler = Callable[[_ExpressionCompiler, exp.Expression], str]


def _function(name: str) -> _Compiler:
    """``name(this, expressions...)``: unary and variadic functions."""
    return lambda c, n: f"{name}({c.args(n)})"


def _binary_function(name: str) -> _Compiler:
    return lambda c, n: f"{name}({c.compile(n.this)}, {c.compile(n.expression)})"


def _operator(symbol: str) -> _Compiler:
    return lambda c, n: f"({c.compile(n.this)} {symbol} {c.compile(n.expression)})"


def _like(symbol: str) -> _Compiler:
    """``LIKE``/``ILIKE`` (the pattern is a checked literal); with two or more ``%``, as the
    linear regular expression of :mod:`lakectl.updates.like` (Spark's own translation backtracks:
    cubic in the value's length for ``%a%a%b``). ``ILIKE`` lower-cases both sides, as Spark
    does."""

    def compile_like(c: _ExpressionCompiler, n: exp.Expression) -> str:
        value, pattern = c.compile(n.this), str(n.expression.this)
        if symbol == "ILIKE":
            value, pattern = f"lower({value})", pattern.lower()
        parsed = parse_like(pattern)
        if parsed.wildcards >= 2:
            result = f"({value} RLIKE {string_literal(linear_regex(parsed))})"
        else:
            result = f"({c.compile(n.this)} {symbol} {c.compile(n.expression)})"
        return f"(NOT {result})" if n.args.get("negate") else result

    return compile_like


def _between(c: _ExpressionCompiler, n: exp.Expression) -> str:
    value = c.compile(n.this)
    low, high = c.compile(n.args["low"]), c.compile(n.args["high"])
    return f"(({value} >= {low}) AND ({value} <= {high}))"


COMPILERS: dict[type[exp.Expression], _Compiler] = {
    exp.Column: _ExpressionCompiler.column,  # type: ignore[dict-item]
    exp.Literal: _ExpressionCompiler.literal,  # type: ignore[dict-item]
    exp.Boolean: lambda c, n: "TRUE" if n.this else "FALSE",
    exp.Null: lambda c, n: "NULL",
    exp.Paren: lambda c, n: f"({c.compile(n.this)})",
    # -(2147483648) is a bigint negated; -2147483648 written together would be an int literal
    exp.Neg: lambda c, n: f"(- ({c.compile(n.this)}))",
    exp.Not: lambda c, n: f"(NOT {c.compile(n.this)})",
    exp.And: _operator("AND"),
    exp.Or: _operator("OR"),
    exp.Add: _operator("+"),
    exp.Sub: _operator("-"),
    exp.Mul: _operator("*"),
    exp.Div: _operator("/"),
    exp.Mod: _operator("%"),
    exp.EQ: _ExpressionCompiler.equality,  # type: ignore[dict-item]
    exp.NEQ: _ExpressionCompiler.equality,  # type: ignore[dict-item]
    exp.LT: _operator("<"),
    exp.LTE: _operator("<="),
    exp.GT: _operator(">"),
    exp.GTE: _operator(">="),
    exp.NullSafeEQ: _operator("<=>"),
    exp.NullSafeNEQ: lambda c, n: f"(NOT ({c.compile(n.this)} <=> {c.compile(n.expression)}))",
    exp.Is: lambda c, n: f"({c.compile(n.this)} IS NULL)",  # the check allows only IS NULL
    exp.In: lambda c, n: (
        f"({c.compile(n.this)} IN ({', '.join(c.compile(e) for e in n.expressions)}))"
    ),
    exp.Between: _between,
    exp.Like: _like("LIKE"),
    exp.ILike: _like("ILIKE"),
    exp.Case: _ExpressionCompiler.case,  # type: ignore[dict-item]
    exp.If: _ExpressionCompiler.if_,  # type: ignore[dict-item]
    exp.Cast: _ExpressionCompiler.cast,  # type: ignore[dict-item]
    exp.TryCast: _ExpressionCompiler.cast,  # type: ignore[dict-item]
    exp.Coalesce: _function("coalesce"),
    exp.Nullif: _binary_function("nullif"),
    # string functions
    exp.Upper: _function("upper"),
    exp.Lower: _function("lower"),
    exp.Trim: _ExpressionCompiler.trim,  # type: ignore[dict-item]
    exp.Length: _function("length"),
    exp.Substring: _ExpressionCompiler.substring,  # type: ignore[dict-item]
    exp.Concat: _function("concat"),
    exp.DPipe: _binary_function("concat"),
    exp.ConcatWs: _ExpressionCompiler.concat_ws,  # type: ignore[dict-item]
    exp.Replace: _ExpressionCompiler.replace,  # type: ignore[dict-item]
    exp.Pad: _ExpressionCompiler.pad,  # type: ignore[dict-item]
    exp.Initcap: lambda c, n: f"initcap({c.compile(n.this)})",  # the check allows no delimiters
    exp.Reverse: _function("reverse"),
    exp.StrPosition: _ExpressionCompiler.locate,  # type: ignore[dict-item]
    # math functions
    exp.Abs: _function("abs"),
    exp.Round: _ExpressionCompiler.round,  # type: ignore[dict-item]
    exp.Floor: lambda c, n: f"floor({c.compile(n.this)})",
    exp.Ceil: lambda c, n: f"ceil({c.compile(n.this)})",
    exp.Sqrt: _function("sqrt"),
    exp.Pow: _binary_function("power"),
    exp.Greatest: _function("greatest"),
    exp.Least: _function("least"),
    exp.Sign: _function("signum"),
    # date functions
    exp.Year: _function("year"),
    exp.Month: _function("month"),
    exp.Day: _function("dayofmonth"),
    exp.DayOfMonth: _function("dayofmonth"),
    exp.TsOrDsAdd: _binary_function("date_add"),
    exp.DateDiff: _binary_function("datediff"),
    exp.TsOrDsToDate: lambda c, n: f"to_date({c.compile(n.this)})",
}

if set(COMPILERS) != set(RULES):  # pragma: no cover - caught by the test suite too
    raise ImportError("lakectl.updates: validate.RULES and compile.COMPILERS list different nodes")
