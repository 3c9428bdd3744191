"""Inputs that are not what a command expects are refused up front, before Spark starts and
before anything changes: special files (devices, FIFOs, folders) as input files, odd table names
and locations. A UTF-8 byte order mark at the start of a statement file is accepted."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCHEMA = "id bigint, name string"


def _tree_hash(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lakectl_cli) -> Path:
    """A folder with a warehouse holding table ``t`` (created without Spark), a FIFO, a folder
    and a source folder with a FIFO among its files."""
    for name in list(os.environ):
        if name.startswith("LAKECTL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    done = lakectl_cli("create", "t", "--schema", SCHEMA, "--primary-key", "id", "--json")
    assert done.code == 0, done.err
    os.mkfifo(tmp_path / "pipe.sql")
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "folder").mkdir()
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "part-1.csv").write_text("id,name\n1,a\n")
    os.mkfifo(landing / "part-2.csv")
    return tmp_path


# (arguments, exit code, message fragment); run from the project folder, warehouse ./warehouse.
REFUSED = [
    (("apply-updates", "t", "/dev/zero"), 65, "updates file /dev/zero is a character device"),
    (("apply-updates", "t", "pipe.sql"), 65, "updates file pipe.sql is a FIFO (named pipe)"),
    (("apply-updates", "t", "folder"), 65, "updates file folder is a folder"),
    (("load", "t", "/dev/zero", "--format", "csv"), 65, "source /dev/zero is a character device"),
    (("load", "t", "pipe.csv"), 65, "source pipe.csv is a FIFO (named pipe)"),
    (("load", "t", "landing", "--format", "csv"), 65, "its entry part-2.csv is a FIFO"),
    (("show", "--", "-rf"), 2, "invalid table name '-rf'"),
    (("show", "..."), 2, "invalid table name '...'"),
    (("create", "...", "--schema", SCHEMA), 2, "invalid table name '...'"),
    (("create", "memory://x", "--schema", SCHEMA), 2, "a memory:// table lives in this process"),
    (("create", "warehouse/-rf", "--schema", SCHEMA), 2, "its last part '-rf' starts with '-'"),
]


def _json_args(args: tuple[str, ...]) -> list[str]:
    """``args`` with ``--json`` among the options (before a ``--``)."""
    cut = args.index("--") if "--" in args else len(args)
    return [*args[:cut], "--json", *args[cut:]]


# Reading a FIFO would block: those cases run only in the subprocess below, under a timeout.
IN_PROCESS = [r for r in REFUSED if not {"pipe.sql", "pipe.csv", "landing"} & set(r[0])]


@pytest.mark.parametrize(
    ("args", "code", "says"), IN_PROCESS, ids=[" ".join(a) for a, _, _ in IN_PROCESS]
)
def test_refused_with_one_json_error_and_nothing_changed(project, lakectl_cli, args, code, says):
    before = _tree_hash(project / "warehouse")
    done = lakectl_cli(*_json_args(args))
    assert done.code == code, done.out + done.err
    (line,) = done.out.splitlines()
    error = json.loads(line)["error"]
    assert says in error["message"] and error.get("hint")
    assert _tree_hash(project / "warehouse") == before
    assert not (project / "warehouse" / "-rf").exists()


# Runs every refused command in one fresh process: none hangs (FIFOs), none starts a JVM.
_ALL_REFUSED = """
import contextlib, io, json, sys
from lakectl.cli.main import main
results = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    results.append([code, json.loads(out.getvalue())["error"]["message"]])
pyspark = sys.modules.get("pyspark")
launched = pyspark is not None and pyspark.SparkContext._gateway is not None
print(json.dumps({"results": results, "jvm": launched}))
"""


def test_no_refusal_hangs_or_starts_spark(project):
    before = _tree_hash(project / "warehouse")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    done = subprocess.run(
        [sys.executable, "-c", _ALL_REFUSED, json.dumps([_json_args(a) for a, _, _ in REFUSED])],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for (code, message), (args, want_code, says) in zip(report["results"], REFUSED, strict=True):
        assert (code, says in message) == (want_code, True), (args, message)
    assert report["jvm"] is False
    assert _tree_hash(project / "warehouse") == before


def test_a_byte_order_mark_before_the_statements_is_accepted(project, lakectl_cli):
    updates = project / "windows.sql"
    updates.write_bytes(
        "\ufeff-- time=2014-01-01\r\nDELETE FROM t WHERE id = 1;\r\n".encode("utf-8")
    )
    done = lakectl_cli("apply-updates", "t", str(updates), "--json")
    assert done.code == 0, done.out + done.err
    assert done.json["installed"] == 1
    listed = lakectl_cli("updates", "t", "--json").json["statements"]
    assert [(e["sql"], e["line"]) for e in listed] == [("DELETE FROM t WHERE id = 1", 2)]


def test_a_byte_order_mark_in_a_csv_source_is_not_part_of_the_first_column(
    project, lakectl_cli, spark
):
    source = project / "excel.csv"
    source.write_bytes("\ufeffid,name\r\n1,a\r\n2,b\r\n".encode("utf-8"))
    done = lakectl_cli("load", "fresh", str(source), "--create", "--primary-key", "id", "--json")
    assert done.code == 0, done.out + done.err
    shown = lakectl_cli("show", "fresh", "--json").json
    assert [c["name"] for c in shown["schema"]] == ["id", "name"]
    rows = lakectl_cli("snapshot", "fresh", "--order-by", "id", "--format", "csv").out
    assert rows.splitlines() == ["id,name", "1,a", "2,b"]
