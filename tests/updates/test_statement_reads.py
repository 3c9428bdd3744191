"""Reads of tables whose statements are at the cost limits, damaged, or full of quotes: bounded,
refused only where needed, and equal to Spark SQL evaluating the same text."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

REPO = Path(__file__).resolve().parents[2]
AVRO = REPO / "sample_data/doctors/doctors.avro"
SCHEMA = (
    "number int, first_name string, last_name string, "
    "extra_field string default 'fishfingers and custard'"
)
LITERALS = [
    "'O''Brien'",
    "'O' 'Brien'",
    "'O\\'Brien'",
    "'x''''y'",
    "'back\\\\slash'",
    "'tab\\there'",
    "'\\u00e9t\\u00e9'",
    "'caf\u00e9'",
    '"double"',
    "''''",
]
NAMES = ["O'Brien", "OBrien", "x''y", "x'y", "back\\slash", "tab\there", "été", "café", "double"]


@pytest.fixture(scope="module")
def doctors(tmp_path_factory, lakectl_cli, spark):
    root = tmp_path_factory.mktemp("reads")
    run = lambda *a: lakectl_cli("--warehouse", root, *a, "--json")  # noqa: E731
    assert run("create", "doctors", "--schema", SCHEMA).code == 0
    assert run("load", "doctors", AVRO, "--mode", "append", "--engine", "arrow").code == 0
    return root, run


def test_literals_mean_what_spark_sql_says(spark) -> None:
    from lakectl.spark.statement_compile import apply_statements

    schema = parse_schema("number int, last_name string")
    df = spark.createDataFrame(list(enumerate(NAMES)), "number int, last_name string")
    df.createOrReplaceTempView("names")
    for literal in LITERALS:
        text = f"UPDATE t SET number = -1 WHERE last_name = {literal};"
        (stmt,) = parse_updates_text(text, "quotes.updates", None, schema).statements
        ours = sorted(apply_statements(df, [stmt], schema).collect())
        theirs = sorted(
            spark.sql(
                f"SELECT CASE WHEN last_name = {literal} THEN -1 ELSE number END AS number, "
                "last_name FROM names"
            ).collect()
        )
        assert ours == theirs, literal
        (value,) = spark.sql(f"SELECT {literal}").first()
        assert any(r.number == -1 for r in ours) == (value in NAMES), literal


def test_statements_at_the_limits_read_in_bounded_time(doctors) -> None:
    root, run = doctors
    chain = " OR ".join(f"number = {i}" for i in range(90))
    text = (
        "UPDATE doctors SET last_name = rpad(last_name, 8192, 'a');\n"
        + "UPDATE doctors SET first_name = first_name || first_name;\n" * 4
        + "DELETE FROM doctors WHERE last_name LIKE '%a%b%';\n"
        + f"UPDATE doctors SET extra_field = 'chained' WHERE {chain};\n"
    )
    (root / "limits.updates").write_text(text)
    assert run("apply-updates", "doctors", root / "limits.updates").code == 0
    rows = run("snapshot", "doctors").json["rows"]
    raw = run("snapshot", "doctors", "--raw").json["rows"]
    assert len(rows) == len(raw) == 11  # no stored name has a 'b' after an 'a'
    for row, before in zip(
        sorted(rows, key=lambda r: r["number"]), sorted(raw, key=lambda r: r["number"]), strict=True
    ):
        assert len(row["last_name"]) == 8192 and row["first_name"] == before["first_name"] * 16
        assert row["extra_field"] == ("chained" if row["number"] < 90 else before["extra_field"])


def test_a_damaged_record_fails_only_the_reads_that_need_it(doctors) -> None:
    root, run = doctors
    (root / "late.updates").write_text(
        "-- time=2030-01-01\nDELETE FROM doctors WHERE number = 1;\n"
    )
    assert run("apply-updates", "doctors", root / "late.updates").code == 0
    log = root / "doctors" / "_lakectl" / "log"
    entry = max(p for p in log.glob("*.json") if "late.updates" in p.read_text())
    record = json.loads(entry.read_text())
    record["info"]["statements"][0]["sql"] = "DELETE FROM doctors WHERE reflect('x', 'y') = 1"
    entry.write_text(json.dumps(record))

    later = run("snapshot", "doctors", "--as-of", "2031-01-01")
    assert later.code == 65
    message = later.json["error"]["message"]
    assert "statement 1 installed by version" in message and "reflect" in message
    assert run("snapshot", "doctors").code == 0  # effective in 2030: not needed now
    assert run("snapshot", "doctors", "--raw").code == 0
    listed = run("updates", "doctors").json["statements"]
    assert [e["problem"] is not None for e in listed] == [False] * (len(listed) - 1) + [True]


@pytest.mark.parametrize(
    ("sql", "limit", "year"),
    [  # each effective before the one before it: a read of one does not need the others
        (
            "DELETE FROM doctors WHERE last_name LIKE '%a%a%a%a%a%a%a%a%a%a%a%a%b'",
            "updates.max.like.wildcards",
            2029,
        ),
        (
            "UPDATE doctors SET first_name = LPAD(first_name, 2147483647, 'x')",
            "updates.max.string.length",
            2028,
        ),
    ],
)
def test_a_costly_statement_written_into_the_log_is_refused_by_readers(
    doctors, sql, limit, year
) -> None:
    root, run = doctors
    name = f"costly-{limit}.updates"
    (root / name).write_text(f"-- time={year}-01-01\nDELETE FROM doctors WHERE number = 2;\n")
    assert run("apply-updates", "doctors", root / name).code == 0
    log = root / "doctors" / "_lakectl" / "log"
    entry = max(p for p in log.glob("*.json") if name in p.read_text())
    record = json.loads(entry.read_text())
    record["info"]["statements"][0]["sql"] = sql  # canonical text, over a limit
    entry.write_text(json.dumps(record))
    refused = run("snapshot", "doctors", "--as-of", f"{year}-06-01")
    assert refused.code == 65 and limit in refused.json["error"]["message"]
    assert "read before the statement's effective time" in refused.json["error"]["hint"]
    assert run("snapshot", "doctors", "--as-of", f"{year - 1}-06-01").code == 0


LIKE_PIECES = ["a", "b", "%", "_", "\\%", "\\_", "\\\\", ".", "*", "\u00e9", "\U0001f600"]
LIKE_VALUE_CHARS = "ab%_\\.*\n\u00e9\U0001f600AB"


def _like_cases(count: int, seed: int = 7) -> tuple[list[str], list[str | None]]:
    rng = random.Random(seed)
    patterns = ["%a%a%b", "%%", "%", "", "a%b%", "%\\%%_%", "%A%b"]
    while len(patterns) < count:
        pieces = rng.choices(LIKE_PIECES, k=rng.randint(0, 7))
        pieces[rng.randint(0, len(pieces)) - 1 : 0] = ["%"] * rng.randint(0, 3)
        patterns.append("".join(pieces))
    values: list[str | None] = ["", None, "a" * 50 + "b", "xaayb"]
    values += ["".join(rng.choices(LIKE_VALUE_CHARS, k=rng.randint(0, 10))) for _ in range(150)]
    return patterns, values


def test_compiled_like_means_what_spark_like_means(spark) -> None:
    """Patterns with two or more % become a linear regular expression: on every value (NULL,
    newlines, characters beyond the BMP, regex syntax), LIKE, NOT LIKE and ILIKE give what
    Spark's own operators give."""
    from pyspark.sql import functions as F

    from lakectl.spark.statement_compile import apply_statements

    patterns, values = _like_cases(60)
    operators = ["LIKE", "NOT LIKE", "ILIKE"]
    names = [f"m{i}" for i in range(len(patterns))]
    schema = parse_schema("id int, s string, " + ", ".join(f"{n} boolean" for n in names))
    rows = [(i, v, *[None] * len(names)) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, schema.to_ddl())
    sets, native = [], []
    for i, (name, pattern) in enumerate(zip(names, patterns, strict=True)):
        operator = operators[i % len(operators)]
        quoted = pattern.replace("\\", "\\\\")
        sets.append(f"{name} = s {operator} '{quoted}'")
        tested = F.col("s").ilike(pattern) if operator == "ILIKE" else F.col("s").like(pattern)
        native.append((~tested if operator == "NOT LIKE" else tested).alias(name))
    (stmt,) = parse_updates_text(
        f"UPDATE t SET {', '.join(sets)};", "like.updates", None, schema
    ).statements
    ours = {r.id: r for r in apply_statements(df, [stmt], schema).collect()}
    theirs = df.select("id", *native).collect()
    assert "RLIKE" not in stmt.sql and len(theirs) == len(values)
    for row in theirs:
        for name, pattern in zip(names, patterns, strict=True):
            assert ours[row.id][name] == row[name], (pattern, values[row.id])


def test_like_over_long_values_gives_its_answer(spark) -> None:
    """``%a%a%b`` over 8,192 characters (cubic with Spark's own LIKE: minutes)."""
    from lakectl.spark.statement_compile import apply_statements

    schema = parse_schema("id int, s string")
    df = spark.createDataFrame(
        [(1, "a" * 8192), (2, "a" * 8191 + "b"), (3, None)], "id int, s string"
    )
    text = "DELETE FROM t WHERE s LIKE '%a%a%b';\nDELETE FROM t WHERE s ILIKE '%A%A%AA%';"
    statements = parse_updates_text(text, "long.updates", None, schema).statements
    assert [r.id for r in apply_statements(df, statements, schema).collect()] == [3]
