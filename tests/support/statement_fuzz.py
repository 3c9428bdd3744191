"""Random tables and random UPDATE/DELETE files for the statement differential tests, and
the DuckDB oracle that runs the same statements (transpiled by sqlglot).

The generator keeps to what both engines define the same way: fractional values are multiples of
1/4 (exact in float, double and decimal), integer values stay far from overflow (SET values are
reduced modulo a bound), divisors are non-zero literals, no fractional value is stored into an
integer column (Spark truncates, DuckDB rounds).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal

import duckdb
import sqlglot

from lakectl.spark.statement_compile import apply_statements
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import Statement

SCHEMA = parse_schema(
    "id int not null, i int, b bigint, f float, d double, flag boolean, s string, "
    "amount decimal(10,2), day date, ts timestamp"
)
DUCK_DDL = (
    "id INTEGER, i INTEGER, b BIGINT, f REAL, d DOUBLE, flag BOOLEAN, s VARCHAR, "
    "amount DECIMAL(10,2), day DATE, ts TIMESTAMP"
)
KIND_OF_COLUMN = {
    "i": "int",
    "b": "big",
    "f": "dbl",
    "d": "dbl",
    "flag": "bool",
    "s": "str",
    "amount": "dec",
    "day": "date",
    "ts": "ts",
}
# What a SET value is wrapped in, to keep values bounded over many statements.
BOUND = {
    "int": "({}) % 1000",
    "big": "({}) % 10000000000",
    "dbl": "({}) % 10000",
    "dec": "({}) % 100000",
    "str": "substr({}, 1, 8)",
}
ALPHABET = "abAB _%"
TIMES = [0, 100, 200, 300, 400]
SEEDS = list(range(int(os.environ.get("LAKECTL_DIFFERENTIAL_SEEDS", "14"))))
ROWS = 40


# --- random data -------------------------------------------------------------------------------


def random_rows(rng: random.Random) -> list[dict[str, object]]:
    def maybe(value: Callable[[], object]) -> object:
        return None if rng.random() < 0.15 else value()

    rows = []
    for key in range(1, ROWS + 1):
        rows.append(
            {
                "id": key,
                "i": maybe(lambda: rng.randint(-100, 100)),
                "b": maybe(lambda: rng.randint(-(10**12), 10**12)),
                "f": maybe(lambda: rng.randint(-400, 400) / 4),
                "d": maybe(lambda: rng.randint(-4000, 4000) / 4),
                "flag": maybe(lambda: rng.random() < 0.5),
                "s": maybe(lambda: random_text(rng, 0, 5)),
                "amount": maybe(lambda: Decimal(rng.randint(-(10**6), 10**6)) / 100),
                "day": maybe(lambda: date(2000, 1, 1) + timedelta(days=rng.randint(0, 9000))),
                "ts": maybe(
                    lambda: datetime(2000, 1, 1) + timedelta(seconds=rng.randint(0, 10**9))
                ),
            }
        )
    return rows


def random_text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(low, high)))


# --- random statements ------------------------------------------------------------------------


class StatementGenerator:
    """Random, typed Spark SQL expressions over the columns of :data:`SCHEMA`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def literal(self, kind: str) -> str:
        r = self.rng
        if kind == "int":
            return str(r.randint(-50, 50))
        if kind == "big":  # beyond int range, so both engines type it bigint
            return str(r.choice([-1, 1]) * r.randint(3 * 10**9, 10**11))
        if kind == "dbl":
            return f"{r.randint(-40, 40) / 4}"
        if kind == "dec":
            return f"{r.randint(-4000, 4000) / 4:.2f}"
        if kind == "str":
            return "'" + random_text(r, 0, 3) + "'"
        if kind == "bool":
            return self.pick("TRUE", "FALSE")
        if kind == "date":
            day = date(2000, 1, 1) + timedelta(days=r.randint(0, 9000))
            return f"DATE '{day.isoformat()}'"
        if kind == "ts":
            moment = datetime(2000, 1, 1) + timedelta(seconds=r.randint(0, 10**9))
            return f"TIMESTAMP '{moment:%Y-%m-%d %H:%M:%S}'"
        raise AssertionError(kind)

    def column(self, kind: str) -> str:
        return {
            "int": self.pick("i", "id"),
            "big": self.pick("b", "i", "id"),
            "dbl": self.pick("d", "f", "i"),
            "dec": self.pick("amount", "amount", "i"),
            "str": "s",
            "bool": "flag",
            "date": "day",
            "ts": "ts",
        }[kind]

    def expr(self, kind: str, depth: int = 2) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return self.column(kind) if r.random() < 0.7 else self.literal(kind)
        if kind == "bool":
            return self.predicate(depth)
        sub = lambda: self.expr(kind, depth - 1)  # noqa: E731
        common = [
            lambda: f"CASE WHEN {self.predicate(depth - 1)} THEN {sub()} ELSE {sub()} END",
            lambda: f"coalesce({sub()}, {self.literal(kind)})",
            lambda: f"IF({self.predicate(depth - 1)}, {sub()}, {sub()})",
        ]
        specific: dict[str, list[Callable[[], str]]] = {
            "int": [
                lambda: f"{sub()} + {sub()}",
                lambda: f"{sub()} - {sub()}",
                lambda: f"{sub()} * {r.randint(-5, 5)}",
                lambda: f"-({sub()})",
                lambda: f"abs({sub()})",
                lambda: f"{sub()} % {r.choice([3, 7, -4])}",
                lambda: f"nullif({sub()}, {self.literal('int')})",
                lambda: f"greatest({sub()}, {sub()})",
                lambda: f"least({sub()}, {self.literal('int')})",
                lambda: f"length({self.expr('str', depth - 1)})",
                lambda: (
                    f"{self.pick('year', 'month', 'day', 'dayofmonth')}({self.expr('date', depth - 1)})"
                ),
                lambda: f"datediff({self.expr('date', depth - 1)}, {self.literal('date')}) % 100",
                lambda: f"CASE {sub()} WHEN 1 THEN 10 WHEN {self.literal('int')} THEN {sub()} END",
            ],
            "big": [
                lambda: f"{sub()} + {sub()}",
                lambda: f"{sub()} - {self.literal('big')}",
                lambda: f"{sub()} * {r.randint(-3, 3)}",
                lambda: f"abs({sub()})",
            ],
            "dbl": [
                lambda: f"{sub()} + {sub()}",
                lambda: f"{sub()} - {sub()}",
                lambda: f"{sub()} * {r.choice(['2', '-0.5', '0.25'])}",
                lambda: f"{sub()} / {r.choice(['2', '4', '-0.5'])}",
                lambda: f"floor({sub()})",
                lambda: f"ceil({sub()})",
                lambda: f"abs({sub()})",
                lambda: f"-({sub()})",
            ],
            "dec": [
                lambda: f"{sub()} + {sub()}",
                lambda: f"{sub()} - {self.literal('dec')}",
                lambda: f"{sub()} * {r.randint(-3, 3)}",
                lambda: f"abs({sub()})",
                lambda: f"round({sub()}, 1)",
                lambda: f"CAST({self.expr('int', depth - 1)} AS decimal(10,2))",
            ],
            "str": [
                lambda: f"upper({sub()})",
                lambda: f"lower({sub()})",
                lambda: f"{self.pick('trim', 'ltrim', 'rtrim')}({sub()})",
                lambda: f"substr({sub()}, {r.randint(1, 3)}, {r.randint(1, 4)})",
                lambda: f"substring({sub()}, {r.randint(1, 3)})",
                lambda: f"{sub()} || {sub()}",
                lambda: f"concat({sub()}, {self.literal('str')})",
                lambda: f"concat_ws('-', {sub()}, {sub()})",
                lambda: f"replace({sub()}, 'a', 'B')",
                lambda: f"{self.pick('lpad', 'rpad')}({sub()}, {r.randint(0, 5)}, '*')",
                lambda: f"reverse({sub()})",
                lambda: f"CAST({self.expr('int', depth - 1)} AS string)",
                lambda: f"CAST({self.expr('date', depth - 1)} AS string)",
            ],
            "date": [
                lambda: f"date_add({sub()}, {r.randint(-30, 30)})",
                lambda: f"date_sub({sub()}, {r.randint(0, 30)})",
                lambda: f"to_date({self.expr('ts', depth - 1)})",
            ],
            "ts": [
                lambda: f"CAST({self.expr('date', depth - 1)} AS timestamp)",
            ],
        }
        return r.choice(specific[kind] + common)()

    def predicate(self, depth: int = 2) -> str:
        r = self.rng
        kind = r.choice(["int", "big", "dbl", "dec", "str", "date", "ts", "int", "bool"])
        if depth <= 0:
            return f"{self.column(kind)} {self.pick('=', '<>', '<', '>=')} {self.literal(kind)}"
        sub = lambda: self.predicate(depth - 1)  # noqa: E731
        operand = lambda: f"({self.expr(kind, depth - 1)})"  # noqa: E731
        options: list[Callable[[], str]] = [
            lambda: (
                f"{operand()} {self.pick('=', '<>', '!=', '<', '<=', '>', '>=', '<=>')} {operand()}"
            ),
            lambda: f"{operand()} IS {self.pick('', 'NOT ')}NULL",
            lambda: (
                f"{operand()} {self.pick('IN', 'NOT IN')} "
                f"({', '.join(self.literal(kind) if r.random() < 0.85 else 'NULL' for _ in range(r.randint(1, 4)))})"
            ),
            lambda: (
                f"{operand()} {self.pick('', 'NOT ')}BETWEEN {self.literal(kind)} AND {self.literal(kind)}"
            ),
            lambda: (
                f"s {self.pick('LIKE', 'NOT LIKE')} '{random_text(r, 0, 3)}{self.pick('%', '_', '')}'"
            ),
            lambda: f"({sub()}) AND ({sub()})",
            lambda: f"({sub()}) OR ({sub()})",
            lambda: f"NOT ({sub()})",
            lambda: "flag",
            lambda: f"{self.pick('flag', 'NOT flag')} = ({sub()})",
        ]
        return r.choice(options)()

    def statement(self) -> str:
        r = self.rng
        if r.random() < 0.3:
            if r.random() < 0.5:
                keys = ", ".join(str(r.randint(1, ROWS)) for _ in range(r.randint(1, 3)))
                return f"DELETE FROM t WHERE id IN ({keys});"
            return f"DELETE FROM t WHERE id % {r.randint(3, 6)} = {r.randint(0, 2)} AND ({self.predicate()});"
        columns = r.sample(sorted(KIND_OF_COLUMN), r.randint(1, 3))
        if r.random() < 0.35:  # a point correction: constant values, WHERE key = literal
            return self.point_update(columns)
        assignments = []
        for name in columns:
            kind = KIND_OF_COLUMN[name]
            value = self.expr(kind)
            assignments.append(f"{name} = {BOUND[kind].format(value) if kind in BOUND else value}")
        where = f" WHERE {self.predicate()}" if r.random() < 0.75 else ""
        return f"UPDATE t SET {', '.join(assignments)}{where};"

    def point_update(self, columns: list[str]) -> str:
        r = self.rng
        values = ", ".join(
            f"{name} = {'NULL' if r.random() < 0.1 else self.literal(KIND_OF_COLUMN[name])}"
            for name in columns
        )
        key, kind = r.choice([("id", "int"), ("id", "int"), ("i", "int"), ("s", "str")])
        literal = str(r.randint(1, ROWS)) if key == "id" else self.literal(kind)
        if r.random() < 0.3:
            others = ", ".join(self.literal(kind) if r.random() < 0.8 else "NULL" for _ in range(2))
            return f"UPDATE t SET {values} WHERE {key} IN ({literal}, {others});"
        return f"UPDATE t SET {values} WHERE {key} = {literal};"


def updates_text(
    rng: random.Random, count: int, generator: StatementGenerator | None = None
) -> str:
    """``count`` random statements (of ``generator``, default one over :data:`SCHEMA`) in an
    ``.updates`` file's text, at random effective times among :data:`TIMES`."""
    generator = generator or StatementGenerator(rng)
    lines, current = [], 0
    for _ in range(count):
        effective = rng.choice(TIMES)
        if effective != current:
            lines.append(f"-- time={effective}")
            current = effective
        lines.append(generator.statement())
    return "\n".join(lines) + "\n"


# --- the two engines ---------------------------------------------------------------------------


def rows_frame(spark, rows):  # type: ignore[no-untyped-def]
    """The random rows as a Spark DataFrame of :data:`SCHEMA`."""
    from pyspark.sql import functions as F

    data = [
        tuple(str(v) if name == "ts" and v is not None else v for name, v in row.items())
        for row in rows
    ]
    df = spark.createDataFrame(data, SCHEMA.to_ddl().replace("`ts` timestamp", "`ts` string"))
    return df.withColumn("ts", F.col("ts").cast("timestamp"))


def by_id(df) -> dict[int, tuple[object, ...]]:  # type: ignore[no-untyped-def]
    """Rows keyed by id, timestamps as text (as DuckDB's are compared)."""
    from pyspark.sql import functions as F

    return {r["id"]: tuple(r) for r in df.withColumn("ts", F.col("ts").cast("string")).collect()}


def spark_result(spark, rows, statements: list[Statement]) -> dict[int, tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return by_id(apply_statements(rows_frame(spark, rows), statements, SCHEMA))


def duckdb_result(rows, statements: list[Statement]) -> dict[int, tuple[object, ...]]:  # type: ignore[no-untyped-def]
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"CREATE TABLE t ({DUCK_DDL})")
        con.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TIMESTAMP))",
            [
                [str(v) if name == "ts" and v is not None else v for name, v in row.items()]
                for row in rows
            ],
        )
        for stmt in statements:
            sql = sqlglot.transpile(stmt.sql, read="spark", write="duckdb")[0]
            try:
                con.execute(sql)
            except duckdb.Error as exc:  # the generator left the common ground: fix it
                raise AssertionError(f"DuckDB refused {sql!r} (from {stmt.sql!r}): {exc}") from exc
        names = ", ".join(c.name for c in SCHEMA.columns[:-1])
        result = con.execute(f"SELECT {names}, CAST(ts AS VARCHAR) FROM t").fetchall()
    finally:
        con.close()
    return {r[0]: tuple(r) for r in result}


def same_value(type_name: str, ours: object, theirs: object) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if type_name in ("float", "double"):
        tolerance = 1e-6 if type_name == "float" else 1e-12
        return math.isclose(float(ours), float(theirs), rel_tol=tolerance, abs_tol=tolerance)  # type: ignore[arg-type]
    return ours == theirs


def assert_same(
    ours: dict[int, tuple[object, ...]], theirs: dict[int, tuple[object, ...]], context: str
) -> None:
    assert sorted(ours) == sorted(theirs), f"different rows survive\n{context}"
    types = [c.type for c in SCHEMA.columns]
    for key in sorted(ours):
        for type_name, column, a, b in zip(
            types, SCHEMA.names, ours[key], theirs[key], strict=True
        ):
            assert same_value(type_name, a, b), (
                f"id {key}, column {column}: spark {a!r} != duckdb {b!r}\n{context}"
            )
