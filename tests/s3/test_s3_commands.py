"""The commands that need no Spark, on an s3:// table against the real server: each gives the same
answer as on a local table (URLs and clock times aside)."""

from __future__ import annotations

from typing import Any

from samples import DOCTORS_SCHEMA as SCHEMA
from samples import UPDATES

from lakectl.storage.fs import storage_for
from lakectl.table.store import META_DIR
from tests.support.seaweed import SECRET_KEY

# Keys whose values are clock readings or durations, different on every run.
_CLOCK_KEYS = ("_at", "seconds", "started", "ended", "committed", "installed", "horizon")


def normalized(value: Any, url: str) -> Any:
    """``value`` with the table URL replaced and clock readings dropped, for comparison."""
    if isinstance(value, dict):
        return {
            k: normalized(v, url)
            for k, v in value.items()
            if not any(k.endswith(c) or k == c for c in _CLOCK_KEYS)
        }
    if isinstance(value, list):
        return [normalized(v, url) for v in value]
    if isinstance(value, str):
        storage, root = storage_for(url)
        for spelling in (storage.url(root), root, url):  # longest first: file:///x before /x
            value = value.replace(spelling, "<table>")
        return value
    return value


def run_metadata_commands(cli: Any, url: str) -> list[Any]:
    """create, apply-updates, updates, set, show, history, compactions, clean: their JSON."""
    steps = [
        ("create", url, "--schema", SCHEMA, "--primary-key", "number"),
        ("apply-updates", url, str(UPDATES)),
        ("updates", url),
        ("set", url, "clean.retain=1h"),
        ("show", url),
        ("history", url),
        ("compactions", url),
        ("clean", url, "--dry-run"),
        ("clean", url, "--retain", "0s", "--force"),
    ]
    answers = []
    for step in steps:
        result = cli(*step, "--json")
        assert result.code == 0, (step, result.err)
        answers.append(normalized(result.json, url))
    return answers


def test_metadata_commands_on_s3_match_local(s3, tmp_path, lakectl_cli):
    on_s3 = run_metadata_commands(lakectl_cli, s3.url("doctors"))
    local = run_metadata_commands(lakectl_cli, str(tmp_path / "doctors"))
    assert on_s3 == local
    assert on_s3[2]["statements"] and on_s3[5]["commits"][-1]["operation"] == "set-properties"


def test_create_on_s3_probes_conditional_put_and_refuses_an_existing_table(s3, lakectl_cli):
    url = s3.url("once")
    assert lakectl_cli("create", url, "--schema", SCHEMA).code == 0
    storage, root = storage_for(url)
    # The probe object is gone; only the log remains under _lakectl.
    assert storage.list_names(storage.join(root, META_DIR)) == ["log"]
    again = lakectl_cli("create", url, "--schema", SCHEMA)
    assert again.code == 73
    assert "already exists" in again.err


def test_failed_s3_call_exits_74_without_showing_the_secret(s3, lakectl_cli, monkeypatch):
    url = s3.url("denied")
    assert lakectl_cli("create", url, "--schema", SCHEMA).code == 0
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-" + SECRET_KEY)
    for args in (("show", url), ("history", url, "--json"), ("updates", url)):
        result = lakectl_cli(*args)
        assert result.code == 74, result.err
        assert SECRET_KEY not in result.out + result.err
        assert "PermissionError" in result.err and url in result.err
