"""The stored parse of installed statements: every statement the checks accept survives the round
trip exactly, reads rebuild it instead of parsing the text, and a damaged or lying stored form
is never used (the text is parsed and means what it says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakectl.cli.main import main
from lakectl.expr.check import render_sql
from lakectl.scan.statements import installed_statements
from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore
from lakectl.updates import validate
from lakectl.updates.statements import parse_updates_text
from lakectl.updates.stored_form import MAX_FORM_CHARS, MAX_NODES, decode_tree, encode_tree
from lakectl.updates.validate import check_stored_statement, parsed_statement
from tests.support.statement_samples import ALL_TYPES, ALLOWED

SCHEMA = ALL_TYPES.to_ddl().replace("`", "") + ", i2 int"


@pytest.mark.parametrize("text", ALLOWED)
def test_every_allowed_statement_survives_the_stored_form(text: str) -> None:
    from lakectl.table.schema import parse_schema

    (stmt,) = parse_updates_text(text, "u.sql", None, parse_schema(SCHEMA)).statements
    tree = parsed_statement(stmt.sql)
    form = encode_tree(tree)
    assert isinstance(form, str)
    rebuilt = decode_tree(json.loads(json.dumps(form)))
    assert rebuilt is not None
    assert rebuilt == tree
    assert render_sql(rebuilt) == stmt.sql
    before = rebuilt.copy()
    assert validate._rendered(rebuilt) == stmt.sql  # rendered in place: nothing rewritten
    assert rebuilt == before and repr(rebuilt) == repr(before)


def test_an_in_list_is_stored_about_as_compactly_as_its_text() -> None:
    sql = "DELETE FROM t WHERE b IN (" + ", ".join(str(i) for i in range(30_000)) + ")"
    form = encode_tree(parsed_statement(sql))
    assert form is not None and len(form) < 1.2 * len(sql)


def _nested(depth: int) -> str:
    condition = '{"":"Paren","this":' * depth + '"1"' + "}" * depth
    return '{"":"Delete","this":{"":"Table","this":{"i":"t"}},"where":' + condition + "}"


@pytest.mark.parametrize(
    "form",
    [
        [],
        "1",  # not a statement
        {"": "Select", "expressions": ["1"]},
        {"": "Delete", "this": {"": "Anonymous", "this": "reflect"}},
        {"": "Delete", "this": {"": "Table", "this": {"i": "t"}}, "secret": True},
        {"": "Delete", "this": {"": "Table", "this": {"i": 5}}},
        {"": "Delete", "this": {"": "Table", "this": {"x": "t"}}},
        {"": "Delete", "this": {"": "DataType", "this": {"d": "NOT_A_TYPE"}}},
        {"": "Delete", "this": {"": "Table", "this": [1.5]}},
        {"": "Update", "expressions": ["1"] * (MAX_NODES + 1)},
        {"": "Update", "expressions": ["x" * (3 * MAX_NODES)]},
    ],
)
def test_a_damaged_stored_form_is_not_used(form: object) -> None:
    assert decode_tree(json.dumps(form)) is None
    assert decode_tree(form) is None  # not JSON text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[" * 100_000,
        _nested(210),  # deeper than any statement
        _nested(100_000),
        '{"": "Delete"' + ', "x": 1' * 10 + "}",
        "1" * (MAX_FORM_CHARS + 1),
    ],
)
def test_damaged_stored_text_is_not_used(text: str) -> None:
    assert decode_tree(text) is None


def test_a_form_as_deep_as_a_statement_may_be_is_used() -> None:
    assert decode_tree(_nested(150)) is not None


@pytest.fixture
def table(tmp_path: Path) -> TableStore:
    """A table with two installed statements (no Spark: nothing is read)."""
    warehouse = tmp_path / "wh"
    assert main(["--warehouse", str(warehouse), "create", "t", "--schema", "id int, s string"]) == 0
    updates = tmp_path / "u.sql"
    updates.write_text(
        "UPDATE t SET s = 'x' WHERE id IN (1, 2, 3);\nDELETE FROM t WHERE id = 7 OR s IS NULL;\n"
    )
    assert main(["--warehouse", str(warehouse), "apply-updates", "t", str(updates)]) == 0
    storage, path = storage_for(str(warehouse / "t"))
    return TableStore(storage, path, "t")


def _record(store: TableStore) -> Path:
    return max((Path(store.root) / "_lakectl" / "log").glob("*.json"))


def test_reads_rebuild_installed_statements_without_parsing(table, monkeypatch) -> None:
    assert all("tree" in s for s in json.loads(_record(table).read_text())["info"]["statements"])
    validate.clear_statement_caches()

    def no_parse(*args: object) -> None:
        raise AssertionError("a read parsed a stored statement")

    monkeypatch.setattr(validate, "parse_statement_sql", no_parse)
    entries = installed_statements(table.read_state())
    assert [e.problem for e in entries] == [None, None]
    checked = check_stored_statement(entries[1].statement, table.read_state().metadata.schema)
    assert render_sql(checked.where) == "id = 7 OR s IS NULL"


@pytest.mark.parametrize("damage", ["lie", "garbage", "missing"])
def test_a_lying_or_damaged_stored_form_falls_back_to_the_text(table, damage) -> None:
    record_path = _record(table)
    record = json.loads(record_path.read_text())
    _, second = record["info"]["statements"]
    if damage == "lie":  # the form of another statement under this text
        second["tree"] = encode_tree(parsed_statement("DELETE FROM t"))
    elif damage == "garbage":
        second["tree"] = json.dumps({"": "Delete", "this": [[[[]]]]})
    else:
        del second["tree"]
    record_path.write_text(json.dumps(record))
    validate.clear_statement_caches()
    entries = installed_statements(table.read_state())
    assert [e.problem for e in entries] == [None, None]
    checked = check_stored_statement(entries[1].statement, table.read_state().metadata.schema)
    assert checked.where is not None
    assert render_sql(checked.where) == "id = 7 OR s IS NULL"


def _delete_where(condition: object) -> dict:
    return {
        "": "Delete",
        "this": {"": "Table", "this": {"i": "t"}},
        "where": {"": "Where", "this": condition},
    }


def _column(name: str, quoted: bool = False) -> dict:
    return {"": "Column", "this": {"q" if quoted else "i": name}}


@pytest.mark.parametrize(
    ("condition", "renders"),
    [  # each renders like a statement that means something else: the text is parsed instead
        (
            {
                "": "EQ",
                "this": {
                    "": "Sub",
                    "this": _column("id"),
                    "expression": {"": "Sub", "this": _column("id"), "expression": "1"},
                },
                "expression": "0",
            },
            "id - id - 1 = 0",
        ),
        (
            {"": "Not", "this": {"": "And", "this": _column("a"), "expression": _column("b")}},
            "NOT a AND b",
        ),
        ({"": "EQ", "this": _column("id"), "expression": "-1"}, "id = -1"),
        ({"": "EQ", "this": _column("id = 1 OR id"), "expression": "2"}, "id = 1 OR id = 2"),
        ({"": "EQ", "this": _column("and"), "expression": "2"}, "and = 2"),
    ],
)
def test_a_stored_form_the_parser_would_not_build_is_not_used(condition, renders) -> None:
    form = _delete_where(condition)
    assert decode_tree(json.dumps(form)) is None
    from sqlglot import exp

    from lakectl.updates import stored_form

    decoder = stored_form._Decoder(shaped=False)
    tree = decoder.node(form, 0)  # the same form, without the shape check
    assert isinstance(tree, exp.Delete)
    assert render_sql(tree) == f"DELETE FROM t WHERE {renders}"
