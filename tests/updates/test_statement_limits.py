"""Statements are untrusted input: what they may cost a reader is bounded at install and at read,
the log holds one canonical text per statement, and a damaged record fails only the reads that
need it. No Spark here: installing and listing statements never start one."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from lakectl.expr.check import Constant, cast_problem

SCHEMA = "number int, first_name string, last_name string, born date"
OR_CHAIN = " OR ".join(f"number = {i}" for i in range(150))
OR_CHAIN_495 = " OR ".join(f"number = {i}" for i in range(495))
HUGE_OR_CHAIN = " OR ".join(f"number = {i}" for i in range(50_000))


class Lake:
    """One table ``doctors`` in a warehouse, driven through the in-process CLI."""

    def __init__(self, cli, root: Path) -> None:
        self.cli, self.root = cli, root
        self.table = root / "doctors"

    def __call__(self, *args: object):
        return self.cli("--warehouse", self.root, *args, "--json")

    def install(self, text: str, name: str = "fix.updates"):
        path = self.root / name
        path.write_text(text)
        return self("apply-updates", "doctors", path)

    def log_hash(self) -> str:
        files = sorted((self.table / "_lakectl").rglob("*"))
        return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.is_file())).hexdigest()


@pytest.fixture
def lake(tmp_path, lakectl_cli) -> Lake:
    lake = Lake(lakectl_cli, tmp_path)
    assert lake("create", "doctors", "--schema", SCHEMA).code == 0
    return lake


REFUSED = {
    "backtracking LIKE": (
        "DELETE FROM doctors WHERE last_name LIKE '%a%a%a%a%a%a%a%a%a%a%a%a%b';",
        "updates.max.like.wildcards",
    ),
    "huge rpad": (
        "UPDATE doctors SET first_name = rpad(first_name, 2147483647, 'x');",
        "updates.max.string.length",
    ),
    "lpad over the limit": (
        "UPDATE doctors SET first_name = lpad(first_name, 8193);",
        "updates.max.string.length",
    ),
    "doubling chain": (
        "UPDATE doctors SET first_name = first_name || first_name;\n" * 34,
        "updates.max.string.growth",
    ),
    "long OR chain": (f"DELETE FROM doctors WHERE {OR_CHAIN};", "updates.max.expression.depth"),
    "huge literal": (
        "UPDATE doctors SET last_name = '" + "x" * 9000 + "';",
        "updates.max.string.length",
    ),
}


@pytest.mark.parametrize("name", REFUSED)
def test_costly_statements_are_refused_at_install_and_nothing_changes(lake, name) -> None:
    text, limit = REFUSED[name]
    before = lake.log_hash()
    result = lake.install(text)
    assert result.code == 65, result.out
    error = result.json["error"]
    assert limit in error["message"] and "fix.updates:" in error["message"]
    assert "Traceback" not in result.out + result.err
    assert lake.log_hash() == before


def test_the_growth_limit_names_the_statement_that_crosses_it(lake) -> None:
    result = lake.install("UPDATE doctors SET first_name = first_name || first_name;\n" * 34)
    # 2, 4, 8, 16 times as long: the fifth statement would make it 32 times.
    assert "fix.updates:5:" in result.json["error"]["message"]


@pytest.mark.parametrize(
    "text",
    [
        "UPDATE doctors SET first_name = rpad(first_name, number, 'x');",
        "UPDATE doctors SET first_name = lpad(first_name, 5, last_name);",
        "DELETE FROM doctors WHERE last_name LIKE first_name;",
        "UPDATE doctors SET first_name = replace(first_name, last_name, 'x');",
        f"DELETE FROM doctors WHERE {OR_CHAIN_495};",
        f"DELETE FROM doctors WHERE {HUGE_OR_CHAIN};",
        "UPDATE doctors SET number = " + "abs(" * 150 + "number" + ")" * 150 + ";",
    ],
    ids=[
        "pad-length",
        "pad-fill",
        "like-column",
        "replace-column",
        "495-or",
        "50k-or",
        "deep-functions",
    ],
)
def test_unbounded_forms_are_refused_cleanly(lake, text) -> None:
    started = time.monotonic()
    result = lake.install(text)
    assert result.code == 65 and "Traceback" not in result.out + result.err
    assert time.monotonic() - started < 30  # a 50,000-term chain is refused, not recursed into


def test_limits_are_table_properties(lake) -> None:
    assert lake("set", "doctors", "updates.max.statements=2").code == 0
    assert lake.install("DELETE FROM doctors WHERE number = 1;\n").code == 0
    refused = lake.install("DELETE FROM doctors WHERE number = 2;\n" * 2, "more.updates")
    assert refused.code == 65 and "updates.max.statements" in refused.out
    assert lake("set", "doctors", "updates.max.file.size=20").code == 0
    big = lake.install("DELETE FROM doctors WHERE number = 3;", "big.updates")
    assert big.code == 65 and "updates.max.file.size" in big.out
    bad = lake("set", "doctors", "updates.max.expression.depth=500")
    assert bad.code == 2 and "at most 200" in bad.out
    within = lake("set", "doctors", "updates.max.like.wildcards=13", "updates.max.file.size=1MB")
    assert within.code == 0
    assert lake.install(REFUSED["backtracking LIKE"][0], "like.updates").code == 0


def test_a_long_date_literal_is_checked_in_linear_time() -> None:
    # Two adjacent optional runs of blanks in the timestamp pattern once took 25 s for 40k blanks.
    text = "2024-01-01" + " " * 200_000 + "x"
    started = time.monotonic()
    assert cast_problem(Constant("string", text), "timestamp") is not None
    assert cast_problem(Constant("string", " 2024-01-02 10:11:12.5 Z "), "timestamp") is None
    assert time.monotonic() - started < 2


def _edit_statement(lake: Lake, change) -> None:
    """Rewrite the statements of the newest apply-updates record, as a hostile writer would."""
    log = lake.table / "_lakectl" / "log"
    entry = max(
        (p for p in log.glob("*.json") if '"apply-updates"' in p.read_text()),
        key=lambda p: p.name,
    )
    record = json.loads(entry.read_text())
    change(record["info"]["statements"])
    entry.write_text(json.dumps(record))


def test_a_hand_edited_statement_is_refused_and_named_by_its_log_entry(lake) -> None:
    assert lake.install("DELETE FROM doctors WHERE number = 1;").code == 0

    def hide(statements: list[dict]) -> None:
        statements[0]["sql"] = "DELETE FROM doctors WHERE number = 1 /*[conceal]*/ OR TRUE"
        statements[0]["source"] = "someone-else.updates"

    _edit_statement(lake, hide)
    listed = lake("updates", "doctors")
    assert listed.code == 0
    problem = listed.json["statements"][0]["problem"]
    assert "not in canonical form" in problem
    assert "installed by version 1" in problem and "someone-else.updates" in problem
    text = lake.cli("--warehouse", lake.root, "updates", "doctors")
    assert "REFUSED" in text.out and "[conceal]" in text.out


def test_quotes_mean_what_spark_says(lake) -> None:
    assert (
        lake.install("UPDATE doctors SET last_name = 'O''Brien' WHERE first_name = 'it''s';").code
        == 0
    )
    (entry,) = lake("updates", "doctors").json["statements"]
    assert entry["sql"] == "UPDATE doctors SET last_name = 'O\\'Brien' WHERE first_name = 'it\\'s'"
    assert entry["problem"] is None


def test_a_writer_cannot_set_a_limit_above_its_ceiling(lake) -> None:
    before = lake.log_hash()
    for setting, ceiling in [
        ("updates.max.like.wildcards=1000", "at most 16"),
        ("updates.max.string.length=2000000000", "at most 65536"),
        ("updates.max.statements=1000000", "at most 10000"),
        ("updates.max.file.size=1GB", f"at most {16 * 1024**2}"),
    ]:
        result = lake("set", "doctors", setting)
        assert result.code == 2, result.out
        error = result.json["error"]
        assert setting in error["message"] and ceiling in error["message"]
        assert "LAKECTL_CEILING_UPDATES_MAX_" in error["hint"]
    assert lake.log_hash() == before


LIKE_30 = "DELETE FROM doctors WHERE last_name LIKE '" + "%a" * 30 + "%b';"


def test_a_reader_ignores_a_limit_above_its_own_ceiling(lake, monkeypatch) -> None:
    # A writer with a higher ceiling of its own sets the property and installs a statement.
    monkeypatch.setenv("LAKECTL_CEILING_UPDATES_MAX_LIKE_WILDCARDS", "40")
    assert lake("set", "doctors", "updates.max.like.wildcards=31").code == 0
    assert lake.install(LIKE_30).code == 0
    # A reader with the built-in ceiling uses 16, says so once, and refuses the statement.
    monkeypatch.delenv("LAKECTL_CEILING_UPDATES_MAX_LIKE_WILDCARDS")
    listed = lake("updates", "doctors")
    read = lake("snapshot", "doctors", "--engine", "arrow")
    assert listed.code == 0
    problem = listed.json["statements"][0]["problem"]
    assert "has 31 % wildcards; the limit is 16" in problem
    assert read.code == 65 and "the limit is 16" in read.json["error"]["message"]
    for result in (listed, read):
        warnings = [w for w in result.err.splitlines() if "above this reader's ceiling" in w]
        assert len(warnings) == 1 and "updates.max.like.wildcards=31" in warnings[0]


def test_a_ceiling_set_by_the_reader_must_be_a_number(lake, monkeypatch) -> None:
    monkeypatch.setenv("LAKECTL_CEILING_UPDATES_MAX_STATEMENTS", "lots")
    result = lake.install("DELETE FROM doctors WHERE number = 1;")
    assert result.code == 2
    assert "LAKECTL_CEILING_UPDATES_MAX_STATEMENTS=lots" in result.json["error"]["message"]


def test_a_read_has_a_budget_no_table_can_raise(lake, monkeypatch) -> None:
    statements = "".join(
        f"UPDATE doctors SET last_name = 'n{i}' WHERE number = {i};\n" for i in range(3)
    )
    assert lake.install(statements).code == 0
    size = len("UPDATE doctors SET last_name = 'n0' WHERE number = 0")
    # Room for two statements' text: the third one is named.
    monkeypatch.setenv("LAKECTL_READ_BUDGET_TEXT", str(2 * size + 1))
    result = lake("snapshot", "doctors", "--engine", "arrow")
    assert result.code == 65, result.out
    error = result.json["error"]
    assert "statement 3 installed by version 1" in error["message"]
    assert "characters of statement text" in error["message"]
    assert "LAKECTL_READ_BUDGET_TEXT" in error["hint"] and "--materialize" in error["hint"]
    # Room for the three: a fourth is refused at install, named by its file and line.
    monkeypatch.setenv("LAKECTL_READ_BUDGET_TEXT", str(3 * size + 1))
    assert lake("snapshot", "doctors", "--engine", "arrow").code == 0
    before = lake.log_hash()
    refused = lake.install("DELETE FROM doctors WHERE number = 9;", "more.updates")
    assert refused.code == 65 and "more.updates:1" in refused.json["error"]["message"]
    assert lake.log_hash() == before
    monkeypatch.setenv("LAKECTL_READ_BUDGET_TEXT", "1000000")
    monkeypatch.setenv("LAKECTL_READ_BUDGET_NODES", "12")  # 5 nodes a statement
    result = lake("snapshot", "doctors", "--engine", "arrow")
    assert result.code == 65 and "statement 3 installed" in result.json["error"]["message"]
    monkeypatch.setenv("LAKECTL_READ_BUDGET_NODES", "1000000")
    assert lake("snapshot", "doctors", "--engine", "arrow").code == 0


def test_like_work_counts_against_the_budget(lake, monkeypatch) -> None:
    text = "DELETE FROM doctors WHERE last_name LIKE '%a%b%';\n" * 2
    assert lake.install(text).code == 0
    # A stored value counts as 8192 characters; the pattern has 5: 40960 steps a row each.
    monkeypatch.setenv("LAKECTL_READ_BUDGET_LIKE", str(8192 * 5 * 2 - 1))
    result = lake("updates", "doctors")
    assert result.code == 0
    read = lake("snapshot", "doctors", "--engine", "arrow")
    assert read.code == 65 and "steps of LIKE matching per row" in read.json["error"]["message"]
    assert "statement 2 installed by version 1" in read.json["error"]["message"]


def test_case_branches_count_against_the_budget(lake, monkeypatch) -> None:
    case = " ".join(f"WHEN number = {i} THEN 'v{i}'" for i in range(6))
    text = f"UPDATE doctors SET last_name = CASE {case} ELSE last_name END;\n" * 2
    text += "UPDATE doctors SET first_name = if(number = 1, 'a', 'b');\n"
    assert lake.install(text).code == 0
    monkeypatch.setenv("LAKECTL_READ_BUDGET_BRANCHES", "12")  # 6 + 6 + 1
    read = lake("snapshot", "doctors", "--engine", "arrow")
    assert read.code == 65
    message = read.json["error"]["message"]
    assert "statement 3 installed by version 1" in message and "13 CASE and IF branches" in message


def test_a_read_checks_each_statement_once(lake, monkeypatch) -> None:
    from lakectl.updates import limits

    text = "".join(
        f"UPDATE doctors SET first_name = 'n{i}' WHERE number = {i};\n" for i in range(30)
    )
    assert lake.install(text).code == 0
    checked: list[str] = []
    add = limits.CostCheck.add

    def counted(self: limits.CostCheck, stmt) -> None:
        checked.append(stmt.location.at())
        add(self, stmt)

    monkeypatch.setattr(limits.CostCheck, "add", counted)
    assert lake("snapshot", "doctors", "--engine", "arrow").code == 0
    assert len(checked) == len(set(checked)) == 30
