"""`lakectl --version` (version, data source jar) and `lakectl completion SHELL`, in-process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakectl import __version__, data_source_jar
from lakectl.cli.install_commands import COMPLETE_VAR


def test_version_names_the_version_and_the_jar_it_found(lakectl_cli):
    result = lakectl_cli("--version")
    assert result.code == 0, result.err
    first, jar_line = result.out.splitlines()
    assert first.startswith(f"lakectl {__version__} (pyspark ")
    if data_source_jar.jar_path() is not None:
        assert jar_line == f"Spark data source: found, {data_source_jar.JAR}"
    else:
        assert jar_line.startswith("Spark data source: NOT found")


def test_version_says_what_a_missing_jar_costs(lakectl_cli, tmp_path, monkeypatch):
    missing = tmp_path / "jars" / "lakectl-spark.jar"
    monkeypatch.setattr(data_source_jar, "JAR", str(missing))
    result = lakectl_cli("--version")
    assert result.code == 0
    assert f"NOT found (expected at {missing})" in result.out
    assert "slower path of the kernel in Spark's Python tasks" in result.out


def test_version_starts_no_spark():
    probe = (
        "import sys; from lakectl.cli.main import main; code = main(['--version']); "
        "print(code, [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "0 []", done.stderr


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _lakectl_completion lakectl"),
        ("zsh", "#compdef lakectl"),
        ("fish", "complete --no-files --command lakectl"),
    ],
)
def test_completion_prints_the_shells_script(lakectl_cli, shell, marker):
    result = lakectl_cli("completion", shell)
    assert result.code == 0, result.err
    assert marker in result.out
    assert f"{COMPLETE_VAR}={shell}_complete" in result.out


def test_completion_refuses_an_unknown_shell(lakectl_cli):
    result = lakectl_cli("--json", "completion", "tcsh")
    assert result.code == 2
    assert "tcsh" in result.json["error"]["message"]


def _complete(monkeypatch, capsys, words: str) -> list[str]:
    """What the bash script's call back into lakectl answers for the words typed so far."""
    from lakectl.cli.main import main

    monkeypatch.setenv(COMPLETE_VAR, "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 0
    return [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines()]


def test_the_completion_callback_completes_commands_and_choices(monkeypatch, capsys):
    assert _complete(monkeypatch, capsys, "lakectl snap") == ["snapshot"]
    assert _complete(monkeypatch, capsys, "lakectl completion ") == ["bash", "zsh", "fish"]
    formats = _complete(monkeypatch, capsys, "lakectl snapshot --format ")
    assert formats == ["table", "csv", "tsv", "json", "parquet", "orc"]
