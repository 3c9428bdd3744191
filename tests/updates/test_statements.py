"""Parsing ``.updates`` files and the safety check of their statements (pure, no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.errors import BadInputError
from lakectl.expr.check import RULES
from lakectl.table.schema import parse_schema
from lakectl.updates import (
    ParsedUpdates,
    Statement,
    parse_updates_file,
    parse_updates_text,
    statements_effective_at,
    validate_statement,
)
from tests.support.statement_samples import ALL_TYPES, ALLOWED

SEPT_1_2014 = 1_409_529_600_000
DOCTORS = parse_schema("number int, first_name string, last_name string, extra_field string")


def parse(text: str, **kwargs: object) -> ParsedUpdates:
    return parse_updates_text(text, "u.sql", **kwargs)  # type: ignore[arg-type]


def error(text: str, schema: object = None) -> str:
    with pytest.raises(BadInputError) as info:
        parse_updates_text(text, "u.sql", schema=schema)  # type: ignore[arg-type]
    return info.value.message


# --- the file format ------------------------------------------------------------------------


def test_seed_000_updates_file(interop: Path) -> None:
    parsed = parse_updates_file(interop / "hive-scd" / "updates", schema=DOCTORS)
    source = str(interop / "hive-scd" / "updates")
    assert parsed.statements == (
        Statement(
            0, "UPDATE doctors SET number = 12 WHERE number = 2", "update", "doctors", 1, source
        ),
        Statement(
            SEPT_1_2014,
            "DELETE FROM doctors WHERE first_name = 'Colin'",
            "delete",
            "doctors",
            3,
            source,
        ),
    )
    assert parsed.warnings == ()
    assert parsed.table == "doctors"


def test_statements_span_lines_and_keep_their_start_line() -> None:
    text = (
        "\n\n  UPDATE t\n   SET a = 1,\n       b = 2\n WHERE c = 3;  DELETE FROM t\nWHERE a = 1;\n"
    )
    parsed = parse(text)
    assert [(s.line, s.sql) for s in parsed.statements] == [
        (3, "UPDATE t SET a = 1, b = 2 WHERE c = 3"),
        (6, "DELETE FROM t WHERE a = 1"),
    ]


def test_directives_set_the_time_of_the_statements_after_them() -> None:
    text = (
        "DELETE FROM t WHERE a = 0;\n"
        "-- time=2014-09-01\n"
        "DELETE FROM t WHERE a = 1;\n"
        "DELETE FROM t WHERE a = 2;\n"
        "  -- TIME=5\n"
        "DELETE FROM t WHERE a = 3;\n"
        "-- time=-10\n"
        "DELETE FROM t WHERE a = 4;\n"
        "-- time=2014-09-01T02:00:00+02:00\n"
        "DELETE FROM t WHERE a = 5;\n"
    )
    parsed = parse(text)
    assert [s.effective_ms for s in parsed.statements] == [
        0,
        SEPT_1_2014,
        SEPT_1_2014,
        5,
        -10,
        SEPT_1_2014,
    ]


def test_directive_times_use_the_timezone() -> None:
    parsed = parse("-- time=2014-09-01\nDELETE FROM t;", timezone="Europe/Paris")
    assert parsed.statements[0].effective_ms == SEPT_1_2014 - 2 * 3600 * 1000


def test_comments_and_separators_inside_strings_are_text() -> None:
    text = (
        "UPDATE t SET s = 'a;b -- not a comment', q = \"x;y\" -- a comment; with a semicolon\n"
        "  WHERE s <> 'it\\'s;' /* block; comment */ AND `odd;name` = 1;\n"
        "/* a block comment\n-- time=99\n; spanning lines */\n"
        "DELETE FROM t WHERE s = '\n-- time=5\n';\n"
    )
    parsed = parse(text)
    assert [s.sql for s in parsed.statements] == [
        "UPDATE t SET s = 'a;b -- not a comment', q = 'x;y' WHERE s <> 'it\\'s;' AND `odd;name` = 1",
        "DELETE FROM t WHERE s = '\\n-- time=5\\n'",  # stored on one line, newlines escaped
    ]
    assert [s.effective_ms for s in parsed.statements] == [0, 0]
    assert [s.line for s in parsed.statements] == [1, 6]


def test_empty_statements_and_comment_only_files() -> None:
    assert parse("").statements == ()
    assert parse("-- nothing here\n/* nor here */\n;;\n").statements == ()
    assert parse("-- time=5\n").statements == ()
    assert parse("").table is None


def test_crlf_line_endings() -> None:
    parsed = parse("DELETE FROM t\r\nWHERE a = 1;\r\n-- time=7\r\nDELETE FROM t;\r\n")
    assert [(s.line, s.effective_ms, s.sql) for s in parsed.statements] == [
        (1, 0, "DELETE FROM t WHERE a = 1"),
        (4, 7, "DELETE FROM t"),
    ]


def test_missing_semicolon_at_the_end_is_refused() -> None:
    with pytest.raises(BadInputError) as info:
        parse("DELETE FROM t WHERE a = 1;\n\n  DELETE FROM t WHERE a = 2\n-- trailing comment\n")
    assert info.value.message == "u.sql:3:3: the statement starting here is not terminated by ';'"
    assert info.value.hint == "end every statement with ';'"


def test_directive_inside_a_statement_is_refused() -> None:
    assert error("UPDATE t SET a = 1\n-- time=5\nWHERE b = 2;") == (
        "u.sql:2: '-- time=' directive inside the statement that starts at line 1: "
        "is its ';' missing?"
    )


def test_malformed_directive_names_file_line_and_value() -> None:
    assert error("DELETE FROM t;\n-- time=2014-13-01\nDELETE FROM t;") == (
        "u.sql:2: malformed time '2014-13-01' (month must be in 1..12): expected epoch "
        "milliseconds (e.g. 1409529600000), yyyy-MM-dd, or yyyy-MM-dd HH:mm[:ss[.SSS]] "
        "(a T or a space before the time) with an optional Z, UTC or +hh:mm/-hh:mm offset"
    )
    assert error("-- time=\nDELETE FROM t;") == "u.sql:1: '-- time=' directive without a time"
    assert "malformed time 'soon'" in error("-- time=soon\nDELETE FROM t;")


def test_directive_takes_a_time_written_with_a_space() -> None:
    spaced = parse("-- time=2014-09-01 02:00 +02:00\nDELETE FROM t;")
    iso = parse("-- time=2014-09-01T00:00:00Z\nDELETE FROM t;")
    assert spaced == iso


def test_warnings_for_date_like_digits_lookalike_directives_and_pre_1970_times() -> None:
    parsed = parse(
        "-- time=20140901\nDELETE FROM t;\n--time=2014-09-01\n-- time=1960-01-01\nDELETE FROM t;"
    )
    assert parsed.warnings == (
        "u.sql:1: time '20140901' is read as epoch milliseconds (1970-01-01T05:35:40.901Z, "
        "in 1970); if you meant a date, write 2014-09-01",
        "u.sql:3: '--time=2014-09-01' is not a directive and is ignored as a comment; "
        "write '-- time=VALUE' to set the effective time",
        "u.sql:4: the statements after this directive take effect before 1970 "
        "(1960-01-01T00:00:00Z), so even '--as-of -1' applies them; use --raw to read the "
        "table without statements",
    )
    assert [s.effective_ms for s in parsed.statements] == [20140901, -315_619_200_000]


def test_unterminated_string_and_comment() -> None:
    assert error("DELETE FROM t WHERE a = 'x;\n") == (
        "u.sql:1:25: unterminated string (opening ' has no closing ')"
    )
    assert error("DELETE FROM t; /* no end") == "u.sql:1:16: unterminated /* comment"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "DELETE FROM t;\nUPDATE t\n  SET a = (1 + ;",
            "u.sql:3:14: syntax error near '+': incomplete ADD expression",
        ),
        (
            "DELETE FROM t;\nUPDATE t SET a = 1\n  WHERE b = = 2;",
            "u.sql:3:13: syntax error near '=': incomplete EQ expression",
        ),
        (
            "UPDATE t SET a = 1 garbage here;",
            "u.sql:1:20: syntax error near 'garbage': unexpected token",
        ),
        (
            "DELETE FROM t WHERE;",
            "u.sql:1:15: syntax error near 'WHERE': incomplete WHERE expression",
        ),
        (
            "UPDATE t SET a = CASE WHEN b THEN 1;",
            "u.sql:1:35: syntax error near '1': Expected END after CASE",
        ),
        (
            "\n   UPDATE t SET a = upper(b, c);",
            "u.sql:2:31: syntax error near ')': The number of provided arguments (2) is greater "
            "than the maximum number of supported arguments (1)",
        ),
        ("UPDATE t SET;", "u.sql:1:1: UPDATE needs SET column = value"),
    ],
)
def test_syntax_errors_report_file_line_and_column(text: str, message: str) -> None:
    assert error(text) == message


def test_statement_position_on_a_later_column_of_the_first_line() -> None:
    message = error("DELETE FROM t; UPDATE t SET a = reflect('x', 'y');")
    assert message.startswith("u.sql:1:33: function 'reflect' is not allowed")


def test_table_name_must_be_consistent() -> None:
    parsed = parse("UPDATE Doctors SET a = 1;\nDELETE FROM doctors;\nDELETE FROM DOCTORS;")
    assert parsed.table == "Doctors"
    assert error("UPDATE doctors SET a = 1;\n\nDELETE FROM nurses;") == (
        "u.sql:3:13: statement uses table 'nurses' but the statement at line 1 uses 'doctors': "
        "all statements of a file must name the same table"
    )


def test_any_consistent_placeholder_name_is_accepted() -> None:
    parsed = parse("UPDATE placeholder SET number = 1;", schema=DOCTORS)
    assert parsed.statements[0].table == "placeholder"


def test_qualified_names_and_aliases() -> None:
    parsed = parse(
        "UPDATE db.t AS x SET x.a = 1 WHERE x.b = t.b;\nDELETE FROM db.t WHERE t.a = 2;",
        schema=parse_schema("a int, b int"),
    )
    assert [s.table for s in parsed.statements] == ["db.t", "db.t"]
    assert "another table (y)" in error("DELETE FROM t WHERE y.a = 1;")


def test_normalized_sql_is_stable() -> None:
    text = (
        "update T set A = date '2014-01-01', b = timestamp '2014-01-01 10:00:00', c = ifnull(x, 1),"
        " d = instr(s, 'a'), e = date_sub(d, 3), f = x <=> y, g = CAST(x AS decimal(10, 2))"
        " where x not in (1, 2) and s not like 'a%' and y is not null and z not between 1 and 2;"
    )
    first = parse(text).statements[0].sql
    again = parse(first + ";").statements[0].sql
    assert first == again


def test_parse_updates_file_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "fix.updates"
    path.write_text("UPDATE t SET s = 'Zoë';\n", encoding="utf-8")
    assert parse_updates_file(path).statements[0].sql == "UPDATE t SET s = 'Zoë'"
    path.write_bytes(b"UPDATE t SET s = '\xff';")
    with pytest.raises(BadInputError, match="not a UTF-8 text file"):
        parse_updates_file(path)


# --- which statements apply ---------------------------------------------------------------


def test_statements_effective_at() -> None:
    parsed = parse(
        "DELETE FROM t WHERE a = 0;\n-- time=100\nDELETE FROM t WHERE a = 1;\n"
        "-- time=50\nDELETE FROM t WHERE a = 2;\n-- time=0\nDELETE FROM t WHERE a = 3;"
    )
    lines = lambda as_of: [s.line for s in statements_effective_at(parsed.statements, as_of)]  # noqa: E731
    assert lines(-1) == []
    assert lines(0) == [1, 7]
    assert lines(49) == [1, 7]
    assert lines(50) == [1, 5, 7]
    assert lines(100) == [1, 3, 5, 7]  # file order, not time order
    assert lines(2**63 - 1) == [1, 3, 5, 7]


# --- the safety check ---------------------------------------------------------------------

FORBIDDEN = [
    (
        "UPDATE t SET s = reflect('java.lang.Runtime', 'getRuntime');",
        "function 'reflect' is not allowed",
    ),
    (
        "UPDATE t SET s = java_method('java.lang.System', 'exit', 1);",
        "function 'java_method' is not allowed",
    ),
    ("UPDATE t SET s = input_file_name();", "function 'input_file_name' is not allowed"),
    ("UPDATE t SET ts = current_timestamp();", "function 'current_timestamp' is not allowed"),
    ("UPDATE t SET ts = now();", "function 'now' is not allowed"),
    ("UPDATE t SET day = current_date;", "function 'current_date' is not allowed"),
    ("UPDATE t SET d = rand();", "function 'rand' is not allowed"),
    ("UPDATE t SET s = uuid();", "function 'uuid' is not allowed"),
    ("UPDATE t SET s = my_udf(s);", "function 'my_udf' is not allowed"),
    ("UPDATE t SET s = regexp_replace(s, 'a', 'b');", "function 'regexp_replace' is not allowed"),
    ("UPDATE t SET i = sum(i);", "aggregate function 'sum' is not allowed"),
    (
        "UPDATE t SET i = row_number() OVER (ORDER BY i);",
        "window function 'row_number' is not allowed",
    ),
    ("UPDATE t SET i = (SELECT max(i) FROM t);", "subqueries are not allowed"),
    ("DELETE FROM t WHERE i IN (SELECT i FROM other);", "subqueries are not allowed"),
    ("DELETE FROM t WHERE EXISTS (SELECT 1 FROM other);", "subqueries are not allowed"),
    ("DELETE FROM t USING other WHERE t.i = other.i;", "DELETE may not read other tables (USING)"),
    ("UPDATE t SET i = 1 FROM other;", "UPDATE may not read other tables (FROM)"),
    ("UPDATE t, other SET i = 1;", "UPDATE may not read other tables (JOIN)"),
    ("WITH x AS (SELECT 1) UPDATE t SET i = 1;", "UPDATE may not read other tables (WITH)"),
    ("DELETE FROM t WHERE other.i = 1;", "refers to another table (other)"),
    (
        "SELECT * FROM t;",
        "only UPDATE and DELETE statements are allowed in an .updates file, not SELECT",
    ),
    ("INSERT INTO t VALUES (1);", "not INSERT"),
    ("DROP TABLE t;", "not DROP"),
    ("TRUNCATE TABLE t;", "not TRUNCATETABLE"),
    ("MERGE INTO t USING o ON t.i = o.i WHEN MATCHED THEN DELETE;", "not MERGE"),
    ("ADD JAR /tmp/evil.jar;", "not ADD JAR"),
    ("SET spark.sql.ansi.enabled=true;", "not SET"),
    ("CREATE FUNCTION f AS 'Evil';", "not CREATE"),
    ("UPDATE t SET i = 1 LIMIT 1;", "LIMIT is not supported in UPDATE statements"),
    ("DELETE FROM t WHERE i = 1 RETURNING i;", "RETURNING is not supported in DELETE statements"),
    ("DELETE t WHERE i = 1;", "write DELETE FROM <table> [WHERE ...]"),
    ("UPDATE t SET s = s RLIKE 'a';", "function 'regexp_like' is not allowed"),
    ("UPDATE t SET i = i & 1;", "unsupported SQL construct"),
    ("UPDATE t SET s = array(1)[0];", "unsupported SQL construct 'ARRAY(1)[0]'"),
    ("UPDATE t SET i = @x;", "unsupported SQL construct"),
    ("UPDATE t SET (i, b) = (1, 2);", "SET expects column = expression"),
    ("UPDATE t SET i = 1, I = 2;", "column 'I' is set twice"),
    ("DELETE FROM t WHERE flag IS TRUE;", "only IS NULL and IS NOT NULL are supported"),
    ("UPDATE t SET day = to_date(s, 'yyyy-MM-dd');", "to_date with a format is not supported"),
    ("UPDATE t SET s = concat_ws(s, s);", "the separator of concat_ws must be a string literal"),
    ("UPDATE t SET i = locate(s, s);", "must be a string literal"),
    ("UPDATE t SET d = round(d, i);", "the scale of round must be an integer literal"),
    ("UPDATE t SET raw = CAST(s AS binary);", "CAST to BINARY is not supported"),
]


@pytest.mark.parametrize(("text", "expected"), FORBIDDEN)
def test_forbidden_constructs_are_refused_naming_file_and_line(text: str, expected: str) -> None:
    message = error("DELETE FROM t WHERE i = 0;\n" + text)
    assert message.startswith("u.sql:2"), message
    assert expected in message, message


@pytest.mark.parametrize(("text", "expected"), FORBIDDEN)
def test_forbidden_constructs_are_refused_when_read_back(text: str, expected: str) -> None:
    """A hand-edited stored statement goes through the same check (imprecise position)."""
    stmt = Statement(0, text.rstrip(";"), "update", "t", 42, "table/.updates")
    with pytest.raises(BadInputError) as info:
        validate_statement(stmt, ALL_TYPES.without(["raw"]) if "raw" not in text else ALL_TYPES)
    assert info.value.message.startswith("table/.updates:42: "), info.value.message


def test_refusal_message_is_exact() -> None:
    assert error("UPDATE t\nSET s =\n    upper(reflect('java.lang.Thread', 'sleep', 1000));") == (
        "u.sql:3:11: function 'reflect' is not allowed: it reaches outside the table "
        "(JVM, files or network)"
    )
    assert error("UPDATE t SET i = rand();") == (
        "u.sql:1:18: function 'rand' is not allowed: it is not deterministic: a read as of a "
        "given time must always give the same rows"
    )


@pytest.mark.parametrize("text", ALLOWED)
def test_allowed_constructs_pass_and_survive_the_round_trip(text: str) -> None:
    schema = parse_schema(str(ALL_TYPES.to_ddl()).replace("`", "") + ", i2 int")
    stmt = parse(text, schema=schema).statements[0]
    validate_statement(stmt, schema)


def test_every_rule_is_exercised_by_the_allowed_examples() -> None:
    import sqlglot

    seen = {
        type(node)
        for text in ALLOWED
        for node in sqlglot.parse_one(text.rstrip(";"), read="spark").walk()
    }
    assert set(RULES) - seen == set()


# --- schema-dependent checks --------------------------------------------------------------


def test_unknown_column_names_the_columns() -> None:
    assert error("UPDATE doctors\n  SET number = 12\n  WHERE nmber = 2;", DOCTORS) == (
        "u.sql:3:9: unknown column 'nmber'; the table's columns are: number, first_name, "
        "last_name, extra_field"
    )
    assert "unknown column 'age'" in error("UPDATE doctors SET age = 1;", DOCTORS)


def test_columns_are_case_insensitive() -> None:
    parsed = parse("UPDATE doctors SET NUMBER = 12 WHERE First_Name = 'Colin';", schema=DOCTORS)
    validate_statement(parsed.statements[0], DOCTORS)


def test_unknown_column_when_read_back() -> None:
    stmt = Statement(0, "UPDATE doctors SET age = 1", "update", "doctors", 7, "doctors/.updates")
    with pytest.raises(BadInputError) as info:
        validate_statement(stmt, DOCTORS)
    assert info.value.message == (
        "doctors/.updates:7: unknown column 'age'; the table's columns are: number, first_name, "
        "last_name, extra_field"
    )


@pytest.mark.parametrize(
    ("assignment", "problem"),
    [
        ("i = 'abc'", "cannot set column 'i' (int) to 'abc': not an integer"),
        ("i = '1.5'", "not an integer (it would be truncated)"),
        ("i = 1.5", "not an integer (it would be truncated)"),
        ("i = 2147483648", "out of range for int"),
        ("i = -2147483649", "out of range for int"),
        ("b = 9223372036854775808", "out of range for bigint"),
        ("i = DATE '2014-01-01'", "not an integer"),
        ("amount = 123456789.0", "out of range for decimal(10,2)"),
        ("amount = 'ten'", "not a number"),
        ("f = 1e39", "out of range for float"),
        ("d = 'abc'", "not a number"),
        ("flag = 'maybe'", "not a boolean"),
        ("day = '2014-02-30'", "not a date"),
        ("day = 'yesterday'", "not a date"),
        ("day = 20140901", "not a date"),
        ("ts = '2014-09-01 25:00:00'", "not a timestamp"),
        ("ts = 1409529600", "not a timestamp"),
        ("id = NULL", "column 'id' is NOT NULL and cannot be set to NULL"),
        ("raw = 'x'", "column 'raw' has type binary, which SET cannot change"),
    ],
)
def test_set_values_that_cannot_be_cast_are_refused(assignment: str, problem: str) -> None:
    message = error(f"DELETE FROM t WHERE i = 1;\n\nUPDATE t SET {assignment};", ALL_TYPES)
    assert message.startswith("u.sql:3:"), message
    assert problem in message, message


@pytest.mark.parametrize(
    "assignment",
    [
        "i = '12'",
        "i = ' -7 '",
        "i = 12.0",
        "i = -2147483648",
        "i = TRUE",
        "b = 9223372036854775807",
        "amount = 12345678.999",
        "amount = '-1.5'",
        "amount = 1e2",
        "f = 'NaN'",
        "d = '-Infinity'",
        "d = 1.5",
        "flag = 'yes'",
        "flag = 0",
        "s = 12",
        "s = DATE '2014-01-01'",
        "day = '2014-9-1'",
        "day = '2014-09-01 12:00:00'",
        "day = TIMESTAMP '2014-09-01 12:00:00'",
        "ts = '2014-09-01'",
        "ts = '2014-09-01T12:00:00.123456Z'",
        "ts = DATE '2014-09-01'",
        "i = CAST('12' AS int)",
        "i = NULL",
    ],
)
def test_castable_set_values_are_accepted(assignment: str) -> None:
    parse(f"UPDATE t SET {assignment};", schema=ALL_TYPES)


def test_cast_of_a_bad_literal_is_refused_anywhere() -> None:
    assert "cannot cast '2014-13-01' to date" in error(
        "DELETE FROM t WHERE day = DATE '2014-13-01';", ALL_TYPES
    )
    assert "cannot cast 'x' to int" in error("DELETE FROM t WHERE i = CAST('x' AS int);")


def test_set_value_error_points_at_the_value() -> None:
    assert error("UPDATE doctors\n   SET number = 'twelve';", DOCTORS) == (
        "u.sql:2:17: cannot set column 'number' (int) to 'twelve': not an integer"
    )


def test_set_of_key_like_columns_is_compiled_not_refused() -> None:
    parse("UPDATE t SET id = id + 1;", schema=ALL_TYPES)
