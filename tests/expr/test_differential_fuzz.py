"""Property-based differential test: random typed conditions over a table with every column
type, compiled by the Spark and the Arrow back ends from one bound tree, give the same value
on every row (or both fail); DuckDB, given the same bound tree
(:mod:`tests.support.duck_expr`), is a third opinion on the conditions whose semantics it shares.

The seed is fixed; ``LAKECTL_FUZZ_EXAMPLES`` raises the budget (``make fuzz``)."""

from __future__ import annotations

import os
from typing import Any

from expr_tables import SCHEMA, arrow_table, spark_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakectl.arrow.compile_expr import arrow_expression
from lakectl.errors import LakectlError
from lakectl.expr import Node, bind_where
from lakectl.spark.compile_expr import spark_column
from tests.support.duck_expr import DuckTable, duckdb_opinions, duckdb_sql

EXAMPLES = int(os.environ.get("LAKECTL_FUZZ_EXAMPLES", "6"))
PER_EXAMPLE = 8

INTEGERS = [
    "id",
    "n",
    "sm",
    "0",
    "1",
    "-1",
    "2",
    "32767",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "'2'",
]
DOUBLES = [
    "d",
    "f",
    "0.0",
    "-0.0",
    "1.5",
    "1e10",
    "3.4e38",
    "CAST('NaN' AS double)",
    "CAST('-Infinity' AS double)",
    "'NaN'",
]
DECIMALS = ["dec", "1.01", "2.5", "99999999.99", "0.005"]
STRINGS = ["s", "'2'", "' 2'", "''", "'x''y'", "'02'", "'X'"]
DATES = ["dt", "'2024-01-05'", "'0001-01-01'"]
TIMESTAMPS = ["ts", "'2024-01-05 10:00:00'", "'2024-01-05 10:00:00 +02:00'", "dt"]


def _numbers() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(INTEGERS + DOUBLES + DECIMALS)

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        pair = st.tuples(inner, st.sampled_from(["+", "-", "*", "/"]), inner)
        return st.one_of(
            pair.map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
            st.tuples(st.sampled_from(INTEGERS[:7]), st.sampled_from(["0", "3", "-2"])).map(
                lambda p: f"({p[0]} % {p[1]})"
            ),
            inner.map(lambda x: f"abs({x})"),
            inner.map(lambda x: f"-({x})"),
            st.tuples(inner, inner).map(lambda p: f"coalesce({p[0]}, {p[1]})"),
            st.tuples(_conditions_leaf(), inner, inner).map(
                lambda p: f"CASE WHEN {p[0]} THEN {p[1]} ELSE {p[2]} END"
            ),
            inner.map(lambda x: f"CAST({x} AS double)"),
            st.sampled_from(
                [
                    "floor(dec)",
                    "ceil(dec)",
                    "round(dec, 1)",
                    "length(s)",
                    "year(dt)",
                    "datediff(dt, '2024-01-01')",
                    "sign(d)",
                    "sqrt(d)",
                ]
            ),
        )

    return st.recursive(leaf, grow, max_leaves=4)


def _strings() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(STRINGS)

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            inner.map(lambda x: f"upper({x})"),
            inner.map(lambda x: f"lower({x})"),
            inner.map(lambda x: f"trim({x})"),
            st.tuples(inner, inner).map(lambda p: f"concat({p[0]}, {p[1]})"),
            st.tuples(inner, st.integers(-3, 3), st.integers(-1, 3)).map(
                lambda p: f"substring({p[0]}, {p[1]}, {p[2]})"
            ),
            inner.map(lambda x: f"replace({x}, '2', 'z')"),
            inner.map(lambda x: f"lpad({x}, 3, '*')"),
        )

    return st.recursive(leaf, grow, max_leaves=3)


def _conditions_leaf() -> st.SearchStrategy[str]:
    ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"])
    numbers = st.sampled_from(INTEGERS + DOUBLES + DECIMALS)
    return st.one_of(
        st.tuples(numbers, ops, numbers).map(" ".join),
        st.tuples(st.sampled_from(STRINGS), ops, st.sampled_from(STRINGS)).map(" ".join),
        st.tuples(st.sampled_from(DATES), ops, st.sampled_from(DATES)).map(" ".join),
        st.tuples(st.sampled_from(TIMESTAMPS), ops, st.sampled_from(TIMESTAMPS)).map(" ".join),
        st.sampled_from(["b", "b IS NULL", "s IS NOT NULL", "s LIKE '%2'", "s ILIKE 'x%'"]),
    )


def _conditions() -> st.SearchStrategy[str]:
    ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"])
    numbers, strings = _numbers(), _strings()
    lists = st.lists(st.sampled_from(["0", "1", "2", "-5", "NULL", "1.5"]), min_size=1, max_size=4)
    leaf = st.one_of(
        _conditions_leaf(),
        st.tuples(numbers, ops, numbers).map(" ".join),
        st.tuples(strings, ops, strings).map(" ".join),
        st.tuples(numbers, lists, st.booleans()).map(
            lambda p: f"{p[0]} {'NOT ' if p[2] else ''}IN ({', '.join(p[1])})"
        ),
        st.tuples(numbers, numbers, numbers).map(lambda p: f"{p[0]} BETWEEN {p[1]} AND {p[2]}"),
        st.tuples(strings, st.sampled_from(["'%2'", "'_2'", "'x%'", "'%'"])).map(
            lambda p: f"{p[0]} LIKE {p[1]}"
        ),
    )

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            inner.map(lambda x: f"NOT ({x})"),
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda p: f"({p[0]}) {p[1]} ({p[2]})"
            ),
        )

    return st.recursive(leaf, grow, max_leaves=3)


def _arrow_values(table: Any, conditions: dict[str, Any]) -> dict[str, list[Any]]:
    import pyarrow.dataset as ds

    result = ds.dataset(table).to_table(columns=conditions)
    return {name: result.column(name).to_pylist() for name in conditions}


def _spark_values(frame: Any, conditions: dict[str, Any]) -> dict[str, list[Any]]:
    rows = frame.select(*[c.alias(n) for n, c in conditions.items()]).collect()
    return {name: [row[name] for row in rows] for name in conditions}


def _both(frame: Any, table: Any, where: str) -> tuple[Any, Any]:
    """Each engine's values of one condition, or the kind of failure."""
    node = bind_where(where, SCHEMA)
    try:
        arrow = _arrow_values(table, {"c": arrow_expression(node, where)})["c"]
    except Exception as exc:
        arrow = ("fails", "overflow" in str(exc))
    try:
        spark = _spark_values(frame, {"c": spark_column(node)})["c"]
    except Exception as exc:
        spark = ("fails", "overflow" in str(exc))
    return spark, arrow


def _bound(wheres: list[str], counts: dict[str, int]) -> dict[str, tuple[str, Node]]:
    """The conditions the binder accepts, by column name (it refuses for every engine)."""
    bound = {}
    for i, where in enumerate(wheres):
        try:
            bound[f"c{i}"] = (where, bind_where(where, SCHEMA))
            counts["bound"] += 1
        except LakectlError:
            counts["refused"] += 1
    return bound


def _agrees_with_duckdb(
    table: DuckTable,
    bound: dict[str, tuple[str, Node]],
    ours: dict[str, Any],
    counts: dict[str, int],
) -> None:
    """DuckDB's opinion (:mod:`tests.support.duck_expr`) on the conditions inside the subset
    whose semantics it shares: each of ``ours`` (values or the kind of failure) is one DuckDB
    accepts."""
    opinions = duckdb_opinions(table, {name: node for name, (_, node) in bound.items()})
    counts["duckdb"] += len(opinions)
    for name, accepted in opinions.items():
        where, node = bound[name]
        assert ours[name] in accepted, (where, duckdb_sql(node), ours[name], accepted)


def _settings() -> Any:
    return settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


def test_spark_arrow_and_duckdb_agree_on_random_conditions(spark) -> None:  # type: ignore[no-untyped-def]
    frame = spark_frame(spark).orderBy("id")  # not cached (see test_engine_agreement)
    table = arrow_table()
    counts = {"bound": 0, "refused": 0, "duckdb": 0}

    @_settings()
    @given(st.lists(_conditions(), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def check(wheres: list[str]) -> None:
        bound = _bound(wheres, counts)
        if not bound:
            return
        try:
            arrow = _arrow_values(
                table, {n: arrow_expression(node, w) for n, (w, node) in bound.items()}
            )
            spark_values = _spark_values(frame, {n: spark_column(b[1]) for n, b in bound.items()})
        except Exception:
            ours = {}
            for name, (where, _) in bound.items():
                spark_one, arrow_one = _both(frame, table, where)
                assert spark_one == arrow_one, where
                ours[name] = spark_one
            _agrees_with_duckdb(duck, bound, ours, counts)
            return
        for name, (where, _) in bound.items():
            assert spark_values[name] == arrow[name], where
        _agrees_with_duckdb(duck, bound, spark_values, counts)

    duck = DuckTable(table)
    try:
        check()
    finally:
        duck.close()
    assert counts["bound"] > counts["refused"]
    assert counts["duckdb"] > counts["bound"] // 2  # most conditions have a DuckDB opinion


def test_arrow_and_duckdb_agree_on_random_conditions() -> None:
    """The same differential without a JVM, with four times the examples: the Arrow engine
    against DuckDB (Spark against Arrow is the test above)."""
    table = arrow_table()
    counts = {"bound": 0, "refused": 0, "duckdb": 0}

    @settings(_settings(), max_examples=4 * EXAMPLES)
    @given(st.lists(_conditions(), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def check(wheres: list[str]) -> None:
        bound = _bound(wheres, counts)
        ours: dict[str, Any] = {}
        for name, (where, node) in bound.items():
            try:
                ours[name] = _arrow_values(table, {"c": arrow_expression(node, where)})["c"]
            except Exception as exc:
                ours[name] = ("fails", "overflow" in str(exc))
        _agrees_with_duckdb(duck, bound, ours, counts)

    duck = DuckTable(table)
    try:
        check()
    finally:
        duck.close()
    assert counts["duckdb"] > counts["bound"] // 2
