"""Which string columns the statements' compiler hashes once per row (pure, no Spark)."""

from __future__ import annotations

from lakectl.table.schema import parse_schema
from lakectl.updates import parse_updates_text
from lakectl.updates.prefilter import MIN_TESTS, hashed_columns
from lakectl.updates.validate import check_stored_statement

SCHEMA = parse_schema("id bigint, store string, city string, code string, n int, note string")


def hashed(text: str, keyed: bool = True) -> tuple[str, ...]:
    statements = parse_updates_text(text, "u.sql", schema=SCHEMA).statements
    checked = [check_stored_statement(s, SCHEMA) for s in statements]
    return hashed_columns(checked, SCHEMA, keyed=keyed)


def test_unwritten_string_columns_tested_often_enough_are_hashed() -> None:
    assert MIN_TESTS == 4
    text = "\n".join(
        [
            # (not point statements: their SET values are not constants)
            "UPDATE t SET n = n + 1 WHERE store = 'S1';",
            "UPDATE t SET note = upper(note) WHERE 'S2' = STORE;",  # literal first, any case
            "DELETE FROM t WHERE store <> 'S3' AND n > 5;",
            "UPDATE t SET note = CASE WHEN store = 'S4' THEN 'x' ELSE note END;",  # in a SET
            "UPDATE t SET n = n + 1 WHERE city = 'Oslo' OR city = 'Rome';",  # only 3 tests
            "DELETE FROM t WHERE city = 'Bern' AND n > 0;",
            "UPDATE t SET n = 0 WHERE n = 1 OR n = 2 OR n = 3 OR n = 4;",  # not a string
            "UPDATE t SET n = 1 WHERE note = 'a' OR note = 'b' OR note = 'c' OR note = 'd';",
        ]
    )
    # store: 4 tests; city: 3 (too few); n: no string; note: written.
    assert hashed(text) == ("store",)


def test_a_column_any_statement_writes_is_not_hashed() -> None:
    tests = [f"UPDATE t SET n = n + {i} WHERE store = 'S{i}';" for i in range(6)]
    assert hashed("\n".join(tests)) == ("store",)
    # Written by a statement after the tests: the hash would be stale for later ones.
    assert hashed("\n".join([*tests, "UPDATE t SET store = upper(store);"])) == ()


def test_point_statements_count_only_when_they_are_not_compiled_as_runs() -> None:
    # code = 'literal' with constant SET values: point statements on the key "code".
    points = "\n".join(f"UPDATE t SET note = 'n{i}' WHERE code = 'C{i}';" for i in range(6))
    assert hashed(points, keyed=True) == ()
    assert hashed(points, keyed=False) == ("code",)
