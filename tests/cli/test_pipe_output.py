"""Output that pipes: with stdout not a terminal, tables are plain rows, one line per row; csv,
tsv and json (``--format``) parse back to the rows ``--json`` returns; ``snapshot --order-by``."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from lakectl.cli import output
from tests.support.cli import run_lakectl

SCHEMA = "id bigint, name string, amount double, day string"
# Values a naive renderer splits: a comma, a quote, a tab-free long text, a NULL.
ROWS = [
    (1, "plain", 1.5, "2024-01-01"),
    (2, 'with, comma and "quote"', -2.25, "2024-01-02"),
    (3, "long " * 40, 1e-7, "2024-01-01"),
    (4, None, None, "2024-01-03"),
]


def _render(*args: object, **kwargs: object) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        output.table(*args, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


def test_plain_rows_are_one_line_each_even_with_line_breaks() -> None:
    text = _render("title", ["a", "b"], [["x\ny", "tab\there"], [None, "z" * 300]])
    lines = text.splitlines()
    assert lines == [
        "a     b",
        "x\\ny  tab\\there",
        "NULL  " + "z" * 300,
    ]
    assert "title" not in text  # the title goes to stderr


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_csv_and_tsv_round_trip_awkward_values(fmt: str) -> None:
    rows = [["a,b", 'q"uote', "x\ny"], [None, 1.5, "\t"]]
    text = _render(None, ["c1", "c2", "c3"], rows, fmt)
    parsed = list(csv.reader(io.StringIO(text), delimiter="," if fmt == "csv" else "\t"))
    assert parsed == [["c1", "c2", "c3"], ["a,b", 'q"uote', "x\ny"], ["", "1.5", "\t"]]


@pytest.fixture(scope="module")
def table(spark: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small table written by the CLI: create, load, a second load (two history rows)."""
    root = tmp_path_factory.mktemp("pipes")
    source = root / "rows.csv"
    with source.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "amount", "day"])
        writer.writerows([["" if v is None else v for v in row] for row in ROWS])
    path = root / "t"
    assert run_lakectl("create", path, "--schema", SCHEMA, "--primary-key", "id").code == 0
    for again in ((), ("--force",)):  # the same file twice: a replay is loaded when forced
        loaded = run_lakectl("load", path, source, "--mode", "upsert", *again)
        assert loaded.code == 0, loaded.err
    return path


def _json_rows(table: Path, *args: str) -> list[dict[str, object]]:
    run = run_lakectl("snapshot", table, "--json", *args)
    assert run.code == 0, run.err
    return run.json["rows"]


def test_history_piped_is_one_line_per_commit(table: Path) -> None:
    run = run_lakectl("history", table)
    assert run.code == 0, run.err
    commits = run_lakectl("history", table, "--json").json["commits"]
    lines = run.out.splitlines()
    assert len(lines) == 1 + len(commits) == 4  # header, create, two loads
    assert lines[0].split()[:2] == ["version", "committed"]
    assert not any(ch in run.out for ch in "│┃━─")


def test_snapshot_piped_is_one_line_per_row_in_order(table: Path) -> None:
    run = run_lakectl("snapshot", table, "--order-by", "id desc")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert len(lines) == 1 + len(ROWS)
    assert lines[0].split() == ["id", "name", "amount", "day"]
    assert [int(line.split()[0]) for line in lines[1:]] == [4, 3, 2, 1]
    assert "NULL" in lines[1]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json"])
def test_snapshot_formats_parse_back_to_the_json_rows(table: Path, fmt: str) -> None:
    expected = _json_rows(table, "--order-by", "day,id")
    assert [r["id"] for r in expected] == [1, 3, 2, 4]
    run = run_lakectl("snapshot", table, "--order-by", "day,id", "--format", fmt)
    assert run.code == 0, run.err
    if fmt == "json":
        assert json.loads(run.out) == expected
        return
    header, *rows = list(csv.reader(io.StringIO(run.out), delimiter="," if fmt == "csv" else "\t"))
    assert header == ["id", "name", "amount", "day"]
    as_text = [["" if v is None else str(v) for v in r.values()] for r in expected]
    assert rows == as_text


def test_listing_commands_take_format(table: Path) -> None:
    history = run_lakectl("history", table, "--format", "json")
    assert [row["operation"] for row in history.json] == ["create", "upsert", "upsert"]
    show = run_lakectl("show", table, "--format", "csv")
    header, *rows = list(csv.reader(io.StringIO(show.out)))
    assert header[0] == "partition" and len(rows) == 1
    assert int(rows[0][header.index("rows")]) == sum(
        p["rows"] for p in run_lakectl("show", table, "--json").json["partitions"]
    )
    for command in ("updates", "compactions"):
        run = run_lakectl(command, table, "--format", "tsv")
        assert run.code == 0 and len(run.out.splitlines()) == 1  # the header: nothing listed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "parquet"], "--format parquet is a file format: give --out PATH"),
        (["--format", "tsv", "--out", "x"], "--format tsv prints rows"),
        (["--order-by", "id sideways"], "expected COLUMN, COLUMN asc or COLUMN desc"),
    ],
)
def test_bad_format_and_order_by_are_usage_errors(
    table: Path, args: list[str], message: str
) -> None:
    run = run_lakectl("snapshot", table, "--json", *args)
    assert run.code == 2
    assert message in run.json["error"]["message"]


def test_an_unknown_order_by_column_is_bad_input_as_in_where(table: Path) -> None:
    run = run_lakectl("snapshot", table, "--json", "--order-by", "nope")
    assert run.code == 65 and run.json["error"]["type"] == "bad_input"
    assert "--order-by: unknown column(s) nope" in run.json["error"]["message"]
