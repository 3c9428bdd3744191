"""Hundreds of statements that cannot share a projection (each reads what the one before writes)
on the Spark engine: every one is a layer of the query, more than Spark's analyzer resolves in
one query (100 levels); the rows equal DuckDB's running them one by one."""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest

from lakectl.table.schema import parse_schema
from lakectl.updates import apply_statements
from lakectl.updates.statements import parse_updates_text

pytestmark = pytest.mark.spark

SCHEMA = parse_schema("id int, a int, b int")
ROWS = [(i, i % 5, None if i % 7 == 0 else i % 3) for i in range(40)]


def _statements(count: int) -> list[str]:
    out = []
    for i in range(count):
        if i % 2:
            out.append(f"UPDATE t SET a = (a + b) % 11 WHERE b <> {i % 3}")
        elif i % 17 == 16:
            out.append(f"DELETE FROM t WHERE a = {i % 11} AND id > 30")
        else:
            out.append(f"UPDATE t SET b = (b + a) % 13 WHERE a >= {i % 4}")
    return out


def test_hundreds_of_chained_statements_equal_duckdb(spark):
    texts = _statements(300)
    parsed = parse_updates_text(";\n".join(texts) + ";\n", "chain.updates", None, SCHEMA)
    frame = spark.createDataFrame(ROWS, SCHEMA.to_ddl())
    got = Counter(tuple(r) for r in apply_statements(frame, parsed.statements, SCHEMA).collect())
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INTEGER, a INTEGER, b INTEGER)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
    for text in texts:
        duck.execute(text)
    assert got == Counter(duck.sql("SELECT id, a, b FROM t").fetchall())
