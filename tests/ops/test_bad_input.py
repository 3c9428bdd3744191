"""Bad input: a clear error naming the problem, the documented exit code, the table unchanged.

Exit codes (lakectl/errors.py): 65 bad input, 66 not found, 2 usage.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCHEMA = "id bigint, change_ts timestamp, amount decimal(10,2), note string, qty int, region string"
HEADER = "op_code,id,change_ts,amount,note,qty,region"
BASE_ROWS = [
    "I,1,2024-01-01 10:00:00,1.50,first,1,east",
    "I,2,2024-01-01 10:00:00,2.50,second,2,west",
    "I,3,2024-01-01 10:00:00,,third,,east",
]
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")


def _files(root: Path) -> set[str]:
    """Data files and committed log entries (write-id reservations may legitimately remain)."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and (("_lakectl" not in p.parts) or "log" in p.parts)
    }


@pytest.fixture(scope="module")
def table(tmp_path_factory, lakectl_cli, spark):
    """A table with one committed load, and what it looked like then."""
    root = tmp_path_factory.mktemp("bad_input")
    path = root / "orders"
    created = lakectl_cli(
        "create", path, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "region"
    )  # fmt: skip
    assert created.code == 0, created.err
    base = root / "base.csv"
    base.write_text("\n".join([HEADER, *BASE_ROWS]) + "\n")
    loaded = lakectl_cli("load", path, base, *CDC, "--json")
    assert loaded.code == 0, loaded.err
    snapshot = lakectl_cli("snapshot", path, "--json").json["rows"]
    assert len(snapshot) == 3
    return {
        "path": path,
        "root": root,
        "rows": sorted(snapshot, key=lambda r: r["id"]),
        "history": lakectl_cli("history", path, "--json").json,
        "files": _files(path),
    }


@pytest.fixture
def unchanged(table, lakectl_cli):
    """Check after the test that the table reads and lists exactly as before."""
    yield
    path = table["path"]
    after = lakectl_cli("snapshot", path, "--json")
    assert after.code == 0, after.err
    assert sorted(after.json["rows"], key=lambda r: r["id"]) == table["rows"]
    assert lakectl_cli("history", path, "--json").json == table["history"]
    assert _files(path) == table["files"]
    assert not list((path / "_lakectl").glob("staging/*"))


def _load(lakectl_cli, table, tmp_path, body: str, *extra: str, name: str = "batch.csv"):
    source = tmp_path / name
    source.write_text(body)
    result = lakectl_cli("load", table["path"], source, *CDC, *extra, "--json")
    return result, source


def _error(result, code: int, kind: str) -> str:
    assert result.code == code, (result.out, result.err)
    error = result.json["error"]
    assert error["type"] == kind
    assert error["message"] in result.err  # also shown to a person on stderr
    return error["message"]


def test_malformed_csv_row(table, tmp_path, lakectl_cli, unchanged):
    body = f"{HEADER}\nU,1,2024-01-02 10:00:00,1.00,ok,1,east\nU,2,2024-01-02 10:00:00,2.00,too,many,fields,here,west\n"
    result, source = _load(lakectl_cli, table, tmp_path, body)
    message = _error(result, 65, "bad_input")
    assert message == (
        f"malformed CSV: {source}, line 3: 9 field(s) where the header has 7; nothing was loaded"
    )
    assert "double quotes" in result.json["error"]["hint"]


def test_missing_key_column(table, tmp_path, lakectl_cli, unchanged):
    body = "op_code,change_ts,amount,note,qty,region\nU,2024-01-02 10:00:00,1.00,x,1,east\n"
    result, source = _load(lakectl_cli, table, tmp_path, body)
    message = _error(result, 65, "bad_input")
    assert str(source) in message
    assert "missing column(s) id" in message


def test_missing_partition_column(table, tmp_path, lakectl_cli, unchanged):
    """A nullable column may be absent (its rows get NULL: tests/ops/test_load_cron.py); a
    partition column may not."""
    body = "op_code,id,change_ts,amount,note,qty\nU,1,2024-01-02 10:00:00,1.00,x,1\n"
    result = _load(lakectl_cli, table, tmp_path, body)[0]
    message = _error(result, 65, "bad_input")
    assert "missing column(s) region" in message
    assert "the table has id, change_ts, amount, note, qty, region" in message
    assert "partition" in result.json["error"]["hint"]


def test_extra_column(table, tmp_path, lakectl_cli, unchanged):
    body = f"{HEADER},coupon\nU,1,2024-01-02 10:00:00,1.00,x,1,east,SAVE10\n"
    result = _load(lakectl_cli, table, tmp_path, body)[0]
    message = _error(result, 65, "bad_input")
    assert "unknown column(s) coupon" in message
    hint = result.json["error"]["hint"]
    assert "--evolve" in hint and '`lakectl alter TABLE --add-column "coupon TYPE"`' in hint


def test_null_key(table, tmp_path, lakectl_cli, unchanged):
    body = (
        f"{HEADER}\nU,1,2024-01-02 10:00:00,1.00,x,1,east\nI,,2024-01-02 10:00:00,1.00,y,1,east\n"
    )
    message = _error(_load(lakectl_cli, table, tmp_path, body)[0], 65, "bad_input")
    assert "key column 'id' is null in 1 row(s)" in message


@pytest.mark.parametrize(("code", "shown"), [("X", "'X'"), ("", "'NULL'")])
def test_unknown_op_code(table, tmp_path, lakectl_cli, unchanged, code, shown):
    body = f"{HEADER}\nU,1,2024-01-02 10:00:00,1.00,x,1,east\n{code},2,2024-01-02 10:00:00,1.00,y,1,west\n"
    result, _ = _load(lakectl_cli, table, tmp_path, body)
    message = _error(result, 65, "bad_input")
    assert "column 'op_code': 1 row(s) have an unknown op code" in message
    assert f"e.g. {shown}" in message
    assert "known: D, I, U" in message
    assert "--op-values" in result.json["error"]["hint"]


@pytest.mark.parametrize(
    ("column", "value", "type_"),
    [
        ("qty", "abc", "int"),
        ("qty", "99999999999", "int"),
        ("id", "1.5x", "bigint"),
        ("change_ts", "yesterday", "timestamp"),
        ("amount", "123456789012.50", "decimal(10,2)"),
    ],
)
def test_value_that_does_not_fit_the_type(
    table, tmp_path, lakectl_cli, unchanged, column, value, type_
):
    row = {
        "op_code": "U",
        "id": "1",
        "change_ts": "2024-01-02 10:00:00",
        "amount": "1.00",
        "note": "x",
        "qty": "1",
        "region": "east",
    }
    row[column] = value
    body = f"{HEADER}\n{','.join(row[c] for c in HEADER.split(','))}\n"
    message = _error(_load(lakectl_cli, table, tmp_path, body)[0], 65, "bad_input")
    assert f"column {column!r}: 1 value(s) do not fit type {type_}, e.g. {value!r}" in message


@pytest.mark.parametrize("body", [HEADER + "\n", "", HEADER + "\n\n  \n"])
def test_an_empty_batch_loads_nothing(table, tmp_path, lakectl_cli, unchanged, body):
    result, source = _load(lakectl_cli, table, tmp_path, body)
    assert (result.code, result.json["status"]) == (0, "empty"), result.err
    text = lakectl_cli("load", table["path"], source, *CDC)
    assert text.out.strip() == f"nothing to load: {source} has no rows; nothing was committed"


def test_first_load_of_an_empty_file_creates_no_table(tmp_path, lakectl_cli, spark):
    source = tmp_path / "empty.csv"
    source.write_text("")
    table = tmp_path / "new_table"
    result = lakectl_cli("load", table, source, "--create", "--primary-key", "id", "--json")
    assert (result.code, result.json["status"]) == (0, "empty"), result.err
    assert not table.exists()


def test_source_that_does_not_exist(table, tmp_path, lakectl_cli, unchanged):
    missing = tmp_path / "nope.csv"
    result = lakectl_cli("load", table["path"], missing, *CDC, "--json")
    message = _error(result, 66, "not_found")
    assert message == f"source {missing} does not exist"


def test_bad_json_lines_source(table, tmp_path, lakectl_cli, unchanged):
    body = '{"op_code": "U", "id": 1, "change_ts": "2024-01-02 10:00:00", "amount": 1, "note": "x", "qty": 1, "region": "east"}\n{"op_code": "U", "id": 2,\n'
    result, source = _load(lakectl_cli, table, tmp_path, body, name="batch.json")
    message = _error(result, 65, "bad_input")
    assert str(source) in message


def test_order_column_that_is_not_in_the_table(table, tmp_path, lakectl_cli, unchanged):
    source = tmp_path / "b.csv"
    source.write_text(f"{HEADER}\n{BASE_ROWS[0]}\n")
    result = lakectl_cli(
        "load", table["path"], source, "--op-column", "op_code", "--order-by", "seq", "--json"
    )
    message = _error(result, 65, "bad_input")
    assert "--order-by 'seq' is not a column of the table" in message


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--mode", "upsert", "--op-column", "op_code"), "--op-column applies to --mode cdc"),
        (
            ("--mode", "append", "--op-values", "I=insert,U=update,X=delete"),
            "--op-values applies to --mode cdc",
        ),
        (("--mode", "append", "--order-by", "change_ts"), "--mode append applies rows as"),
    ],
)
def test_options_the_mode_would_ignore_are_refused(
    table, tmp_path, lakectl_cli, unchanged, args, said
):
    source = tmp_path / "b.csv"
    source.write_text(f"{HEADER}\n{BASE_ROWS[0]}\n")
    result = lakectl_cli("load", table["path"], source, *args, "--json")
    assert said in _error(result, 2, "usage")


@pytest.mark.parametrize("command", ["snapshot", "show", "history"])
def test_table_that_does_not_exist(tmp_path, lakectl_cli, command):
    result = lakectl_cli(command, "ghost", "--warehouse", tmp_path / "wh", "--json")
    message = _error(result, 66, "not_found")
    assert "table ghost does not exist" in message
    assert str(tmp_path / "wh" / "ghost") in message
    assert not (tmp_path / "wh").exists()  # reading creates nothing


def test_partition_value_cannot_escape_the_table(tmp_path, lakectl_cli, spark):
    root = tmp_path / "sandbox"
    table = root / "wh" / "t"
    created = lakectl_cli(
        "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "region"
    )  # fmt: skip
    assert created.code == 0
    source = tmp_path / "evil.csv"
    source.write_text(
        f"{HEADER}\nI,7,2024-01-02 10:00:00,7.00,evil,7,../../x\nI,8,2024-01-02 10:00:00,8.00,fine,8,/abs\n"
    )
    outside_before = {p for p in tmp_path.rglob("*") if table not in p.parents and p != table}
    result = lakectl_cli("load", table, source, *CDC, "--json")
    assert result.code == 0, result.err
    assert result.json["counts"]["inserted"] == 2
    outside_after = {p for p in tmp_path.rglob("*") if table not in p.parents and p != table}
    assert outside_after == outside_before, "files were created outside the table directory"
    partitions = sorted(p.name for p in table.iterdir() if p.name != "_lakectl")
    assert partitions == ["region=%2Fabs", "region=..%2F..%2Fx"]
    for d in table.iterdir():
        assert d.resolve().parent == table.resolve()
    rows = lakectl_cli("snapshot", table, "--json").json["rows"]
    assert sorted((r["id"], r["region"]) for r in rows) == [(7, "../../x"), (8, "/abs")]
    only = lakectl_cli("snapshot", table, "--where", "region = '../../x'", "--json").json["rows"]
    assert [r["note"] for r in only] == ["evil"]
    show = lakectl_cli("show", table, "--json").json
    assert sorted(p["partition"] for p in show["partitions"]) == partitions


def test_first_load_of_a_malformed_file_creates_no_table(tmp_path, lakectl_cli, spark):
    source = tmp_path / "batch.json"
    source.write_text('{"id": 1, "name": "a"}\n{"id": 2,\n')
    table = tmp_path / "wh" / "new_table"
    result = lakectl_cli("load", table, source, "--create", "--primary-key", "id", "--json")
    message = _error(result, 65, "bad_input")
    assert f"{source}: cannot be parsed" in message
    assert not table.exists()


def test_load_into_a_hive_table_directory_is_refused(tmp_path, interop, lakectl_cli, spark):
    """A first load must not create a lakectl table over a Hive table: every read would then
    see only lakectl's commits, and the Hive rows would vanish."""
    import shutil

    hive = tmp_path / "nation_acid"
    shutil.copytree(interop / "tables" / "nation_acid", hive)
    before = lakectl_cli("show", hive, "--json").json
    source = tmp_path / "b.csv"
    source.write_text("n_nationkey,n_name,n_regionkey,n_comment\n99,NOWHERE,1,x\n")
    creating = ("load", hive, source, "--create"), ("create", hive, "--schema", "n_nationkey int")
    for args in creating:
        result = lakectl_cli(*args, "--json")
        message = _error(result, 73, "exists")
        assert f"{hive} exists and is not empty" in message
        assert not (hive / "_lakectl").exists()
    message = _error(lakectl_cli("load", hive, source, "--json"), 66, "not_found")
    assert message == f"file://{hive} has no lakectl log: it is not a lakectl table"
    assert lakectl_cli("show", hive, "--json").json == before
    assert before["kind"] == "hive" and before["totals"]["rows"] == 23_000
