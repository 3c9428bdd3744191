"""``clean`` refuses a retention below the table's ``clean.retain.minimum`` unless forced."""

from __future__ import annotations


def _log(path) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(p.name for p in (path / "_lakectl" / "log").iterdir())


def test_a_retention_below_the_floor_needs_force(tmp_path, lakectl_cli) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "t"
    assert lakectl_cli("create", table, "--schema", "a int").code == 0
    before = _log(table)
    refused = lakectl_cli("clean", table, "--retain", "0s", "--json")
    assert refused.code == 2
    message = refused.json["error"]["message"]
    assert "retention 0s is below the table's minimum of 1h" in message
    assert "nothing was deleted" in message and "--force" in refused.json["error"]["hint"]
    assert _log(table) == before
    dry = lakectl_cli("clean", table, "--retain", "10m", "--dry-run", "--json")
    assert dry.code == 0 and dry.json["dry_run"] is True
    assert lakectl_cli("clean", table, "--retain", "2h", "--json").code == 0
    forced = lakectl_cli("clean", table, "--retain", "0s", "--force", "--json")
    assert forced.code == 0, forced.err


def test_the_floor_is_a_table_property(tmp_path, lakectl_cli) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "t"
    assert lakectl_cli("create", table, "--schema", "a int").code == 0
    assert lakectl_cli("set", table, "clean.retain=5m").code == 0
    refused = lakectl_cli("clean", table, "--json")  # the table's own retention is too short
    assert refused.code == 2 and "retention 5m" in refused.json["error"]["message"]
    assert lakectl_cli("set", table, "clean.retain.minimum=1m").code == 0
    assert lakectl_cli("clean", table, "--json").code == 0
    bad = lakectl_cli("set", table, "clean.retain.minimum=soon", "--json")
    assert bad.code == 2 and "clean.retain.minimum" in bad.json["error"]["message"]
    shown = lakectl_cli("show", table, "--json").json
    assert shown["properties"]["clean.retain.minimum"] == "1m"
