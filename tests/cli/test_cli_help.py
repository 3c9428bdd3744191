"""The CLI's skin: help with examples, exit codes, JSON errors, and the fast commands staying
free of Spark (no JVM, no pyspark import, well under a second)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from lakectl.cli.main import cli

COMMANDS = sorted(cli.commands)


def test_top_level_help(lakectl_cli):
    for flag in ("--help", "-h"):
        result = lakectl_cli(flag)
        assert result.code == 0
        assert "Example" in result.out
        for name in ("create", "load", "snapshot", "show", "history"):
            assert name in result.out


def test_core_commands_exist():
    assert {"create", "load", "snapshot", "show", "history"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(lakectl_cli, command):
    result = lakectl_cli(command, "--help")
    assert result.code == 0, result.err
    assert f"Usage: lakectl {command}" in result.out
    assert "Example" in result.out
    assert "lakectl " + command in result.out.split("Example", 1)[1]
    assert lakectl_cli(command, "-h").out == result.out


def test_snapshot_at_is_snapshot(lakectl_cli):
    result = lakectl_cli("snapshot-at", "--help")
    assert result.code == 0, result.err
    assert "Example" in result.out
    assert "--as-of" in result.out and "--version" in result.out
    assert result.out == lakectl_cli("snapshot", "--help").out


def test_version(lakectl_cli):
    from lakectl import __version__

    result = lakectl_cli("--version")
    assert result.code == 0
    assert __version__ in result.out


def test_history_of_a_missing_table(tmp_path, lakectl_cli):
    result = lakectl_cli("history", "ghost", "--warehouse", tmp_path)
    assert result.code == 66
    assert result.out == ""
    assert "error:" in result.err and "table ghost does not exist" in result.err

    as_json = lakectl_cli("history", "ghost", "--warehouse", tmp_path, "--json")
    assert as_json.code == 66
    body = json.loads(as_json.out)
    assert set(body) == {"error"}
    assert body["error"]["type"] == "not_found"
    assert body["error"]["message"] == f"table ghost does not exist (file://{tmp_path}/ghost)"
    assert "lakectl create" in body["error"]["hint"]


def test_json_flag_before_the_command(tmp_path, lakectl_cli):
    result = lakectl_cli("--json", "--warehouse", tmp_path, "history", "ghost")
    assert result.code == 66
    assert json.loads(result.out)["error"]["type"] == "not_found"


@pytest.mark.parametrize(
    "args",
    [
        ("no-such-command",),
        ("create", "t"),  # --schema is required
        ("snapshot", "t", "--limit", "many"),
        ("load",),
    ],
)
def test_usage_errors_exit_2(tmp_path, lakectl_cli, args):
    result = lakectl_cli(*args, "--warehouse", tmp_path, "--json")
    assert result.code == 2, (result.out, result.err)
    assert json.loads(result.out)["error"]["type"] == "usage"


def test_create_twice_and_bad_schema(tmp_path, lakectl_cli):
    args = (
        "create",
        tmp_path / "t",
        "--schema",
        "id bigint, name string",
        "--primary-key",
        "id",
        "--json",
    )
    assert lakectl_cli(*args).code == 0
    again = lakectl_cli(*args)
    assert again.code == 73
    assert json.loads(again.out)["error"]["type"] == "exists"
    bad = lakectl_cli("create", tmp_path / "u", "--schema", "id bigint, x blob", "--json")
    assert bad.code == 2
    assert "unsupported column type 'blob'" in json.loads(bad.out)["error"]["message"]
    wrong_key = lakectl_cli(
        "create", tmp_path / "v", "--schema", "id bigint", "--primary-key", "nope", "--json"
    )
    assert wrong_key.code == 2
    assert "nope" in json.loads(wrong_key.out)["error"]["message"]
    assert not (tmp_path / "u").exists() and not (tmp_path / "v").exists()


PROBE = textwrap.dedent(
    """
    import json, sys
    from lakectl.cli.main import main
    code = main(sys.argv[1:])
    spark = sorted(m for m in sys.modules if m == "pyspark" or m.startswith(("pyspark.", "py4j")))
    sys.stderr.write("PROBE " + json.dumps({"code": code, "spark": spark}) + "\\n")
    """
)


def _probe(*args: object) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE ") :]), done.stdout


@pytest.fixture(scope="module")
def lakectl_table(tmp_path_factory, lakectl_cli):
    path = tmp_path_factory.mktemp("fast") / "sales"
    result = lakectl_cli(
        "create",
        path,
        "--schema",
        "id bigint, d string",
        "--primary-key",
        "id",
        "--partition-by",
        "d",
    )
    assert result.code == 0, result.err
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("history", "{lakectl}", "--json"),
        ("history", "{lakectl}"),
        ("show", "{lakectl}", "--json"),
        ("show", "{hive}", "--json"),
        ("show", "{hive}"),
        ("clean", "{lakectl}", "--dry-run", "--json"),
        ("compactions", "{lakectl}", "--json"),
        ("--help",),
    ],
)
def test_fast_commands_do_not_start_spark(lakectl_table, interop, args):
    paths = {"lakectl": lakectl_table, "hive": interop / "tables" / "nation_acid"}
    argv = [a.format(**paths) for a in args]
    probe, out = _probe(*argv)
    assert probe["code"] == 0
    assert probe["spark"] == [], "imported " + ", ".join(probe["spark"][:5])
    if "--json" in argv:
        json.loads(out)


@pytest.mark.parametrize("command", ["load", "stream"])
def test_op_values_default_is_the_one_load_treats_as_unset(command):
    # The CLI spells the default out (importing lakectl.ops.load would slow every command);
    # load refuses --op-values outside cdc by comparing with this constant.
    from lakectl.ops.load import DEFAULT_OP_VALUES

    [option] = [p for p in cli.commands[command].params if p.name == "op_values"]
    assert option.default == DEFAULT_OP_VALUES
