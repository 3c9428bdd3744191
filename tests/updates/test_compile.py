"""Applying statements with Spark: seed 000's listings, SQL semantics, types, read-time checks."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import functions as F

from lakectl.errors import BadInputError
from lakectl.spark.statement_compile import apply_statements
from lakectl.table.schema import Column, Schema, parse_schema
from lakectl.times import parse_time
from lakectl.updates import (
    Statement,
    parse_updates_file,
    parse_updates_text,
    statements_effective_at,
)

DOCTORS = parse_schema("number int, first_name string, last_name string, extra_field string")
DOCTOR_ROWS = [
    (6, "Colin", "Baker"),
    (3, "Jon", "Pertwee"),
    (4, "Tom", "Baker"),
    (5, "Peter", "Davison"),
    (11, "Matt", "Smith"),
    (1, "William", "Hartnell"),
    (7, "Sylvester", "McCoy"),
    (8, "Paul", "McGann"),
    (2, "Patrick", "Troughton"),
    (9, "Christopher", "Eccleston"),
    (10, "David", "Tennant"),
]
CUSTARD = "fishfingers and custard"


def listing(rows: list[tuple[int, str, str]]) -> list[tuple[object, ...]]:
    return [(*row, CUSTARD) for row in rows]


@pytest.fixture(scope="module")
def doctors(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(listing(DOCTOR_ROWS), DOCTORS.to_ddl())


def rows_of(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return [tuple(r) for r in df.collect()]


def ordered(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Rows sorted column by column, NULLs last (row order is not part of the result)."""
    return sorted(rows, key=lambda row: [(v is None, v if v is not None else 0) for v in row])


def run(df, text: str, schema=DOCTORS) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    statements = parse_updates_text(text, "u.sql", schema=schema).statements
    return ordered(rows_of(apply_statements(df, statements, schema)))


# --- seed 000 --------------------------------------------------------------------------------


def test_seed_000_three_listings(doctors, interop: Path) -> None:  # type: ignore[no-untyped-def]
    statements = parse_updates_file(interop / "hive-scd" / "updates", schema=DOCTORS).statements

    def read(as_of: str) -> list[tuple[object, ...]]:
        effective = statements_effective_at(statements, parse_time(as_of).millis)
        return rows_of(apply_statements(doctors, effective, DOCTORS))

    now = read(str(int(time.time() * 1000)))
    assert now == listing(
        [
            (3, "Jon", "Pertwee"),
            (4, "Tom", "Baker"),
            (5, "Peter", "Davison"),
            (11, "Matt", "Smith"),
            (1, "William", "Hartnell"),
            (7, "Sylvester", "McCoy"),
            (8, "Paul", "McGann"),
            (12, "Patrick", "Troughton"),
            (9, "Christopher", "Eccleston"),
            (10, "David", "Tennant"),
        ]
    )
    assert read("2014-01-01") == listing(
        [(12, "Patrick", "Troughton") if r[0] == 2 else r for r in DOCTOR_ROWS]
    )
    assert read("-1") == listing(DOCTOR_ROWS)
    # The DELETE takes effect exactly at midnight UTC on 2014-09-01.
    assert len(read("2014-08-31T23:59:59.999Z")) == 11
    assert len(read("2014-09-01")) == 10


# --- semantics ---------------------------------------------------------------------------------


def test_set_values_see_the_row_before_the_statement(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, b int")
    df = spark.createDataFrame([(1, 2), (3, 4)], schema.to_ddl())
    assert run(df, "UPDATE t SET a = b, b = a;", schema) == [(2, 1), (4, 3)]
    assert run(df, "UPDATE t SET a = a + 10, b = a WHERE a = 1;", schema) == [(3, 4), (11, 1)]


def test_each_statement_sees_the_previous_ones(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, b int")
    df = spark.createDataFrame([(1, 2), (3, 4)], schema.to_ddl())
    text = (
        "UPDATE t SET a = a * 10;\n"  # 10, 30
        "UPDATE t SET b = a + b WHERE a = 10;\n"  # reads the new a: (10, 12)
        "DELETE FROM t WHERE b = 4;\n"  # (30, 4) goes
        "UPDATE t SET a = b WHERE b = 12;\n"
    )
    assert run(df, text, schema) == [(12, 12)]


def test_null_where_matches_nothing(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, s string")
    df = spark.createDataFrame([(1, "x"), (None, "y"), (3, None)], schema.to_ddl())
    assert run(df, "DELETE FROM t WHERE a > 1;", schema) == ordered([(1, "x"), (None, "y")])
    assert run(df, "DELETE FROM t WHERE NOT (a > 1);", schema) == ordered([(None, "y"), (3, None)])
    assert run(df, "UPDATE t SET s = 'hit' WHERE a IN (1, NULL);", schema) == ordered(
        [(1, "hit"), (None, "y"), (3, None)]
    )
    assert run(df, "UPDATE t SET s = 'hit' WHERE a NOT IN (1, NULL);", schema) == ordered(
        [(1, "x"), (None, "y"), (3, None)]
    )
    assert run(df, "DELETE FROM t WHERE a <=> NULL;", schema) == ordered([(1, "x"), (3, None)])


def test_no_where_means_every_row(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, s string")
    df = spark.createDataFrame([(1, "x"), (None, "y")], schema.to_ddl())
    assert run(df, "UPDATE t SET s = 'all';", schema) == ordered([(1, "all"), (None, "all")])
    assert run(df, "DELETE FROM t;", schema) == []


def test_columns_not_in_the_schema_pass_through_in_order(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, s string")
    df = spark.createDataFrame(
        [(7, 1, "x", 100), (8, 2, "y", 200)], "row_id bigint, a int, s string, bucket int"
    )
    statements = parse_updates_text(
        "UPDATE t SET A = a + 1, s = upper(S) WHERE a = 1;", schema=schema
    ).statements
    result = apply_statements(df, statements, schema)
    assert result.columns == ["row_id", "a", "s", "bucket"]
    assert result.schema.simpleString() == df.schema.simpleString()
    assert sorted(rows_of(result)) == [(7, 2, "X", 100), (8, 2, "y", 200)]


def test_no_statements_returns_the_dataframe(doctors) -> None:  # type: ignore[no-untyped-def]
    assert apply_statements(doctors, [], DOCTORS) is doctors


TYPED = parse_schema(
    "id int, i int, b bigint, f float, d double, flag boolean, s string, "
    "amount decimal(10,2), day date, ts timestamp"
)


@pytest.fixture(scope="module")
def typed(spark):  # type: ignore[no-untyped-def]
    rows = [
        (
            1,
            10,
            10**12,
            1.5,
            2.25,
            True,
            "alpha",
            Decimal("10.50"),
            date(2014, 9, 1),
            "2014-09-01 10:00:00",
        ),
        (2, None, None, None, None, None, None, None, None, None),
        (
            3,
            -4,
            -5,
            -0.5,
            -1.0,
            False,
            " Beta ",
            Decimal("-3.25"),
            date(1999, 12, 31),
            "1999-12-31 23:59:59",
        ),
    ]
    df = spark.createDataFrame(rows, TYPED.to_ddl().replace("`ts` timestamp", "`ts` string"))
    return df.withColumn("ts", df["ts"].cast("timestamp"))


@pytest.mark.parametrize(
    ("assignment", "expected_by_id"),
    [
        ("i = i * 2 + 1", {1: 21, 2: None, 3: -7}),
        ("i = '12'", {1: 12, 2: 12, 3: 12}),
        ("i = length(s)", {1: 5, 2: None, 3: 6}),
        ("b = b - 1", {1: 10**12 - 1, 2: None, 3: -6}),
        ("f = f * 2", {1: 3.0, 2: None, 3: -1.0}),
        ("d = d / 2", {1: 1.125, 2: None, 3: -0.5}),
        ("d = i / 4", {1: 2.5, 2: None, 3: -1.0}),
        ("flag = NOT flag", {1: False, 2: None, 3: True}),
        ("flag = i > 0", {1: True, 2: None, 3: False}),
        ("s = upper(trim(s)) || '!'", {1: "ALPHA!", 2: None, 3: "BETA!"}),
        ("s = concat_ws('-', s, 'x')", {1: "alpha-x", 2: "x", 3: " Beta -x"}),
        ("s = CAST(amount AS string)", {1: "10.50", 2: None, 3: "-3.25"}),
        ("amount = amount * 2", {1: Decimal("21.00"), 2: None, 3: Decimal("-6.50")}),
        ("amount = amount / 3", {1: Decimal("3.50"), 2: None, 3: Decimal("-1.08")}),
        ("amount = 1.005", {1: Decimal("1.01"), 2: Decimal("1.01"), 3: Decimal("1.01")}),
        ("day = date_add(day, 1)", {1: date(2014, 9, 2), 2: None, 3: date(2000, 1, 1)}),
        ("day = date_sub(day, 1)", {1: date(2014, 8, 31), 2: None, 3: date(1999, 12, 30)}),
        ("day = '2020-02-29'", {1: date(2020, 2, 29), 2: date(2020, 2, 29), 3: date(2020, 2, 29)}),
        ("day = to_date(ts)", {1: date(2014, 9, 1), 2: None, 3: date(1999, 12, 31)}),
        (
            "ts = TIMESTAMP '2020-01-02 03:04:05'",
            {
                1: datetime(2020, 1, 2, 3, 4, 5),
                2: datetime(2020, 1, 2, 3, 4, 5),
                3: datetime(2020, 1, 2, 3, 4, 5),
            },
        ),
        ("ts = day", {1: datetime(2014, 9, 1), 2: None, 3: datetime(1999, 12, 31)}),
        ("i = datediff(day, DATE '2014-08-30')", {1: 2, 2: None, 3: -5356}),
        (
            "i = year(day) * 10000 + month(day) * 100 + day(day)",
            {1: 20140901, 2: None, 3: 19991231},
        ),
        ("i = NULL", {1: None, 2: None, 3: None}),
    ],
)
def test_set_each_type(typed, assignment: str, expected_by_id: dict[int, object]) -> None:  # type: ignore[no-untyped-def]
    column = assignment.split("=")[0].strip()
    statements = parse_updates_text(f"UPDATE t SET {assignment};", schema=TYPED).statements
    result = apply_statements(typed, statements, TYPED)
    assert result.schema.simpleString() == typed.schema.simpleString()
    got = {r["id"]: r[column] for r in result.collect()}
    assert got == expected_by_id


def test_every_whitelisted_node_compiles_and_runs(typed) -> None:  # type: ignore[no-untyped-def]
    text = """
    UPDATE t SET i = i + 1, b = b - 1, d = d * 2.5, f = f / 3 WHERE i % 7 > 0;
    UPDATE t SET i = -i, flag = NOT flag WHERE (i <> 1 AND b != 2) OR d <= 3 OR d >= 4 OR f < 5;
    UPDATE t SET flag = i <=> b, s = 'x' WHERE i IS DISTINCT FROM b AND i IN (1, 2, NULL)
        AND b NOT IN (3) AND d BETWEEN 1 AND 2;
    DELETE FROM t WHERE s LIKE 'a%' AND s NOT LIKE '_b' AND s ILIKE 'C%' AND s IS NULL
        AND i IS NOT NULL;
    UPDATE t SET s = CASE WHEN i > 1 THEN 'big' WHEN i IS NULL THEN NULL ELSE 'small' END;
    UPDATE t SET s = CASE i WHEN 1 THEN 'one' WHEN 2 THEN 'two' END, i = IF(i > 2, 2, i);
    UPDATE t SET amount = CAST(s AS decimal(10,2)), i = CAST(d AS int), s = CAST(ts AS string);
    UPDATE t SET i = coalesce(i, b, 0), b = nullif(b, 0), d = nvl(d, 0), f = ifnull(f, 1);
    UPDATE t SET s = upper(lower(trim(ltrim(rtrim(s))))), i = length(s) + char_length(s);
    UPDATE t SET s = concat(substring(s, 1, 2), substr(s, 3), s || 'x', concat_ws('-', s, s));
    UPDATE t SET s = replace(lpad(rpad(s, 5, '*'), 8, '#'), 'a', 'b'),
        i = instr(s, 'x') + locate('y', s, 2);
    UPDATE t SET s = initcap(reverse(replace(s, 'x'))), flag = TRUE WHERE flag = FALSE;
    UPDATE t SET d = abs(round(d, 2)) + floor(d) + ceil(d) + ceiling(d) + sqrt(d) + pow(d, 2);
    UPDATE t SET i = mod(i, 3) + greatest(i, b % 1000, 3) + least(i, 0) + sign(i);
    UPDATE t SET i = year(day) + month(day) + day(day) + dayofmonth(ts)
        + datediff(day, to_date(ts));
    UPDATE t SET day = date_add(day, 1), ts = date_sub(day, 2) WHERE day < DATE '2014-09-01';
    UPDATE t SET ts = TIMESTAMP '2014-09-01 10:00:00' WHERE ts >= TIMESTAMP '2014-01-01 00:00:00';
    UPDATE t SET s = trim(BOTH 'x' FROM s), i = 2147483647, b = -9223372036854775808, f = 1e3;
    UPDATE t SET i = NULL, s = NULL;
    """
    statements = parse_updates_text(text, schema=TYPED).statements
    result = apply_statements(typed, statements, TYPED)
    assert len(result.collect()) == 3


def test_string_functions(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id int, s string, out string, n int")
    df = spark.createDataFrame([(1, "  Hello World  ", None, None)], schema.to_ddl())
    cases = {
        "out = trim(s)": "Hello World",
        "out = ltrim(s)": "Hello World  ",
        "out = rtrim(s)": "  Hello World",
        "out = trim(BOTH ' H' FROM s)": "ello World",
        "out = substr(trim(s), 7)": "World",
        "out = substring(trim(s), 1, 5)": "Hello",
        "out = replace(trim(s), 'o', '0')": "Hell0 W0rld",
        "out = lpad('7', 3, '0')": "007",
        "out = rpad('7', 3)": "7  ",
        "out = initcap('hELLO wORLD')": "Hello World",
        "out = reverse('abc')": "cba",
        "out = concat('a', NULL)": None,
        "out = concat_ws(',', 'a', NULL, 'b')": "a,b",
        "n = locate('o', s)": 7,
        "n = locate('o', s, 8)": 10,
        "n = instr(s, 'World')": 9,
        "n = length(s)": 15,
    }
    for assignment, expected in cases.items():
        column = assignment.split("=")[0].strip()
        got = run(df, f"UPDATE t SET {assignment};", schema)[0][schema.names.index(column)]
        assert got == expected, assignment


def test_math_functions(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id int, x double, n bigint")
    df = spark.createDataFrame([(1, -2.5, -7)], schema.to_ddl())
    cases = {
        "x = abs(x)": 2.5,
        "x = round(x)": -3.0,
        "x = round(2.345, 2)": 2.35,
        "x = floor(x)": -3.0,
        "x = ceil(x)": -2.0,
        "x = sqrt(16)": 4.0,
        "x = pow(2, 10)": 1024.0,
        "x = sign(x)": -1.0,
        "n = n % 3": -1,
        "n = mod(n, 3)": -1,
        "n = greatest(n, 3, NULL)": 3,
        "n = least(n, 3)": -7,
        "x = 7 / 2": 3.5,
        "x = 1 / 0": None,
    }
    for assignment, expected in cases.items():
        column = assignment.split("=")[0].strip()
        got = run(df, f"UPDATE t SET {assignment};", schema)[0][schema.names.index(column)]
        assert got == expected, assignment


# --- read-time safety and analysis errors ------------------------------------------------------


def test_hand_edited_statement_is_refused_before_spark_runs(doctors) -> None:  # type: ignore[no-untyped-def]
    evil = Statement(
        0, "UPDATE doctors SET last_name = reflect('java.lang.System', 'exit', 1)", "update",
        "doctors", 3, "doctors/.updates",
    )  # fmt: skip
    with pytest.raises(BadInputError) as info:
        apply_statements(doctors, [evil], DOCTORS)
    assert info.value.message == (
        "doctors/.updates:3: function 'reflect' is not allowed: it reaches outside the table "
        "(JVM, files or network)"
    )


def test_type_errors_name_the_statement_before_spark_runs() -> None:
    schema = parse_schema("a int, flag boolean, day date")
    text = "UPDATE t SET a = a + 1;\nUPDATE t SET a = 2 WHERE a = 1;\n\nUPDATE t SET day = date_add(flag, 1);\n"
    with pytest.raises(BadInputError) as info:  # the expression layer types every statement
        parse_updates_text(text, "fix.updates", schema=schema)
    assert info.value.message == (
        "fix.updates:4:20 in 'DATE_ADD(flag, 1)': flag is boolean, not a date"
    ), info.value.message


# --- awkward values and names reach Spark as values, never as SQL text ----------------------

AWKWARD_STRINGS = [
    "it's",
    'say "hi"',
    "back\\slash",
    "${spark.app.name}",
    "${env:HOME}",
    "`tick`",
    "new\nline",
    "caf\u00e9 \U0001f600",
    "'; DROP TABLE t; --",
    "/* comment */",
    "",
]


def test_awkward_strings_survive_as_values(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id int, s string, out string, joined string, n int")
    df = spark.createDataFrame(
        [(i, value, None, None, None) for i, value in enumerate(AWKWARD_STRINGS)],
        schema.to_ddl(),
    )
    for i, value in enumerate(AWKWARD_STRINGS):
        quoted = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        text = (
            f"UPDATE t SET out = {quoted} WHERE s = {quoted};\n"
            f"UPDATE t SET n = locate({quoted}, s), joined = concat_ws({quoted}, 'a', 'b') "
            f"WHERE id = {i};\n"
        )
        rows = {r[0]: r for r in run(df, text, schema)}
        assert rows[i][2:] == (value, f"a{value}b", 1), (value, rows[i])


def test_column_names_that_are_not_plain_are_kept(spark) -> None:  # type: ignore[no-untyped-def]
    schema = Schema((Column("id", "int"), Column("my col${x}", "string"), Column("b`q", "int")))
    df = spark.createDataFrame(
        [(1, "a", 10), (2, "b", 20)], "id int, `my col${x}` string, `b``q` int"
    )
    text = "UPDATE t SET `my col${x}` = 'z', `b``q` = `b``q` + 1 WHERE id = 2;\nDELETE FROM t WHERE `b``q` = 10;"
    statements = parse_updates_text(text, "odd.updates", schema=schema).statements
    result = apply_statements(df, statements, schema)
    assert result.columns == ["id", "my col${x}", "b`q"]
    assert rows_of(result) == [(2, "z", 21)]


# --- plan size ---------------------------------------------------------------------------------


def test_hundred_statements_compile_and_run_quickly(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id bigint, name string, amount decimal(10,2), active boolean")
    df = spark.range(1000).selectExpr(
        "id",
        "concat('n', id) AS name",
        "CAST(id AS decimal(10,2)) AS amount",
        "id % 2 = 0 AS active",
    )
    expected = {i: [f"n{i}", Decimal(i), i % 2 == 0] for i in range(1000)}
    lines = []
    for i in range(1, 101):
        if i % 5 == 0:  # point deletes: fused into one filter
            lines.append(f"DELETE FROM t WHERE id = {i * 7};")
            expected.pop(i * 7, None)
        elif i % 5 in (1, 2):  # point updates of unrelated columns: fused into one projection
            lines.append(f"UPDATE t SET name = 'fixed{i}' WHERE id = {i * 3};")
            if i * 3 in expected:
                expected[i * 3][0] = f"fixed{i}"
        else:  # reads what the statement before wrote: a chain of projections
            lines.append(
                f"UPDATE t SET amount = amount + 1, active = NOT active WHERE id % {i} = 0;"
            )
            for key, row in expected.items():
                if key % i == 0:
                    row[1], row[2] = row[1] + 1, not row[2]
    statements = parse_updates_text("\n".join(lines), schema=schema).statements
    started = time.monotonic()
    result = apply_statements(df, statements, schema)
    got = {r["id"]: [r["name"], r["amount"], r["active"]] for r in result.collect()}
    elapsed = time.monotonic() - started
    assert got == expected
    assert elapsed < 30, f"100 statements took {elapsed:.1f}s"


def test_a_delete_filter_is_not_inlined_through_earlier_projections(spark) -> None:  # type: ignore[no-untyped-def]
    """Spark pushes a filter through deterministic projections by copying their expressions into
    it: five statements of k terms and a DELETE of k terms once made a filter of ~k^3 nodes."""
    schema = parse_schema("number int, name string")
    df = spark.createDataFrame([(i, f"n{i}") for i in range(11)], schema.to_ddl())
    terms = " + ".join(f"number * {i}" for i in range(1, 26))
    text = "\n".join(
        [f"UPDATE t SET number = ({terms}) % 1000;"] * 5
        + [f"DELETE FROM t WHERE ({terms}) % 7 = 3;"]
    )
    result = apply_statements(df, parse_updates_text(text, schema=schema).statements, schema)
    execution = result._jdf.queryExecution()
    analyzed = len(execution.analyzed().toString())
    optimized = len(execution.optimizedPlan().toString())
    assert optimized < 2 * analyzed, (optimized, analyzed)  # ~80x without the barrier

    def expected(n: int) -> int:
        for _ in range(5):
            n = sum(n * i for i in range(1, 26)) % 1000
        return n

    kept = sorted(
        (expected(i), f"n{i}")
        for i in range(11)
        if sum(expected(i) * k for k in range(1, 26)) % 7 != 3
    )
    assert sorted(rows_of(result)) == kept


def test_point_statements_keep_file_order_semantics(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id bigint, name string, n int")
    df = spark.createDataFrame(
        [(1, "a", 1), (2, "b", 2), (3, "c", 3), (4, "d", 4), (None, "z", 0)], schema.to_ddl()
    )
    text = """
    UPDATE t SET name = 'x1' WHERE id = 1;
    UPDATE t SET name = 'y1', n = 10 WHERE id = 1;
    UPDATE t SET name = 'x2' WHERE id IN (2, NULL);
    DELETE FROM t WHERE id = 3;
    UPDATE t SET name = 'x3' WHERE id = 3;
    UPDATE t SET n = n + 1 WHERE name = 'y1';   -- reads what the run wrote
    UPDATE t SET name = 'z1' WHERE id = 1;
    UPDATE t SET n = NULL WHERE name = 'd';     -- a point statement on another key
    UPDATE t SET name = 'w4' WHERE id = 4;
    UPDATE t SET name = 'never' WHERE id IN (NULL);
    DELETE FROM t WHERE id IN (NULL);
    """
    assert run(df, text, schema) == [(1, "z1", 11), (2, "x2", 2), (4, "w4", None), (None, "z", 0)]


def statement_projections(df) -> int:  # type: ignore[no-untyped-def]
    """Projections the statements compiled to (each computes or passes on the stage column
    and, unlike a DELETE's ``SELECT *``, names what it computes)."""
    plan = str(df._jdf.queryExecution().analyzed().toString())
    return sum(
        1
        for line in plan.splitlines()
        if "Project [" in line and "__lakectl_stage" in line and " AS " in line
    )


def test_hundred_point_statements_make_one_projection(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("id bigint, name string, city string")
    df = spark.range(500).selectExpr("id", "concat('n', id) AS name", "'somewhere' AS city")
    lines = []
    expected = {i: (i, f"n{i}", "somewhere") for i in range(500)}
    for i in range(100):
        key = (i * 37) % 600
        if i % 4 == 0:
            lines.append(f"DELETE FROM t WHERE id IN ({key}, {key + 1});")
            expected.pop(key, None)
            expected.pop(key + 1, None)
        else:
            lines.append(f"UPDATE t SET name = 'fix{i}', city = NULL WHERE id = {key};")
            if key in expected:
                expected[key] = (key, f"fix{i}", None)
    statements = parse_updates_text("\n".join(lines), schema=schema).statements
    result = apply_statements(df, statements, schema)
    assert statement_projections(result) == 1
    assert {r["id"]: tuple(r) for r in result.collect()} == expected


def test_unrelated_updates_fuse_and_dependent_ones_chain(spark) -> None:  # type: ignore[no-untyped-def]
    schema = parse_schema("a int, b int, c int")
    df = spark.createDataFrame([(1, 2, 3)], schema.to_ddl())
    fused = parse_updates_text(
        "UPDATE t SET a = c + 1 WHERE b > 0; UPDATE t SET b = c * 2; DELETE FROM t WHERE c < 0;",
        schema=schema,
    ).statements
    result = apply_statements(df, fused, schema)
    assert statement_projections(result) == 1
    assert rows_of(result) == [(4, 6, 3)]
    chained = parse_updates_text(
        "UPDATE t SET a = a + 1; UPDATE t SET a = a * 10; UPDATE t SET b = a;", schema=schema
    ).statements
    result = apply_statements(df, chained, schema)
    assert statement_projections(result) == 3
    assert rows_of(result) == [(20, 20, 3)]


def largest_generated_method(df) -> int:  # type: ignore[no-untyped-def]
    """Bytes of JVM bytecode in the largest method of ``df``'s whole-stage generated code."""
    session = df.sparkSession
    adaptive = session.conf.get("spark.sql.adaptive.enabled")
    session.conf.set("spark.sql.adaptive.enabled", "false")  # codegen is planned up front
    try:
        stages = df._jdf.queryExecution().debug().codegenToSeq()
        sizes = [stages.apply(i)._3().maxMethodCodeSize() for i in range(stages.size())]
    finally:
        session.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert sizes, "no whole-stage generated code"
    return max(sizes)


def duckdb_after(
    create: str, lines: list[str], rows: Sequence[tuple[object, ...]] = ()
) -> list[tuple[object, ...]]:
    """What DuckDB's table ``t`` holds after the statements ``lines``: the table made by
    ``create``, filled with ``rows``."""
    oracle = duckdb.connect()
    oracle.execute(create)
    if rows:
        oracle.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
    for line in lines:
        oracle.execute(line)
    return oracle.execute("SELECT * FROM t").fetchall()


def test_a_long_chain_of_statements_compiles_to_small_methods(spark) -> None:  # type: ignore[no-untyped-def]
    # 60 statements that each read what the one before wrote: 60 projections. Fused into one
    # generated method they made ~25 KB of bytecode, over the JVM's 8000-byte limit for
    # compiling a method with C1, so the read ran interpreted.
    schema = parse_schema("id bigint, a int, s string, d double")
    columns = ["id", "cast(id % 97 AS int) AS a", "concat('v', id % 13) AS s", "id / 2.0e0 AS d"]
    df = spark.range(2000).selectExpr(*columns)
    lines = []
    for i in range(20):
        lines.append(f"UPDATE t SET a = a + {i} WHERE s LIKE 'v{i % 13}%' AND d > {i};")
        lines.append(f"UPDATE t SET s = CASE WHEN a > {50 + i} THEN upper(s) ELSE s END;")
        lines.append(f"DELETE FROM t WHERE a = {i * 7} AND s = 'V{i % 13}';")
    statements = parse_updates_text("\n".join(lines), schema=schema).statements
    result = apply_statements(df, statements, schema)
    assert statement_projections(result) >= 40
    assert largest_generated_method(result.agg(F.sum(F.hash(*result.columns)))) < 8000
    create = f"CREATE TABLE t AS SELECT {', '.join(columns)} FROM range(2000) r(id)"
    assert sorted(rows_of(result)) == sorted(duckdb_after(create, lines))


# Two of the strings 'k0' .. 'k299999' whose Spark ``hash`` (32-bit Murmur3, seed 42) is equal;
# found once by grouping them all by hash, checked on every run below.
COLLIDING = ("k135566", "k24482")


def _colliding_strings(spark) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """Two different strings with the same Spark ``hash``."""
    pair = spark.createDataFrame([(s,) for s in COLLIDING], "s string")
    hashes = [row[0] for row in pair.select(F.hash("s")).collect()]
    assert COLLIDING[0] != COLLIDING[1] and hashes[0] == hashes[1], hashes
    return COLLIDING


def test_hashed_string_tests_keep_sql_semantics(spark) -> None:  # type: ignore[no-untyped-def]
    # store is tested by many statements and written by none: the compiler hashes it once per
    # row and compares hashes first. NULLs, '', a string whose hash equals a literal's and
    # negated tests must give what DuckDB gives for the plain statements.
    collides, present = _colliding_strings(spark)
    schema = parse_schema("id int, store string, n int, note string")
    stores = [None, "", "S1", "S2", "S3", "S10", present, "s1", "S1 "]
    rows = [(i, stores[i % len(stores)], i % 7, f"r{i}") for i in range(90)]
    lines = [
        "UPDATE t SET n = n + 100 WHERE store = 'S1';",
        "UPDATE t SET note = concat(note, '-2') WHERE 'S2' = store;",
        f"UPDATE t SET n = n + 1000 WHERE store = '{collides}';",  # hash equal, string not
        "UPDATE t SET note = concat(note, '-ne') WHERE store <> 'S3';",  # NULL: no match
        "UPDATE t SET note = concat(note, '-not') WHERE NOT (store = 'S10');",
        "UPDATE t SET note = CASE WHEN store = '' THEN 'empty' ELSE note END;",
        f"DELETE FROM t WHERE store = '{collides}' OR (store = 'S3' AND n > 3);",
        "UPDATE t SET n = -n WHERE store = 'S1' OR store IS NULL;",
    ]
    statements = parse_updates_text("\n".join(lines), "u.sql", schema=schema).statements
    df = spark.createDataFrame(rows, schema.to_ddl())
    result = apply_statements(df, statements, schema)
    plan = result._jdf.queryExecution().optimizedPlan().toString()
    assert "__lakectl_hash_0" in plan  # the hashed form was compiled
    assert plan.count("hash(store") == 1  # and the hash computed once per row
    assert "__lakectl_hash" not in ",".join(result.columns)
    create = "CREATE TABLE t (id INTEGER, store VARCHAR, n INTEGER, note VARCHAR)"
    expected = duckdb_after(create, lines, rows)
    assert ordered(rows_of(result)) == ordered(expected)
    assert any(r[1] == present for r in expected)  # the colliding rows were kept


def test_hashed_columns_keep_the_generated_methods_small(spark) -> None:  # type: ignore[no-untyped-def]
    # Every projection passes the hash on, also where no statement reads it; a stage column
    # that did not read it would let Spark fuse the statements into one method the JVM never
    # compiles (a read 25x slower).
    schema = parse_schema("id bigint, a int, store string, d double")
    columns = [
        "id",
        "cast(id % 97 AS int) AS a",
        "concat('S', id % 13) AS store",
        "id / 2.0e0 AS d",
    ]
    df = spark.range(2000).selectExpr(*columns)
    tests = [f"UPDATE t SET a = a + {i} WHERE store = 'S{i}' AND d > {i};" for i in range(4)]
    lines = tests[:2]  # two tests first, two last, 56 statements between that do not read it
    for i in range(28):
        lines.append(f"UPDATE t SET a = a + {i} WHERE d > {i * 30};")
        lines.append(f"UPDATE t SET d = d + a WHERE a % {i + 2} = 0;")
    lines += tests[2:]
    statements = parse_updates_text("\n".join(lines), schema=schema).statements
    result = apply_statements(df, statements, schema)
    assert "__lakectl_hash_0" in result._jdf.queryExecution().optimizedPlan().toString()
    assert largest_generated_method(result.agg(F.sum(F.hash(*result.columns)))) < 8000
    create = f"CREATE TABLE t AS SELECT {', '.join(columns)} FROM range(2000) r(id)"
    assert sorted(rows_of(result)) == sorted(duckdb_after(create, lines))


def test_hashed_tests_before_any_update_and_on_renamed_columns(spark) -> None:  # type: ignore[no-untyped-def]
    # DELETEs first: their filters must not be pushed below the hash layer (which would copy
    # the hash into each). The column's name is not a plain identifier (renamed for the SQL),
    # a literal is not plain text (written as hex bytes), and the deleted-flag mode of
    # materialize marks exactly the rows the plain mode removes.
    schema = Schema(
        (
            Column("id", "int"),
            Column("store id", "string"),
            Column("n", "int"),
            Column("gone", "boolean"),
        )
    )
    stores = ["S-1", "S-2", "Zürich", None, "S-3"]
    rows = [(i, stores[i % 5], i % 9, False) for i in range(60)]
    lines = [
        "DELETE FROM t WHERE `store id` = 'S-1' AND n > 4;",
        "DELETE FROM t WHERE `store id` = 'Zürich' AND n < 2;",
        "DELETE FROM t WHERE NOT (`store id` <> 'S-2') AND n = 3;",
        "UPDATE t SET n = n * 10 WHERE `store id` = 'Zürich';",
        "UPDATE t SET n = n + 1 WHERE `store id` <> 'S-3';",
    ]
    statements = parse_updates_text("\n".join(lines), "u.sql", schema=schema).statements
    df = spark.createDataFrame(rows, "id int, `store id` string, n int, gone boolean")
    result = apply_statements(df, statements, schema)
    plan = result._jdf.queryExecution().optimizedPlan().toString()
    assert "__lakectl_hash_0" in plan
    assert plan.count("hash(store id") == 1  # hashed once per row, not in the filters
    create = 'CREATE TABLE t (id INTEGER, "store id" VARCHAR, n INTEGER, gone BOOLEAN)'
    expected = duckdb_after(create, [line.replace("`", '"') for line in lines], rows)
    assert result.columns == ["id", "store id", "n", "gone"]
    assert ordered(rows_of(result)) == ordered(expected)
    flagged = apply_statements(df, statements, schema, deleted_flag="gone")
    kept = [r for r in rows_of(flagged) if not r[3]]
    assert ordered(kept) == ordered(expected)
    assert len(rows_of(flagged)) == len(rows)  # deleted rows are flagged, not dropped
