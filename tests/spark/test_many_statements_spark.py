"""Hundreds of statements that cannot share a projection (each reads what the one before writes)
on the Spark engine: every one is a layer of the query, more than Spark's analyzer resolves in
one query (100 levels); the rows equal DuckDB's running them one by one. And as many statements
as a table may hold by default: hundreds of layers, more than Spark's optimizer walks without
overflowing its stack in one plan; the rows equal the Arrow engine's."""

from __future__ import annotations

from collections import Counter

import duckdb
import pyarrow as pa

from lakectl.arrow.statements import apply_compiled, compile_statements
from lakectl.arrow.types import arrow_schema
from lakectl.spark.statement_compile import apply_statements
from lakectl.table.metadata import DEFAULT_PROPERTIES
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

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


SALES = parse_schema("sell_id bigint, store_id string, status_id string, pay string, amt double")
SALES_ROWS = [
    (i, f"S0{i % 5}", "open" if i % 4 else None, "card", float(i % 37)) for i in range(1, 241)
]


def _corrections(count: int) -> list[str]:
    """Point corrections by key (most), store-wide ones that read what the previous one wrote,
    deletes, and every 25th a copy of a column earlier ones write: many layers that do not fuse."""
    out = []
    for i in range(count):
        key = 1 + (i * 37) % 240
        if i % 25 == 24:
            out.append(f"UPDATE t SET pay = status_id WHERE status_id = 'C{i - 1}'")
        elif i % 10 == 9:
            out.append(f"DELETE FROM t WHERE sell_id = {key}")
        elif i % 10 == 8:
            out.append(
                f"UPDATE t SET amt = {i % 500}.25 WHERE store_id = 'S0{i % 5}' AND amt < {i % 40}"
            )
        else:
            out.append(f"UPDATE t SET status_id = 'C{i}' WHERE sell_id = {key}")
    return out


def test_statements_at_the_default_limit_read_as_in_arrow(spark):
    count = int(DEFAULT_PROPERTIES["updates.max.statements"])
    texts = _corrections(count)
    parsed = parse_updates_text(";\n".join(texts) + ";\n", "limit.updates", None, SALES)
    assert len(parsed.statements) == count
    frame = spark.createDataFrame(SALES_ROWS, SALES.to_ddl())
    got = Counter(tuple(r) for r in apply_statements(frame, parsed.statements, SALES).collect())
    rows = pa.Table.from_pylist(
        [dict(zip(SALES.names, r, strict=True)) for r in SALES_ROWS], arrow_schema(SALES)
    )
    arrow = apply_compiled(rows, compile_statements(parsed.statements, SALES))
    expected = Counter(zip(*(arrow.column(n).to_pylist() for n in SALES.names), strict=True))
    assert got == expected
    assert 100 < sum(expected.values()) < len(SALES_ROWS)
