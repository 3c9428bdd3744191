"""A statement means the same in Spark and in the Arrow engine: integer overflow and a SET value
that does not fit its column are the same error in both (never a wrapped value or NULL), a value
that fits gives the same rows, and what the expression layer refuses is refused by both with the
same message."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakectl.arrow.statements import apply_compiled, compile_statements
from lakectl.arrow.types import arrow_schema
from lakectl.errors import OVERFLOW, BadInputError, engine_error, overflow_error
from lakectl.spark.statement_compile import apply_statements
from lakectl.table.schema import parse_schema
from lakectl.updates import Statement
from lakectl.updates.statements import parse_updates_text
from lakectl.updates.validate import check_stored_statement

SCHEMA = parse_schema("id int, i int, b bigint, d double, dec decimal(12,2), t tinyint, s string")
ROWS = [
    (1, 7, 5, 2.7, Decimal("-3.99"), 1, "a"),
    (2, None, None, None, None, None, None),
    (3, 2147483600, 3000000000, -2.7, Decimal("9999999999.99"), 100, "c"),
    (4, -3, -9223372036854775807, 1e10, Decimal("0.50"), -100, "d"),
    (5, 0, 9223372036854775807, float("nan"), Decimal("-0.99"), 0, "e"),
]


@pytest.fixture(scope="module")
def frame(spark):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(ROWS, SCHEMA.to_ddl())


def _arrow_rows(statements: list[Statement]) -> list[tuple[object, ...]]:
    table = pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in ROWS], arrow_schema(SCHEMA)
    )
    try:
        out = apply_compiled(table, compile_statements(statements, SCHEMA))
    except pa.ArrowInvalid as exc:  # as the Arrow reader reports it (lakectl.arrow.read)
        assert "overflow" in str(exc)
        raise overflow_error() from exc
    return sorted(zip(*(out.column(n).to_pylist() for n in SCHEMA.names), strict=True))


def _spark_rows(frame, statements: list[Statement]) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    try:
        return sorted(tuple(r) for r in apply_statements(frame, statements, SCHEMA).collect())
    except Exception as exc:  # as every Spark command reports it (lakectl.errors.engine_error)
        mapped = engine_error(exc)
        if mapped is None:
            raise
        raise mapped from exc


def _outcome(read, *args) -> object:  # type: ignore[no-untyped-def]
    """The rows (NaN as text, so that equal rows compare equal), or the error's message."""
    try:
        rows = read(*args)
    except BadInputError as exc:
        return ("error", exc.message)
    return [tuple("NaN" if v != v else v for v in row) for row in rows]


OVERFLOWING = {
    "int arithmetic": "UPDATE t SET i = i + 100 WHERE id = 3",
    "bigint arithmetic": "UPDATE t SET b = b * 2 WHERE id = 4",
    "bigint into int": "UPDATE t SET i = b",
    "bigint into int, one row": "UPDATE t SET i = b WHERE id = 3",
    "double into int": "UPDATE t SET i = d WHERE id = 4",
    "NaN into int": "UPDATE t SET i = d WHERE id = 5",
    "decimal into int": "UPDATE t SET i = dec WHERE id = 3",
    "int into tinyint": "UPDATE t SET t = t * 2",
}


@pytest.mark.parametrize("name", OVERFLOWING)
def test_overflow_is_the_same_error_in_both_engines(frame, name) -> None:  # type: ignore[no-untyped-def]
    statements = list(
        parse_updates_text(OVERFLOWING[name] + ";", "o.updates", None, SCHEMA).statements
    )
    expected = ("error", overflow_error().message)
    assert OVERFLOW in expected[1]
    assert _outcome(_spark_rows, frame, statements) == expected
    assert _outcome(_arrow_rows, statements) == expected


FITTING = {
    # the rows the WHERE leaves alone would not fit: they are not computed
    "bigint into int where it fits": (
        "UPDATE t SET i = b WHERE id IN (1, 2)",
        {1: 5, 2: None, 3: 2147483600, 4: -3, 5: 0},
    ),
    "double into int drops the fraction": (
        "UPDATE t SET i = d WHERE id < 4",
        {1: 2, 2: None, 3: -2, 4: -3, 5: 0},
    ),
    "decimal into int drops the fraction": (
        "UPDATE t SET i = dec WHERE id <> 3",
        {1: -3, 2: None, 3: 2147483600, 4: 0, 5: 0},
    ),
    "arithmetic that fits": (
        "UPDATE t SET i = i + 47 WHERE id = 3",
        {1: 7, 2: None, 3: 2147483647, 4: -3, 5: 0},
    ),
    "tinyint from int that fits": (
        "UPDATE t SET i = i + 1; UPDATE t SET t = i - 8 WHERE id = 1",
        {1: 8, 2: None, 3: 2147483601, 4: -2, 5: 1},
    ),
}


@pytest.mark.parametrize("name", FITTING)
def test_values_that_fit_give_the_same_rows(frame, name) -> None:  # type: ignore[no-untyped-def]
    text, expected = FITTING[name]
    statements = list(parse_updates_text(text + ";", "f.updates", None, SCHEMA).statements)
    spark_rows = _outcome(_spark_rows, frame, statements)
    assert spark_rows == _outcome(_arrow_rows, statements)
    assert isinstance(spark_rows, list)
    assert {r[0]: r[1] for r in spark_rows} == expected
    if name == "tinyint from int that fits":
        assert [r[5] for r in spark_rows] == [0, None, 100, -100, 0]


REFUSED = {
    "a double into a string": ("UPDATE t SET s = 1e3", "cannot set column 's' (string) to 1e3"),
    "a long string into an int": (
        "UPDATE t SET i = '99999999999'",
        "cannot set column 'i' (int) to '99999999999': out of range for int",
    ),
    "a fraction into an int": (
        "UPDATE t SET i = 2.5",
        "cannot set column 'i' (int) to 2.5: not an integer",
    ),
    "a bigint constant into an int": (
        "UPDATE t SET i = 3000000000",
        "cannot set column 'i' (int) to 3000000000: out of range for int",
    ),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_the_expression_layer_refuses_both_engines_refuse(frame, name) -> None:  # type: ignore[no-untyped-def]
    # as a reader meets it in the log (installing it is refused with the same message)
    text, fragment = REFUSED[name]
    stored = Statement(0, text, "update", "t", 7, "stored.updates")
    with pytest.raises(BadInputError) as installing:
        parse_updates_text(text + ";", "new.updates", None, SCHEMA)
    assert fragment in installing.value.message
    outcomes = [_outcome(_spark_rows, frame, [stored]), _outcome(_arrow_rows, [stored])]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == "error" and fragment in outcomes[0][1], outcomes
    assert outcomes[0][1].startswith("stored.updates:7")


def test_statements_are_bound_with_the_converted_constants() -> None:
    """What both engines compile: the constants as values of the column's type."""
    schema = parse_schema(
        "id int, n bigint, b boolean, dt date, ts timestamp, dec decimal(10,2), s string"
    )
    text = (
        "UPDATE t SET n = ' 12 ', b = 'yes', dt = '2024-1-5', "
        "ts = '2024-01-05 10:00:00 +02:00', dec = '1.005' WHERE id IN ('1', '2', NULL);"
    )
    statement = parse_updates_text(text, schema=schema).statements[0]
    checked = check_stored_statement(statement, schema)
    values = {name: (node.type, node.value) for name, node in checked.values}  # type: ignore[attr-defined]
    assert values == {
        "n": ("bigint", 12),
        "b": ("boolean", True),
        "dt": ("date", dt.date(2024, 1, 5)),
        "ts": ("timestamp", dt.datetime(2024, 1, 5, 8, 0)),
        "dec": ("decimal(10,2)", Decimal("1.01")),
    }
    assert checked.condition is not None
    assert checked.condition.op == "in"  # type: ignore[attr-defined]
    assert checked.condition.param[:2] == ((1, 2), True)  # type: ignore[attr-defined]


# --- through the command line --------------------------------------------------------------

CSV = "id,i,b,d\n1,7,5,2.7\n2,,,\n3,2147483600,3000000000,-2.7\n"


def test_a_narrowing_set_reads_alike_through_the_cli(tmp_path: Path, lakectl_cli, spark) -> None:  # type: ignore[no-untyped-def]
    def run(*args: object):  # type: ignore[no-untyped-def]
        return lakectl_cli("--warehouse", tmp_path, *args, "--json")

    assert run("create", "t", "--schema", "id int, i int, b bigint, d double").code == 0
    (tmp_path / "rows.csv").write_text(CSV)
    assert run("load", "t", tmp_path / "rows.csv", "--mode", "append").code == 0
    (tmp_path / "fix.updates").write_text(
        "-- time=2001-01-01\n"
        "UPDATE t SET i = b WHERE id = 1;\n"
        "UPDATE t SET b = d WHERE id = 1;\n"
        "-- time=2002-01-01\n"
        "UPDATE t SET i = b + 1;\n"
    )
    assert run("apply-updates", "t", tmp_path / "fix.updates").code == 0
    read: dict[str, object] = {}
    failed: dict[str, object] = {}
    for engine in ("spark", "arrow"):
        fits = run("snapshot", "t", "--engine", engine, "--as-of", "2001-06-01")
        assert fits.code == 0, fits.out
        read[engine] = {r["id"]: (r["i"], r["b"], r["d"]) for r in fits.json["rows"]}
        overflow = run("snapshot", "t", "--engine", engine, "--as-of", "2002-06-01")
        failed[engine] = (overflow.code, overflow.json["error"]["message"])
    assert read["spark"] == read["arrow"]
    assert read["spark"] == {
        1: (5, 2, 2.7),
        2: (None, None, None),
        3: (2147483600, 3000000000, -2.7),
    }
    assert failed["spark"] == failed["arrow"] == (65, overflow_error().message)
