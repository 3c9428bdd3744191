"""The Arrow reader applies runs of independent statements in one pass: random sequences of
UPDATE/DELETE (many reading what earlier ones write, many not) give the rows DuckDB gives
running them one by one, fused or not."""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pyarrow as pa
import pytest

from lakectl.arrow import statements as arrow_statements
from lakectl.arrow.statements import apply_compiled, compile_statements
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

SCHEMA = parse_schema("id int, a int, b int, s string, t string")
ARROW = pa.schema(
    [
        ("id", pa.int32()),
        ("a", pa.int32()),
        ("b", pa.int32()),
        ("s", pa.string()),
        ("t", pa.string()),
    ]
)


def _rows(rng: random.Random) -> list[dict[str, object]]:
    def maybe(value: object) -> object:
        return None if rng.random() < 0.15 else value

    return [
        {
            "id": i,
            "a": maybe(rng.randint(0, 9)),
            "b": maybe(rng.randint(0, 9)),
            "s": maybe(rng.choice("xyz")),
            "t": maybe(rng.choice("xyz")),
        }
        for i in range(60)
    ]


def _condition(rng: random.Random) -> str:
    int_column, text_column = rng.choice("ab"), rng.choice("st")
    parts = [
        f"{int_column} {rng.choice(['=', '<', '>=', '<>'])} {rng.randint(0, 9)}",
        f"{text_column} = '{rng.choice('xyz')}'",
        f"{int_column} IN ({', '.join(str(rng.randint(0, 9)) for _ in range(3))})",
        f"{text_column} NOT IN ('x', NULL)" if rng.random() < 0.2 else f"{text_column} IS NULL",
        f"id {rng.choice(['<', '>'])} {rng.randint(0, 60)}",
    ]
    picked = rng.sample(parts, rng.randint(1, 2))
    return f" {rng.choice(['AND', 'OR'])} ".join(picked)


def _statement(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return f"DELETE FROM t WHERE {_condition(rng)}"
    sets = {
        "a": [str(rng.randint(0, 9)), "b", "NULL"],
        "b": [str(rng.randint(0, 9)), "a"],
        "s": [f"'{rng.choice('xyz')}'", "t", "NULL"],
        "t": [f"'{rng.choice('xyz')}'", "s"],
    }
    columns = rng.sample(list(sets), rng.randint(1, 2))
    assignments = ", ".join(f"{c} = {rng.choice(sets[c])}" for c in columns)
    return f"UPDATE t SET {assignments} WHERE {_condition(rng)}"


@pytest.mark.parametrize("seed", range(12))
def test_fused_statements_equal_duckdb_and_one_by_one(seed, monkeypatch):
    rng = random.Random(seed)
    rows = _rows(rng)
    texts = [_statement(rng) for _ in range(rng.randint(5, 40))]
    parsed = parse_updates_text(";\n".join(texts) + ";\n", "r.updates", None, SCHEMA)
    compiled = compile_statements(parsed.statements, SCHEMA)
    table = pa.Table.from_pylist(rows, schema=ARROW)
    fused = apply_compiled(table, compiled)
    monkeypatch.setattr(arrow_statements, "MAX_FUSED", 1)
    one_by_one = apply_compiled(table, compiled)
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INTEGER, a INTEGER, b INTEGER, s VARCHAR, t VARCHAR)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [tuple(r.values()) for r in rows])
    for text in texts:
        duck.execute(text)
    want = Counter(duck.sql("SELECT * FROM t").fetchall())
    assert Counter(tuple(r.values()) for r in fused.to_pylist()) == want, texts
    assert Counter(tuple(r.values()) for r in one_by_one.to_pylist()) == want
    assert fused.schema == table.schema


def test_independent_statements_share_passes():
    texts = [f"UPDATE t SET s = 'x' WHERE id = {i}" for i in range(200)]
    texts += [f"DELETE FROM t WHERE a = {i % 10} AND id > 50" for i in range(50)]
    parsed = parse_updates_text(";\n".join(texts) + ";\n", "r.updates", None, SCHEMA)
    compiled = compile_statements(parsed.statements, SCHEMA)
    groups = arrow_statements._groups(compiled)
    assert len(groups) == -(-250 // arrow_statements.MAX_FUSED)
    reading = parse_updates_text(
        "UPDATE t SET a = 1 WHERE id = 1;\nUPDATE t SET b = 2 WHERE a = 1;\n"
        "UPDATE t SET s = 'y';\nDELETE FROM t WHERE b = 2;\n",
        "r.updates",
        None,
        SCHEMA,
    )
    chained = arrow_statements._groups(compile_statements(reading.statements, SCHEMA))
    assert [len(g) for g in chained] == [1, 2, 1]  # each reads what the one before writes
