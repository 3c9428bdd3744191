"""Wrong options that need no Spark to be found wrong are answered before Spark starts: from
the table's log (schema, partitions, versions), the option text and the file system alone.

``--where`` is one condition over the table's columns, held to the whitelist of ``.updates``
statements (vetted pure functions only), and checked without Spark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakectl.errors import BadInputError, LakectlError, UsageError
from lakectl.expr.check import check_where
from lakectl.table.schema import Column, Schema

SCHEMA = Schema(
    (
        Column("sell_id", "bigint"),
        Column("store_id", "string"),
        Column("paid", "boolean"),
        Column("create_date", "string"),
    )
)


@pytest.mark.parametrize(
    ("where", "error", "says"),
    [
        ("store_id = 'S01' whatever", UsageError, "'whatever' after the condition"),
        ("store_id = 'S01' AS x", UsageError, "'x' after the condition"),
        ("store_id = 'S01' AND", BadInputError, "incomplete AND expression"),
        ("store_id =", BadInputError, "syntax error"),
        ("", UsageError, "--where is empty"),
        ("   ", UsageError, "--where is empty"),
        ("sell_id = 1;", UsageError, "without ';'"),
        ("sell_id = 1; sell_id = 2", BadInputError, "exactly one statement"),
        ("SELECT 1", UsageError, "not a SELECT statement"),
        ("sell_id", UsageError, "is not a condition"),
        ("sell_id + 1", UsageError, "is not a condition"),
        ("'S01'", UsageError, "is not a condition"),
        ("nope = 1", BadInputError, "unknown column 'nope'"),
        ("other.sell_id = 1", BadInputError, "refers to another table"),
        ("sell_id IN (SELECT 1)", BadInputError, "subqueries are not allowed"),
        ("reflect('java.lang.System', 'exit', 1) IS NULL", BadInputError, "'reflect'"),
        ("sell_id < rand()", BadInputError, "not deterministic"),
        ("sell_id = 1 LIMIT 3", BadInputError, "syntax error near 'LIMIT'"),
        ("store_id = 'S01", BadInputError, "unterminated string"),
    ],
)
def test_a_broken_where_is_refused_naming_the_problem(where, error, says):
    with pytest.raises(error) as raised:
        check_where(where, SCHEMA)
    assert says in str(raised.value)


@pytest.mark.parametrize(
    "where",
    [
        "store_id = 'S01'",
        "sell_id <= 5 or sell_id >= 229",
        "(store_id = 'S01' AND NOT paid) OR create_date BETWEEN '2024-01-01' AND '2024-01-02'",
        "paid",
        "upper(store_id) LIKE 's%' AND sell_id IN (1, 2, 3)",
        "store_id = 'a;b' AND store_id IS NOT NULL",
        "coalesce(paid, false)",
    ],
)
def test_a_condition_over_the_tables_columns_is_accepted(where):
    check_where(where, SCHEMA)


# --- whole commands, in fresh processes ------------------------------------------------------

TABLE_SCHEMA = "sell_id bigint, store_id string, change_ts string, create_date string"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse with a created (empty) partitioned table ``sales``, an existing output
    path and a bad updates file."""
    root = tmp_path_factory.mktemp("before_spark")
    done = _lakectl(
        root, "create", "sales", "--schema", TABLE_SCHEMA, "--primary-key", "sell_id",
        "--partition-by", "create_date",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (root / "taken.csv").write_text("x\n")
    (root / "bad.sql").write_text("UPDATE sales SET nope = 1 WHERE sell_id = 1;\n")
    (root / "batch.csv").write_text("sell_id,store_id,change_ts,create_date\n1,S01,t,d\n")
    (root / "empty.csv").write_text("sell_id,store_id,change_ts,create_date,op_code\n")
    return root


def _lakectl(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lakectl", *args, "--warehouse", str(root / "wh"), "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


# (arguments, exit code, part of the message); paths are relative to the warehouse fixture.
WRONG_COMMANDS = [
    (("snapshot", "sales", "--columns", "sell_id,nope"), 65, "unknown column(s) nope"),
    (("snapshot", "sales", "--where", "store_id = 'S01' whatever"), 2, "'whatever'"),
    (("snapshot", "sales", "--where", "store_id = 'S01' AND"), 65, "incomplete AND"),
    (("snapshot", "sales", "--where", "nope = 1"), 65, "unknown column 'nope'"),
    (("snapshot", "sales", "--where", ""), 2, "--where is empty"),
    (("snapshot", "sales", "--out", "taken.csv", "--format", "csv"), 65, "already exists"),
    (("snapshot", "sales", "--out", "new", "--format", "xls"), 2, "'xls' is not one of"),
    (("snapshot", "sales", "--as-of", "yesterday-ish"), 2, "malformed time"),
    (("snapshot", "sales", "--version", "99"), 67, "version 99 does not exist"),
    (("load", "sales", "missing.csv"), 66, "source missing.csv does not exist"),
    (("load", "sals", "batch.csv", "--mode", "cdc"), 66, "did you mean sales?"),
    (("load", "sales", "empty.csv", "--mode", "cdc"), 0, None),
    (("load", "sales", "batch.csv", "--order-by", "nope"), 65, "--order-by 'nope'"),
    (("load", "sales", "batch.csv", "--primary-key", "store_id"), 2, "--primary-key"),
    (("load", "sales", "batch.csv", "--format", "xls"), 2, "'xls' is not one of"),
    (("load", "sales", "batch.csv", "--mode", "cdc", "--op-values", "I"), 2, "--op-values"),
    (("compact", "sales", "--major", "--partition", "nope=1"), 2, "not a partition column"),
    (("list-bucket", "sales", "--column", "nope", "--keys", "1"), 65, "--column 'nope'"),
    (("skew", "sales", "--column", "nope"), 65, "--column 'nope'"),
    (("apply-updates", "sales", "bad.sql"), 65, "unknown column 'nope'"),
]


@pytest.mark.parametrize(
    ("args", "code", "says"), WRONG_COMMANDS, ids=[" ".join(c[0]) for c in WRONG_COMMANDS]
)
def test_a_wrong_command_is_refused_with_its_message(warehouse, args, code, says):
    # That none of these starts a JVM is asserted below, in one process for all of them.
    done = _lakectl(warehouse, *args)
    assert done.returncode == code, done.stdout + done.stderr[-2000:]
    if says is None:  # not an error: nothing to do, said before Spark starts
        return
    error = json.loads(done.stdout)["error"]
    assert says in error["message"]
    assert "Traceback" not in done.stderr


# Runs every wrong command in one process, then reports whether a JVM was ever launched.
_NO_JVM = """
import contextlib, io, json, sys
from lakectl.cli.main import main
codes = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main(argv + ["--json"]))
pyspark = sys.modules.get("pyspark")
launched = pyspark is not None and pyspark.SparkContext._gateway is not None
print(json.dumps({"codes": codes, "jvm": launched}))
"""


def test_no_wrong_command_starts_spark(warehouse):
    argvs = [[*args, "--warehouse", str(warehouse / "wh")] for args, _, _ in WRONG_COMMANDS]
    done = subprocess.run(
        [sys.executable, "-c", _NO_JVM, json.dumps(argvs)],
        cwd=warehouse,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [code for _, code, _ in WRONG_COMMANDS]
    assert report["jvm"] is False


@pytest.mark.parametrize(
    "junk", ["(", ")", "'", "`", "--", "/*", "= =", "AND OR", "1 2 3", "\\", "é = 1", "a b c"]
)
def test_junk_where_is_a_lakectl_error(junk):
    with pytest.raises(LakectlError):
        check_where(junk, SCHEMA)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_source_is_refused_at_once(warehouse, tmp_path):
    source = tmp_path / "locked.csv"
    source.write_text("sell_id,store_id,change_ts,create_date\n")
    source.chmod(0)
    done = _lakectl(warehouse, "load", "sales", str(source))
    assert done.returncode == 74, done.stdout
    assert "permission denied" in json.loads(done.stdout)["error"]["message"]
