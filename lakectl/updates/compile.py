"""Compiling ``.updates`` statements into Spark column expressions: the Spark side of Type 7 SCD.

Each statement is re-checked (:mod:`lakectl.updates.validate`) and its sqlglot tree is walked into a
tree of ``pyspark.sql.functions`` calls: SQL text never reaches ``F.expr`` or ``spark.sql``, so
nothing outside the whitelist can run, and the same code works under Spark Connect.

Semantics: statements apply in order, each seeing the result of the ones before. An UPDATE is one
projection whose SET values are all computed from the row as it was before the statement (so
``SET a = b, b = a`` swaps); a DELETE is one filter. A WHERE that is NULL matches nothing.

Consecutive statements are fused into one projection while no statement reads a column that an
earlier one in the group wrote (SET values and WHERE then see the same row either way); a DELETE
that reads no written column filters before the pending projection. Runs of point statements on
one key column (:mod:`lakectl.updates.keyed`) become one hash-set test and a map lookup per
written column. This keeps the plan shallow and the generated code small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from lakectl.errors import BadInputError
from lakectl.table.schema import Schema
from lakectl.updates.keyed import KeyedStatement, keyed_form
from lakectl.updates.validate import (
    RULES,
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


def _build(
    df: DataFrame,
    checked: Sequence[CheckedStatement],
    schema: Schema,
    *,
    fuse: bool,
    deleted_flag: str | None = None,
) -> DataFrame:
    plan = _PlanBuilder(df, schema, deleted_flag)
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


class _PlanBuilder:
    """Accumulates fused projections and filters over ``df``."""

    def __init__(self, df: DataFrame, schema: Schema, deleted_flag: str | None = None) -> None:
        self.df = df
        self.schema = schema
        self.deleted_flag = deleted_flag
        self.columns = list(df.columns)  # one schema lookup: the column list never changes
        self.pending: dict[str, Column] = {}  # lower-cased name -> new value over self.df
        self.run: _KeyedRun | None = None  # point statements not yet folded into pending

    def add(self, stmt: CheckedStatement, *, fuse: bool) -> None:
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
        compiler = _ExpressionCompiler(self.schema)
        condition = None if stmt.where is None else compiler.compile(stmt.where)
        if stmt.kind == "delete":
            matched = F.lit(True) if condition is None else F.coalesce(condition, F.lit(False))
            self._delete(matched)
            return
        updated: dict[str, Column] = {}
        for name, value_node in stmt.assignments:
            value = compiler.compile(value_node).try_cast(self.schema[name].type)
            if condition is None:
                updated[name.lower()] = value
            else:  # CASE WHEN treats a NULL condition as false, as SQL's WHERE does
                current = self.pending.get(name.lower(), _column(name))
                updated[name.lower()] = F.when(condition, value).otherwise(current)
        self.pending.update(updated)

    def finish(self) -> DataFrame:
        self._end_run()
        self._flush()
        return self.df

    def _flush(self) -> None:
        if not self.pending:
            return
        projection = [
            self.pending[name.lower()].alias(name)
            if name.lower() in self.pending
            else _column(name)
            for name in self.columns
        ]
        self.df = self.df.select(*projection)
        self.pending = {}

    def _delete(self, matched: Column) -> None:
        """Drop the rows ``matched`` (never NULL) selects, as they are before the pending values;
        or, with a deleted flag, set it on them (the pending values do not read it)."""
        if self.deleted_flag is None:
            self.df = self.df.filter(~matched)
            return
        lower = self.deleted_flag.lower()
        self.pending[lower] = self.pending.get(lower, _column(self.deleted_flag)) | matched

    def _end_run(self) -> None:
        """Fold the point statements of the current run into one filter and the pending values."""
        run, self.run = self.run, None
        if run is None:
            return
        key = _column(run.key)
        key_type = self.schema[run.key].type

        def key_literal(value: int | str) -> Column:
            return F.lit(value).cast(key_type)

        if run.deleted:
            doomed = key.isin(*(key_literal(k) for k in run.deleted))
            self._delete(F.coalesce(doomed, F.lit(False)))
        compiler = _ExpressionCompiler(self.schema)
        for lower, (name, by_key) in run.updated.items():
            column_type = self.schema[name].type
            values = {k: compiler.compile(v).try_cast(column_type) for k, v in by_key.items()}
            if len(values) == 1:
                ((only_key, value),) = values.items()
                guard = key == key_literal(only_key)
            else:
                guard = key.isin(*(key_literal(k) for k in values))
                pairs = [c for k, v in values.items() for c in (key_literal(k), v)]
                value = F.try_element_at(F.create_map(*pairs), key)
            self.pending[lower] = F.when(guard, value).otherwise(
                self.pending.get(lower, _column(name))
            )


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


def _column(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


class _ExpressionCompiler:
    """Turns a checked sqlglot expression into a Spark :class:`Column`, node by node."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def compile(self, node: exp.Expression) -> Column:
        handler = COMPILERS.get(type(node))
        if handler is None:  # validate.RULES and COMPILERS disagree: a bug, not bad input
            raise AssertionError(f"no Spark translation for checked node {type(node).__name__}")
        return handler(self, node)

    def args(self, node: exp.Expression) -> list[Column]:
        """``this`` then ``expressions``, compiled (the layout of variadic functions)."""
        nodes = [node.this] if node.this is not None else []
        return [self.compile(n) for n in [*nodes, *node.expressions]]

    def column(self, node: exp.Column) -> Column:
        found = self.schema.find(node.name)
        return _column(found.name if found is not None else node.name)

    def literal(self, node: exp.Literal) -> Column:
        if node.is_string:
            return F.lit(str(node.this))
        value = literal_number(node)
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            value = Decimal(value)  # Spark SQL types such literals as decimal(n,0)
        return F.lit(value)

    def case(self, node: exp.Case) -> Column:
        subject = None if node.this is None else self.compile(node.this)
        result: Column | None = None
        for branch in node.args.get("ifs") or []:
            test = self.compile(branch.this)
            condition = test if subject is None else subject == test
            value = self.compile(branch.args["true"])
            result = F.when(condition, value) if result is None else result.when(condition, value)
        default = node.args.get("default")
        if result is None:  # CASE without WHEN cannot be parsed; keep the type checker happy
            return F.lit(None) if default is None else self.compile(default)
        return result if default is None else result.otherwise(self.compile(default))

    def if_(self, node: exp.If) -> Column:
        result = F.when(self.compile(node.this), self.compile(node.args["true"]))
        otherwise = node.args.get("false")
        return result if otherwise is None else result.otherwise(self.compile(otherwise))

    def cast(self, node: exp.Cast) -> Column:
        target = cast_target_type(node)
        if target is None:
            raise AssertionError("unchecked CAST target")
        return self.compile(node.this).try_cast(target)

    def trim(self, node: exp.Trim) -> Column:
        chars = node.args.get("expression")
        trim_chars = None if chars is None else self.compile(chars)
        position = node.args.get("position")
        function = {"LEADING": F.ltrim, "TRAILING": F.rtrim}.get(position or "", F.trim)
        return function(self.compile(node.this), trim_chars)

    def pad(self, node: exp.Pad) -> Column:
        fill = node.args.get("fill_pattern")
        function = F.lpad if node.args.get("is_left") else F.rpad
        return function(
            self.compile(node.this),
            self.compile(node.expression),
            F.lit(" ") if fill is None else self.compile(fill),
        )

    def locate(self, node: exp.StrPosition) -> Column:
        position = node.args.get("position")
        start = 1 if position is None else integer_literal(position)
        return F.locate(str(node.args["substr"].this), self.compile(node.this), start or 0)

    def round(self, node: exp.Round) -> Column:
        decimals = node.args.get("decimals")
        scale = 0 if decimals is None else integer_literal(decimals)
        return F.round(self.compile(node.this), scale or 0)

    def concat_ws(self, node: exp.ConcatWs) -> Column:
        separator, *values = node.expressions
        return F.concat_ws(str(separator.this), *(self.compile(v) for v in values))

    def substring(self, node: exp.Substring) -> Column:
        length = node.args.get("length")
        return F.substr(
            self.compile(node.this),
            self.compile(node.args["start"]),
            None if length is None else self.compile(length),
        )

    def replace(self, node: exp.Replace) -> Column:
        replacement = node.args.get("replacement")
        return F.replace(
            self.compile(node.this),
            self.compile(node.expression),
            None if replacement is None else self.compile(replacement),
        )


def _unary(
    function: Callable[[Column], Column],
) -> Callable[[_ExpressionCompiler, exp.Expression], Column]:
    return lambda c, n: function(c.compile(n.this))


def _binary(
    function: Callable[[Column, Column], Column],
) -> Callable[[_ExpressionCompiler, exp.Expression], Column]:
    return lambda c, n: function(c.compile(n.this), c.compile(n.expression))


def _variadic(
    function: Callable[..., Column],
) -> Callable[[_ExpressionCompiler, exp.Expression], Column]:
    return lambda c, n: function(*c.args(n))


def _like(
    function: Callable[[Column, Column], Column],
) -> Callable[[_ExpressionCompiler, exp.Expression], Column]:
    def compile_like(c: _ExpressionCompiler, n: exp.Expression) -> Column:
        result = function(c.compile(n.this), c.compile(n.expression))
        return ~result if n.args.get("negate") else result

    return compile_like


_Compiler = Callable[[_ExpressionCompiler, exp.Expression], Column]

COMPILERS: dict[type[exp.Expression], _Compiler] = {
    exp.Column: _ExpressionCompiler.column,  # type: ignore[dict-item]
    exp.Literal: _ExpressionCompiler.literal,  # type: ignore[dict-item]
    exp.Boolean: lambda c, n: F.lit(bool(n.this)),
    exp.Null: lambda c, n: F.lit(None),
    exp.Paren: lambda c, n: c.compile(n.this),
    exp.Neg: _unary(lambda x: -x),
    exp.Not: _unary(lambda x: ~x),
    exp.And: _binary(lambda a, b: a & b),
    exp.Or: _binary(lambda a, b: a | b),
    exp.Add: _binary(lambda a, b: a + b),
    exp.Sub: _binary(lambda a, b: a - b),
    exp.Mul: _binary(lambda a, b: a * b),
    exp.Div: _binary(lambda a, b: a / b),
    exp.Mod: _binary(lambda a, b: a % b),
    exp.EQ: _binary(lambda a, b: a == b),
    exp.NEQ: _binary(lambda a, b: a != b),
    exp.LT: _binary(lambda a, b: a < b),
    exp.LTE: _binary(lambda a, b: a <= b),
    exp.GT: _binary(lambda a, b: a > b),
    exp.GTE: _binary(lambda a, b: a >= b),
    exp.NullSafeEQ: _binary(lambda a, b: a.eqNullSafe(b)),
    exp.NullSafeNEQ: _binary(lambda a, b: ~a.eqNullSafe(b)),
    exp.Is: lambda c, n: c.compile(n.this).isNull(),  # the check allows only IS NULL
    exp.In: lambda c, n: c.compile(n.this).isin(*(c.compile(e) for e in n.expressions)),
    exp.Between: lambda c, n: c.compile(n.this).between(
        c.compile(n.args["low"]), c.compile(n.args["high"])
    ),
    exp.Like: _like(F.like),
    exp.ILike: _like(F.ilike),
    exp.Case: _ExpressionCompiler.case,  # type: ignore[dict-item]
    exp.If: _ExpressionCompiler.if_,  # type: ignore[dict-item]
    exp.Cast: _ExpressionCompiler.cast,  # type: ignore[dict-item]
    exp.TryCast: _ExpressionCompiler.cast,  # type: ignore[dict-item]
    exp.Coalesce: _variadic(F.coalesce),
    exp.Nullif: _binary(F.nullif),
    # string functions
    exp.Upper: _unary(F.upper),
    exp.Lower: _unary(F.lower),
    exp.Trim: _ExpressionCompiler.trim,  # type: ignore[dict-item]
    exp.Length: _unary(F.length),
    exp.Substring: _ExpressionCompiler.substring,  # type: ignore[dict-item]
    exp.Concat: _variadic(F.concat),
    exp.DPipe: _binary(lambda a, b: F.concat(a, b)),
    exp.ConcatWs: _ExpressionCompiler.concat_ws,  # type: ignore[dict-item]
    exp.Replace: _ExpressionCompiler.replace,  # type: ignore[dict-item]
    exp.Pad: _ExpressionCompiler.pad,  # type: ignore[dict-item]
    exp.Initcap: _unary(F.initcap),
    exp.Reverse: _unary(F.reverse),
    exp.StrPosition: _ExpressionCompiler.locate,  # type: ignore[dict-item]
    # math functions
    exp.Abs: _unary(F.abs),
    exp.Round: _ExpressionCompiler.round,  # type: ignore[dict-item]
    exp.Floor: _unary(F.floor),
    exp.Ceil: _unary(F.ceil),
    exp.Sqrt: _unary(F.sqrt),
    exp.Pow: _binary(F.pow),
    exp.Greatest: _variadic(F.greatest),
    exp.Least: _variadic(F.least),
    exp.Sign: _unary(F.signum),
    # date functions
    exp.Year: _unary(F.year),
    exp.Month: _unary(F.month),
    exp.Day: _unary(F.dayofmonth),
    exp.DayOfMonth: _unary(F.dayofmonth),
    exp.TsOrDsAdd: _binary(F.date_add),
    exp.DateDiff: _binary(F.datediff),
    exp.TsOrDsToDate: _unary(F.to_date),
}

if set(COMPILERS) != set(RULES):  # pragma: no cover - caught by the test suite too
    raise ImportError("lakectl.updates: validate.RULES and compile.COMPILERS list different nodes")
