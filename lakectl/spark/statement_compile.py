"""Applying ``.updates`` statements in Spark: the Spark side of Type 7 SCD.

Each statement is re-checked (:mod:`lakectl.expr.check`), which binds its SET values and
WHERE with the expression layer (:mod:`lakectl.expr.bind`: the coercion rules every engine
applies), and the bound trees become Spark ``Column`` expressions with the expression layer's
own rules (:func:`lakectl.spark.compile_expr.spark_column`): integer overflow and a SET value
that does not fit its column are errors, as in the Arrow engine. Nothing a statement says
reaches Spark as SQL text.

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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakectl.errors import BadInputError
from lakectl.expr.check import CheckedStatement
from lakectl.expr.convert import READABLE
from lakectl.expr.tree import Call, Col, Lit, Node, walk
from lakectl.spark.compile_expr import SPARK_OPERATIONS, spark_column
from lakectl.table.schema import Schema
from lakectl.updates.keyed import KeyedStatement, keyed_form
from lakectl.updates.prefilter import hashed_columns, string_equality
from lakectl.updates.validate import check_stored_statement, validate_statement

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakectl.updates.statements import Statement

__all__ = ["analyze_statements", "apply_statements", "check_compilable", "validate_statement"]


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
    in the plan, or a nullable one non-nullable). Raises :class:`BadInputError` for a statement
    that fails the safety check or that Spark cannot analyze, naming its file and line. A value
    that overflows (or does not fit the column a SET stores it in) fails the read that meets it
    with the overflow error (:func:`lakectl.errors.engine_error` names it).

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
    """Check with Spark's analyzer that ``statements`` apply to a table of ``schema`` (no data read)."""
    empty = spark.createDataFrame([], schema.to_ddl())
    apply_statements(empty, statements, schema)


def check_compilable(statements: Sequence[Statement], schema: Schema) -> None:
    """Check without Spark that every operation of ``statements``' bound trees has a Spark form
    (at install: a statement a reader could not apply must never be installed)."""
    for stmt in statements:
        checked = check_stored_statement(stmt, schema)
        roots = [value for _, value in checked.values]
        if checked.condition is not None:
            roots.append(checked.condition)
        for node in (n for root in roots for n in walk(root)):
            if isinstance(node, Call) and node.op not in SPARK_OPERATIONS:
                raise AssertionError(f"no Spark form for {node.op}")


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


def _ref(name: str) -> Column:
    """A column of the current layer by its exact name (any characters)."""
    return F.col("`" + name.replace("`", "``") + "`")


# --- the plan --------------------------------------------------------------------------------


# How Spark reads a date or timestamp as the numbers of :data:`lakectl.expr.convert.READABLE`.
_AS_NUMBER = {"date": F.unix_date, "timestamp": F.unix_micros}
# A column that keeps groups of projections apart (see :meth:`_PlanBuilder._stage`).
_STAGE = "__lakectl_stage"
# The names of the hashes of string columns (see :mod:`lakectl.updates.prefilter`).
_HASH = "__lakectl_hash_"
# Projections Spark may fuse into one generated method. At 10M rows and 100 statements a read
# cost 1.51x a plain one with 1 (a method call per projection), 1.40x with 3 and 1.47x with 6
# (bigger methods wait longer for C2); 24-30 KB methods (all fused) never got compiled.
_FUSED_PROJECTIONS = 3
# Spark's optimizer and planner walk a plan recursively (TreeNode.clone, transforms): the few
# hundred layers of 2,000 statements that do not fuse overflowed the driver's thread stack
# (StackOverflowError). Every this many layers the plan is cut: the layers so far become a
# local checkpoint (lazy: computed once, by the read's own job, and kept by the executors for
# the layers above), so no plan Spark optimizes holds more than this many layers.
_LAYERS_PER_PLAN = 160


class _PlanBuilder:
    """Accumulates fused projections (a Column per rewritten column) and filters over ``df``,
    one DataFrame layer each."""

    def __init__(
        self,
        df: DataFrame,
        schema: Schema,
        deleted_flag: str | None = None,
        hashed: Sequence[str] = (),
    ) -> None:
        self.schema = schema
        self.deleted_flag = deleted_flag
        self.df = df
        self.names = list(df.columns)  # one schema lookup: the column list never changes
        self.by_lower = {n.lower(): n for n in self.names}
        # Hashes of string columns (prefilter): computed by the first layer, passed on by every
        # layer, dropped from the result; none where a column of the input has a hash's name.
        if any(n.lower().startswith(_HASH) for n in self.names):
            hashed = ()
        self.hashes = {n.lower(): f"{_HASH}{i}" for i, n in enumerate(hashed)}
        self.helpers = list(self.hashes.values())
        self.pending: dict[str, Column] = {}  # lower-cased name -> new value over the last layer
        self.layers = 0
        self.flushes = 0
        self.staged = False  # does the last layer carry the stage column (see _stage)?
        self.pushable = False  # is the top projection one a filter would be pushed through?
        self.run: _KeyedRun | None = None  # point statements not yet folded into pending
        if self.hashes:
            # NULL for a NULL value, so that a test of it is NULL as ``col = 'lit'`` is. With
            # the stage column: no DELETE's filter is pushed below this layer (which would copy
            # the hash into the filter, once per DELETE).
            values = [
                F.when(_ref(self.by_lower[n]).isNull(), F.lit(None).cast("int"))
                .otherwise(F.hash(_ref(self.by_lower[n])))
                .alias(h)
                for n, h in self.hashes.items()
            ]
            stage = self._stage(helpers=False).alias(_STAGE)
            self._layer(lambda df: df.select("*", *values, stage))
            self.staged = True

    def current(self, lower: str) -> Column:
        """The value of a column after the statements so far."""
        pending = self.pending.get(lower)
        return _ref(self.by_lower[lower]) if pending is None else pending

    def column(self, node: Node) -> Column:
        """A bound tree over the last layer; string tests of hashed columns compare hashes
        first (the same three-valued result)."""
        if self.hashes:
            node = _with_hashes(node, self.hashes, {})
        return spark_column(node)

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
        condition = None if stmt.condition is None else self.column(stmt.condition)
        if stmt.kind == "delete":
            self._delete(F.lit(True) if condition is None else F.coalesce(condition, F.lit(False)))
            return
        updated: dict[str, Column] = {}
        for name, node in stmt.values:
            value = self._readable(self.column(node), node)
            lower = name.lower()
            if condition is None:
                updated[lower] = value
            else:  # CASE WHEN treats a NULL condition as false, as SQL's WHERE does
                updated[lower] = F.when(condition, value).otherwise(self.current(lower))
        self.pending.update(updated)

    def finish(self) -> DataFrame:
        self._end_run()
        self._flush()
        if not self.staged:
            return self.df
        # The filter keeps the stage columns alive (it never drops a row).
        kept = self.df.where(F.col(_STAGE) >= 0)
        return kept.select(*(_ref(n) for n in self.names))

    def _layer(self, make: Callable[[DataFrame], DataFrame]) -> None:
        """Make ``make(last layer)`` (one more operator) the last layer; every
        :data:`_LAYERS_PER_PLAN` layers, the layers so far first become a checkpoint that ends
        the plan (the Columns name their inputs, so they apply to it alike)."""
        if self.layers and self.layers % _LAYERS_PER_PLAN == 0:
            self.df = self.df.localCheckpoint(eager=False)  # see _LAYERS_PER_PLAN
        self.df = make(self.df)
        self.layers += 1

    def _readable(self, value: Column, node: Node) -> Column:
        """A SET value of a date or timestamp computed from data: outside what every reader
        can show (:data:`lakectl.expr.convert.READABLE`) it becomes NULL."""
        if node.type not in READABLE or not isinstance(node, Call):
            return value
        low, high = READABLE[node.type]
        return F.when(_AS_NUMBER[node.type](value).between(low, high), value)

    def _flush(self) -> None:
        if not self.pending:
            return
        projection = [
            _ref(n) if n.lower() not in self.pending else self.pending[n.lower()].alias(n)
            for n in self.names
        ]
        projection.extend(F.col(h) for h in self.helpers)
        self.flushes += 1
        if not self.staged or self.flushes % _FUSED_PROJECTIONS == 0:
            projection.append(self._stage().alias(_STAGE))
            self.pushable = False
        else:  # passed through: Spark fuses this projection with its neighbours
            projection.append(F.col(_STAGE))
            self.pushable = True
        self._project(projection)
        self.staged = True
        self.pending = {}

    def _project(self, columns: list[Column]) -> None:
        self._layer(lambda df: df.select(*columns))

    def _barrier(self) -> None:
        """A projection that only recomputes the stage column: Spark pushes no filter through
        it. Below a DELETE's filter it stops the filter from being pushed through the
        deterministic projections under it, which would copy their expressions into it
        (statements of k nodes each would make a filter of k^3 nodes)."""
        columns = [*(_ref(n) for n in self.names), *(F.col(h) for h in self.helpers)]
        self._project([*columns, self._stage().alias(_STAGE)])
        self.pushable = False
        self.flushes = 0

    def _stage(self, helpers: bool = True) -> Column:
        """The stage column, computed by every :data:`_FUSED_PROJECTIONS`-th projection: the
        partition id (never negative), computed so that it is non-deterministic and reads the
        previous stage column twice and every other column once more (in a branch that never
        runs).

        That keeps Spark from fusing across it, and whole-stage codegen then gives each group
        of projections its own method: Spark moves an operator's code into a method when its
        consumer reads every column it outputs (a projection only counts columns it reads
        twice; a null check would not do, the optimizer folds it away for non-nullable
        columns). Fused, 100 statements made one ~24-30 KB method, which C1 cannot compile
        ("out of virtual registers") and C2 gave up on at 10M rows ("out of nodes"), so it ran
        interpreted: 6-7x a plain read. Non-deterministic projections also keep Spark from
        pushing a DELETE's filter down through them, which would copy every rewritten column's
        expression into it.
        """
        # The helpers too (unless they are being defined): a group that passes one on without
        # reading it, between the statements that test it, would otherwise be fused with its
        # neighbours.
        columns = [*(_ref(n) for n in self.names), *(F.col(h) for h in self.helpers if helpers)]
        partition = F.spark_partition_id()
        if not self.staged:
            return F.when(partition < 0, F.hash(*columns)).otherwise(partition)
        previous = F.col(_STAGE)
        return F.when((partition < 0) | (previous < 0), F.hash(*columns)).otherwise(previous)

    def _delete(self, matched: Column) -> None:
        """Drop the rows ``matched`` (never NULL) selects, as they are before the pending values;
        or, with a deleted flag, set it on them (the pending values do not read it)."""
        if self.deleted_flag is None:
            if self.pushable:
                self._barrier()
            self._layer(lambda df: df.where(~matched))
            return
        lower = self.deleted_flag.lower()
        self.pending[lower] = self.current(lower) | matched

    def _end_run(self) -> None:
        """Fold the point statements of the current run into one filter and the pending values."""
        run, self.run = self.run, None
        if run is None:
            return
        key = Col(self.schema[run.key].type, self.schema[run.key].name)
        if run.deleted:
            doomed = spark_column(Call("boolean", "in", (key,), (tuple(run.deleted), False, ())))
            self._delete(F.coalesce(doomed, F.lit(False)))
        key_column = spark_column(key)
        for lower, by_key in run.updated.items():
            if len(by_key) == 1:
                ((only, node),) = by_key.items()
                guard = spark_column(Call("boolean", "eq", (key, Lit(key.type, only))))
                value = spark_column(node)
            else:
                guard = spark_column(Call("boolean", "in", (key,), (tuple(by_key), False, ())))
                pairs = [
                    part
                    for k, node in by_key.items()
                    for part in (spark_column(Lit(key.type, k)), spark_column(node))
                ]
                value = F.try_element_at(F.create_map(*pairs), key_column)
            self.pending[lower] = F.when(guard, value).otherwise(self.current(lower))


class _KeyedRun:
    """Consecutive point statements on one key column: last value per key wins, in file order."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.deleted: dict[int | str, None] = {}  # an ordered set
        self.updated: dict[str, dict[int | str, Lit]] = {}  # lower-cased column -> key -> value

    def add(self, stmt: KeyedStatement) -> None:
        if stmt.kind == "delete":
            self.deleted.update(dict.fromkeys(stmt.keys))
            return
        if not stmt.keys:
            return  # WHERE key IN (NULL): matches nothing
        for name, value in stmt.values:
            by_key = self.updated.setdefault(name.lower(), {})
            for key in stmt.keys:
                by_key.pop(key, None)  # re-insert: the map lists keys in the order last set
                by_key[key] = value


# --- string tests of hashed columns ----------------------------------------------------------


def _with_hashes(node: Node, hashes: dict[str, str], done: dict[int, Node]) -> Node:
    """``node`` with every ``col = 'lit'`` / ``col <> 'lit'`` of a hashed column written
    ``(hash_col = hash('lit') AND col = 'lit')`` (negated for ``<>``): an integer test that
    rejects almost every row without reading the string; the string test decides where hashes
    collide, and a NULL column gives NULL as before."""
    if not isinstance(node, Call):
        return node
    known = done.get(id(node))
    if known is not None:
        return known
    result: Node
    match = string_equality(node)
    hashed = None if match is None else hashes.get(match[0].name.lower())
    if match is not None and hashed is not None:
        column, literal = match
        same_hash = Call("boolean", "eq", (Col("int", hashed), Call("int", "hash", (literal,))))
        test = Call("boolean", "and", (same_hash, Call("boolean", "eq", (column, literal))))
        result = test if node.op == "eq" else Call("boolean", "not", (test,))
    else:
        args = tuple(_with_hashes(a, hashes, done) for a in node.args)
        same = all(a is b for a, b in zip(args, node.args, strict=True))
        result = node if same else Call(node.type, node.op, args, node.param)
    done[id(node)] = result
    return result
