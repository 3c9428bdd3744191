"""Which statements count as point statements (pure, no Spark)."""

from __future__ import annotations

import pytest

from lakectl.table.schema import parse_schema
from lakectl.updates.keyed import keyed_form
from lakectl.updates.statements import Statement
from lakectl.updates.validate import check_stored_statement

SCHEMA = parse_schema("id bigint, code string, small int, name string, amount decimal(10,2)")


def form(sql: str):  # type: ignore[no-untyped-def]
    kind = "delete" if sql.startswith("DELETE") else "update"
    checked = check_stored_statement(Statement(0, sql, kind, "t", 1, "u"), SCHEMA)
    return keyed_form(checked, SCHEMA)


@pytest.mark.parametrize(
    ("sql", "key", "keys", "columns"),
    [
        ("UPDATE t SET name = 'x' WHERE id = 5", "id", (5,), ["name"]),
        ("UPDATE t SET name = 'x', amount = NULL WHERE 5 = ID", "id", (5,), ["name", "amount"]),
        ("UPDATE t SET name = 'x' WHERE (id = -5)", "id", (-5,), ["name"]),
        ("UPDATE t SET amount = -1.5 WHERE id IN (1, NULL, 3)", "id", (1, 3), ["amount"]),
        (
            "UPDATE t SET amount = CAST('1.5' AS decimal(10,2)) WHERE code = 'a'",
            "code",
            ("a",),
            ["amount"],
        ),
        ("DELETE FROM t WHERE code IN ('a', 'b')", "code", ("a", "b"), []),
        ("DELETE FROM t WHERE id IN (NULL)", "id", (), []),
        ("UPDATE t SET name = 'x' WHERE small = 2147483647", "small", (2147483647,), ["name"]),
        # the string is converted to the key's type when the statement is bound
        ("UPDATE t SET name = 'x' WHERE id = '5'", "id", (5,), ["name"]),
    ],
)
def test_point_statements(sql: str, key: str, keys: tuple[object, ...], columns: list[str]) -> None:
    keyed = form(sql)
    assert keyed is not None
    assert (keyed.key, keyed.keys, [name for name, _ in keyed.values]) == (key, keys, columns)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE t SET name = 'x'",
        "DELETE FROM t",
        "UPDATE t SET name = upper(name) WHERE id = 5",  # not a constant
        "UPDATE t SET id = 6 WHERE id = 5",  # rewrites its own key
        "UPDATE t SET name = 'x' WHERE id = 5 AND code = 'a'",
        "UPDATE t SET name = 'x' WHERE id <> 5",
        "UPDATE t SET name = 'x' WHERE id NOT IN (5)",
        "UPDATE t SET name = 'x' WHERE id = 5.0",
        "UPDATE t SET name = 'x' WHERE small = 2147483648",  # never equal in Spark: keep it general
        "UPDATE t SET name = 'x' WHERE amount = 5",  # decimal keys are not handled
        "UPDATE t SET name = 'x' WHERE id = small",
    ],
)
def test_not_point_statements(sql: str) -> None:
    assert form(sql) is None
