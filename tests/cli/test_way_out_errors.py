"""Errors that name the way out: a mistyped table name suggests the table meant, a file is not
a table, `create` refuses a file in the way, and an unknown column is exit 65 wherever it is
named. All found before any JVM starts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliRun


@pytest.fixture
def warehouse(tmp_path: Path, lakectl_cli: Callable[..., CliRun]) -> Path:
    """A warehouse with tables ``sales`` and ``sales_emea``, a plain folder ``sales_raw`` and a
    file ``notes.txt``."""
    for name in ("sales", "sales_emea"):
        made = lakectl_cli(
            "--warehouse", tmp_path, "create", name, "--schema", "id bigint, s string"
        )
        assert made.code == 0, made.err
    (tmp_path / "sales_raw").mkdir()
    (tmp_path / "notes.txt").write_text("not a table\n")
    return tmp_path


def _error(run: CliRun, code: int) -> dict[str, str]:
    assert run.code == code, (run.out, run.err)
    error = run.json["error"]
    assert "Traceback" not in run.err
    return error


@pytest.mark.parametrize("command", ["history", "show", "compactions", "updates", "snapshot"])
def test_a_mistyped_table_name_suggests_the_tables_next_to_it(
    warehouse: Path, lakectl_cli: Callable[..., CliRun], command: str
) -> None:
    run = lakectl_cli("--warehouse", warehouse, command, "slaes", "--json")
    error = _error(run, 66)
    assert error["message"] == (
        f"table slaes does not exist (file://{warehouse}/slaes): did you mean sales?"
    )
    assert "sales_raw" not in error["message"]  # a folder that is not a table is not suggested
    assert error["hint"].startswith("name an existing table, e.g. sales;")


def test_a_suggestion_is_spelled_as_the_table_was_named(
    warehouse: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    by_path = lakectl_cli("history", warehouse / "sales_ema", "--json")
    assert _error(by_path, 66)["message"].endswith(
        f": did you mean file://{warehouse}/sales_emea or file://{warehouse}/sales?"
    )
    unlike = lakectl_cli("--warehouse", warehouse, "history", "orders", "--json")
    assert _error(unlike, 66)["message"] == (
        f"table orders does not exist (file://{warehouse}/orders)"
    )


@pytest.mark.parametrize("command", [["history"], ["show"], ["snapshot", "--engine", "arrow"]])
def test_a_file_is_not_a_table(
    warehouse: Path, lakectl_cli: Callable[..., CliRun], command: list[str]
) -> None:
    run = lakectl_cli("--warehouse", warehouse, command[0], "notes.txt", *command[1:], "--json")
    error = _error(run, 66)
    assert error["message"] == f"notes.txt is a file, not a table (file://{warehouse}/notes.txt)"
    assert "does not exist" not in error["message"] and "directory" in error["hint"]


@pytest.mark.parametrize("below", [False, True], ids=["the file", "a folder below it"])
def test_create_refuses_a_file_in_the_way(
    warehouse: Path, lakectl_cli: Callable[..., CliRun], below: bool
) -> None:
    before = hashlib.sha256((warehouse / "notes.txt").read_bytes()).hexdigest()
    name = str(warehouse / "notes.txt" / "t") if below else "notes.txt"
    run = lakectl_cli("--warehouse", warehouse, "create", name, "--schema", "a int", "--json")
    error = _error(run, 73)
    assert error["type"] == "exists"
    assert (
        f"cannot create table {name}: file://{warehouse}/notes.txt is a file" in (error["message"])
    )
    assert "storage" not in error["message"] and "permission" not in error["hint"]
    assert "another table name" in error["hint"]
    assert hashlib.sha256((warehouse / "notes.txt").read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (("--columns", "id,nope"), "--columns: unknown column(s) nope"),
        (("--where", "nope = 1"), "unknown column 'nope'"),
        (("--order-by", "nope"), "--order-by 'nope': unknown column 'nope'"),
    ],
)
def test_an_unknown_column_is_bad_input_in_every_option(
    warehouse: Path, lakectl_cli: Callable[..., CliRun], option: tuple[str, str], said: str
) -> None:
    run = lakectl_cli(
        "--warehouse", warehouse, "snapshot", "sales", "--engine", "arrow", *option, "--json"
    )
    error = _error(run, 65)
    assert error["type"] == "bad_input" and said in error["message"]
