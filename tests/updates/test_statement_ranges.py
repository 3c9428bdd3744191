"""Statements that pass every check can be applied by every later read: arguments out of the
range an engine takes are refused at install (constants folded first), and values that only the
data can take out of range (``date_add(dt, n)`` near year 9999) read as NULL, never as a crash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

SCHEMA = "id int, d decimal(10,2), x double, dt date, ts timestamp, s string, b bigint"
ROWS = (
    "id,d,x,dt,ts,s,b\n"
    "1,1.25,1.5,2024-01-01,2024-01-01 10:00:00,abc,1\n"
    "2,2.50,2.5,9999-12-30,2024-01-01 10:00:00,x,2\n"
)


class Table:
    def __init__(self, cli, root: Path) -> None:
        self.cli, self.root = cli, root

    def __call__(self, *args: object):
        return self.cli("--warehouse", self.root, *args, "--json")

    def install(self, text: str):
        path = self.root / "fix.updates"
        path.write_text(text)
        return self("apply-updates", "t", path)

    def log_hash(self) -> str:
        files = sorted((self.root / "t" / "_lakectl").rglob("*"))
        return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.is_file())).hexdigest()


@pytest.fixture
def table(tmp_path, lakectl_cli) -> Table:
    table = Table(lakectl_cli, tmp_path)
    assert table("create", "t", "--schema", SCHEMA).code == 0
    return table


OUT_OF_RANGE = {
    "round scale": ("UPDATE t SET x = round(x, 2147483647);", "scale of round is 2147483647"),
    "negative round scale": (
        "UPDATE t SET d = round(d, -2147483648);",
        "scale of round is -2147483648",
    ),
    "timestamp at year 1": (
        "UPDATE t SET ts = '0001-01-01 00:00:00';",
        "out of range for a timestamp",
    ),
    "timestamp at year 1 by its offset": (
        "UPDATE t SET ts = '0001-01-03 00:00:00+01:00';",
        "out of range for a timestamp",
    ),
    "timestamp cast": (
        "UPDATE t SET s = 'x' WHERE ts = CAST('9999-12-31 12:00:00' AS timestamp);",
        "out of range for a timestamp",
    ),
    "date_add max int": (
        "UPDATE t SET dt = date_add(dt, 2147483647);",
        "days of date_add/date_sub is 2147483647",
    ),
    "date_add min int": (
        "UPDATE t SET dt = date_add(dt, -2147483648);",
        "days of date_add/date_sub is -2147483648",
    ),
    "date_sub": ("UPDATE t SET dt = date_sub(dt, 3652059);", "is -3652059"),
    "folded days": (
        "UPDATE t SET dt = date_add(dt, 1000 * (3000 + 1000));",
        "days of date_add/date_sub is 4000000",
    ),
    "date plus days": ("UPDATE t SET dt = dt + 4000000;", "days added to or taken from dt"),
    "days from a bigint": (
        "UPDATE t SET dt = date_add(dt, b);",
        "must be an int, tinyint or smallint, not bigint",
    ),
    "substring position": ("UPDATE t SET s = substr(s, 3000000000);", "position of substring"),
    "substring length": ("UPDATE t SET s = substr(s, 1, -(2 * 1500000000));", "length of"),
    "locate position": (
        "UPDATE t SET id = locate('a', s, 2147483648);",
        "start position of locate",
    ),
    "lpad length": ("UPDATE t SET s = lpad(s, -1, 'a');", "non-negative integer literal"),
    "LIKE escape at the end": (
        "DELETE FROM t WHERE s LIKE 'a\\\\';",
        "may not end with the escape character",
    ),
}


@pytest.mark.parametrize("name", OUT_OF_RANGE)
def test_arguments_no_read_could_apply_are_refused_at_install(table, name) -> None:
    text, fragment = OUT_OF_RANGE[name]
    before = table.log_hash()
    result = table.install(text)
    assert result.code == 65, result.out
    message = result.json["error"]["message"]
    assert fragment in message and "fix.updates:1:" in message
    assert table.log_hash() == before


@pytest.mark.parametrize(
    "text",
    [
        "UPDATE t SET d = round(d, 38), x = round(x, -38);",
        "UPDATE t SET ts = '0001-01-03 00:00:00', dt = '0001-01-01';",
        "UPDATE t SET ts = '9999-12-31', dt = '9999-12-31';",
        "UPDATE t SET dt = date_sub(dt, 3652058);",
        "UPDATE t SET dt = date_add(dt, id * 2000000);",
        "UPDATE t SET s = substr(s, -2147483647, 2147483647);",
        "DELETE FROM t WHERE s LIKE 'a\\\\%%\\\\_';",
    ],
)
def test_arguments_at_the_edges_install(table, text) -> None:
    assert table.install(text).code == 0


@pytest.fixture
def loaded(table) -> Table:
    (table.root / "rows.csv").write_text(ROWS)
    assert table("load", "t", table.root / "rows.csv", "--mode", "append").code == 0
    return table


def test_dates_the_data_takes_out_of_range_read_as_null(loaded, spark) -> None:
    text = (
        "UPDATE t SET dt = date_add(dt, 5);\n"
        "UPDATE t SET ts = CAST(CAST(date_add(CAST(ts AS date), id * 3000000) AS string) "
        "AS timestamp);\n"
    )
    assert loaded.install(text).code == 0
    result = loaded("snapshot", "t")
    assert result.code == 0, result.out
    rows = {r["id"]: (r["dt"], r["ts"]) for r in result.json["rows"]}
    assert rows == {1: ("2024-01-06", None), 2: (None, None)}
    # The Arrow engine sets the same NULLs: the same rule, not a crash on years past 9999.
    arrow = loaded("snapshot", "t", "--engine", "arrow")
    assert arrow.code == 0, arrow.out
    assert {r["id"]: (r["dt"], r["ts"]) for r in arrow.json["rows"]} == rows


def test_a_timestamp_at_the_edge_reads_in_both_engines(loaded, spark) -> None:
    assert loaded.install("UPDATE t SET ts = '0001-01-03 00:00:00' WHERE id = 1;").code == 0
    for engine in ("spark", "arrow"):
        result = loaded("snapshot", "t", "--engine", engine)
        assert result.code == 0, result.out
        assert json.dumps(result.json["rows"]).count("0001-01-03") == 1


def test_like_statements_read_the_same_in_both_engines(loaded, spark) -> None:
    text = (
        "UPDATE t SET s = 'A%b_c' WHERE id = 2;\n"
        "UPDATE t SET d = 0 WHERE s ILIKE 'a\\\\%%B%';\n"
        "DELETE FROM t WHERE s LIKE '%b%c' AND s NOT LIKE '%\\\\_%';\n"
    )
    assert loaded.install(text).code == 0
    rows = {}
    for engine in ("spark", "arrow"):
        result = loaded("snapshot", "t", "--engine", engine)
        assert result.code == 0, result.out
        rows[engine] = sorted((r["id"], r["d"], r["s"]) for r in result.json["rows"])
    assert rows["spark"] == rows["arrow"] == [(2, "0.00", "A%b_c")]


def _edge_statements() -> list[str]:
    """Arguments at, just inside and just outside every range, for every checked function."""
    ints = [2147483647, 2147483648, -2147483647, -2147483648]
    days = [3652058, 3652059, -3652058, -3652059, 2147483647, -2147483648]
    out = [f"SET x = round(x, {k}), d = round(d, {k})" for k in (-39, -38, 38, 39, *ints)]
    out += [f"SET dt = date_add(dt, {k})" for k in days] + ["SET dt = date_add(dt, id)"]
    out += [f"SET dt = date_sub(dt, {k})" for k in days]
    out += [f"SET dt = dt + {k}" for k in days] + ["SET dt = dt - 1000 * (3000 + 1000)"]
    out += [f"SET s = substr(s, {k}), id = locate('a', s, {k})" for k in ints]
    out += [f"SET s = substr(s, 1, {k})" for k in ints]
    out += [f"SET s = lpad(s, {k}, 'ab')" for k in (0, 8192, 8193)]
    out += [
        f"SET ts = '{t}'"
        for t in (
            "0001-01-02 23:59:59",
            "0001-01-03 00:00:00",
            "0001-01-03 10:00:00+10:00",
            "0001-01-03 10:00:00+10:01",
            "9999-12-31 00:00:00",
            "9999-12-31 00:00:01",
            "9999-12-30 12:00:00-12:00",
            "9999-12-30 12:00:00-12:01",
        )
    ]
    out += ["SET dt = '0001-01-01'", "SET dt = '9999-12-31'", "SET ts = CAST(dt AS timestamp)"]
    return [f"UPDATE t {text};" for text in out]


def test_what_installs_at_the_edges_reads(spark) -> None:
    """Every statement either is refused at install, naming the argument, or reads: the rows
    become Python values without an error (dates at years 1 and 9999 stored)."""
    from datetime import date, datetime
    from decimal import Decimal

    from lakectl.errors import BadInputError
    from lakectl.spark.statement_compile import apply_statements
    from lakectl.table.schema import parse_schema
    from lakectl.updates.statements import parse_updates_text

    schema = parse_schema(SCHEMA)
    rows = [
        (1, Decimal("1.25"), 1.5, date(1, 1, 1), datetime(2024, 1, 1), "abc", 1),
        (2, Decimal("2.50"), 2.5, date(9999, 12, 31), datetime(2024, 1, 1), "x", 2),
    ]
    df = spark.createDataFrame(rows, schema.to_ddl())
    refused, read = 0, 0
    for text in _edge_statements():
        try:
            statements = parse_updates_text(text, "edge.updates", None, schema).statements
        except BadInputError as exc:
            assert "edge.updates:1:" in exc.message, text
            refused += 1
            continue
        assert len(apply_statements(df, statements, schema).collect()) == 2, text
        read += 1
    assert (refused, read) == (27, 23)
