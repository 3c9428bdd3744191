"""IN lists of 30,000 items (what the statement limits let through) on the Spark engine: as a
Type 7 statement (compiled to one ``IN``, which Spark's optimizer turns into a hash set, not a
chain of ORs that would overflow its recursion) and as a read's ``--where``, the same rows as
DuckDB with SQL's NULL rules."""

from __future__ import annotations

from collections import Counter

import duckdb
import pyarrow as pa
import pytest

from lakectl.spark.statement_compile import apply_statements
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

SCHEMA = parse_schema("id bigint, name string, score double")
ROWS = [
    {
        "id": None if i % 7 == 3 else i * 3,
        "name": None if i % 11 == 5 else f"{i * 13:x}",
        "score": float(i),
    }
    for i in range(2000)
]


def _ints(count: int) -> str:
    return ", ".join(str(i * 2) for i in range(count))


def _strings(count: int) -> str:
    return ",".join(f"'{i * 7:x}'" for i in range(count))  # hex: 30,000 fit one statement


INTS, STRINGS = _ints(30_000), _strings(30_000)
INTS_NULL = INTS + ", NULL"


def _duckdb(statements: list[str], where: str | None = None) -> Counter:
    live = pa.Table.from_pylist(ROWS, schema=pa.schema(  # noqa: F841 (DuckDB's)
        [("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())]
    ))  # fmt: skip
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t AS SELECT * FROM live")
    for statement in statements:
        duck.execute(statement)
    query = "SELECT id, name, score FROM t" + (f" WHERE {where}" if where else "")
    return Counter(duck.sql(query).fetchall())


def _frame(spark):
    return spark.createDataFrame([tuple(r.values()) for r in ROWS], SCHEMA.to_ddl())


def test_statements_with_large_in_lists_equal_duckdb(spark):
    """At the largest size the limits let through (a shorter list is the same single ``IN``
    with fewer items)."""
    statements = [
        f"UPDATE t SET score = -1 WHERE name NOT IN ({STRINGS})",
        f"DELETE FROM t WHERE id IN ({INTS}, NULL) AND score > 100",
        f"DELETE FROM t WHERE id NOT IN ({INTS_NULL})",
    ]
    parsed = parse_updates_text(";\n".join(statements) + ";\n", "big.updates", None, SCHEMA)
    got = apply_statements(_frame(spark), parsed.statements, SCHEMA).collect()
    want = _duckdb(statements)
    assert Counter(tuple(r) for r in got) == want
    assert want  # the rows kept where the first DELETE found nothing and the list has a NULL


@pytest.mark.parametrize(
    "where",
    [f"id IN ({INTS})", f"id NOT IN ({INTS_NULL})", f"name NOT IN ({STRINGS}) AND score > 1000"],
)
def test_a_30000_item_where_equals_duckdb(spark, where):
    from pyspark.sql import functions as F

    got = _frame(spark).where(F.expr(where)).collect()  # what snapshot --where runs
    assert Counter(tuple(r) for r in got) == _duckdb([], where)
