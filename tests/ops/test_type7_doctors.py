"""Seed 000's doctors example end to end: create, load the Avro file, install the statements,
and read the three listings the seed shows (now, --as-of 2014-01-01, --as-of -1), in file order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.doctors_seed import SCHEMA, doctors_rows
from tests.support.doctors_seed import seed_listings as _seed_listings

REPO = Path(__file__).resolve().parents[2]


def _rows(result) -> list[tuple[int, str, str, str]]:
    return doctors_rows(result.json)


@pytest.mark.parametrize("origin", ["sample_data", "interop"])
def test_doctors_reproduce_the_seed_listings(tmp_path, lakectl_cli, spark, interop, origin):
    raw, now, early = None, None, None
    listings = _seed_listings()
    assert len(listings) == 4  # raw table, with updates, scd.time=2014-01-01, scd.time=-1
    raw, now, early, minus_one = listings
    if origin == "sample_data":
        avro, updates = (
            REPO / "sample_data/doctors/doctors.avro",
            REPO / "sample_data/doctors/updates.sql",
        )
    else:
        avro, updates = interop / "hive-scd/doctors.avro", interop / "hive-scd/updates"
    wh = str(tmp_path)
    assert lakectl_cli("--warehouse", wh, "create", "doctors", "--schema", SCHEMA).code == 0
    loaded = lakectl_cli(
        "--warehouse",
        wh,
        "load",
        "doctors",
        avro,
        "--mode",
        "append",
        "--json",
    )  # no valid time: the data counts at every time, as in the original project
    assert loaded.code == 0, loaded.err
    assert _rows(lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--json")) == raw
    installed = lakectl_cli("--warehouse", wh, "apply-updates", "doctors", updates, "--json")
    assert installed.code == 0, installed.err
    assert installed.json["installed"] == 2
    assert _rows(lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--json")) == now
    assert (
        _rows(
            lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--as-of", "2014-01-01", "--json")
        )
        == early
    )
    assert (
        _rows(lakectl_cli("--warehouse", wh, "snapshot-at", "doctors", "--as-of", "-1", "--json"))
        == minus_one
    )

    # --where on a column a statement sets filters after the statements (doctor 2 is now 12);
    # on other columns it may filter first, and Colin, deleted by a statement, stays deleted
    def where(predicate: str) -> list[tuple[int, str, str, str]]:
        found = lakectl_cli(
            "--warehouse", wh, "snapshot", "doctors", "--where", predicate, "--json"
        )
        assert found.code == 0, found.err
        return sorted(_rows(found))

    assert where("number = 12") == sorted(r for r in now if r[0] == 12) != []
    assert where("first_name = 'Colin' OR number < 5") == sorted(r for r in now if r[0] < 5)
    # the statements are listed with their effective times, and the .updates file sits beside the data
    listed = lakectl_cli("--warehouse", wh, "updates", "doctors", "--json").json["statements"]
    assert [e["effective"] for e in listed] == ["1970-01-01T00:00:00Z", "2014-09-01T00:00:00Z"]
    assert "-- time=1409529600000" in (tmp_path / "doctors" / ".updates").read_text()


def test_forbidden_statement_installs_nothing(tmp_path, lakectl_cli, spark):
    wh = str(tmp_path)
    assert lakectl_cli("--warehouse", wh, "create", "doctors", "--schema", SCHEMA).code == 0
    bad = tmp_path / "bad.sql"
    bad.write_text(
        "UPDATE doctors SET first_name = 'x';\n-- time=2014-09-01\nUPDATE doctors SET last_name = reflect('java.lang.System', 'exit', 1);\n"
    )
    result = lakectl_cli("--warehouse", wh, "apply-updates", "doctors", bad, "--json")
    assert result.code == 65
    message = result.json["error"]["message"]
    assert "bad.sql" in message and "reflect" in message.lower() and ":3" in message
    assert lakectl_cli("--warehouse", wh, "updates", "doctors", "--json").json["statements"] == []
    history = lakectl_cli("--warehouse", wh, "history", "doctors", "--json").json["commits"]
    assert len(history) == 1


def test_an_as_of_read_before_the_loads_valid_time_says_why_it_is_empty(
    tmp_path, lakectl_cli, spark
):
    wh = str(tmp_path)
    assert lakectl_cli("--warehouse", wh, "create", "doctors", "--schema", SCHEMA).code == 0
    avro = REPO / "sample_data/doctors/doctors.avro"
    loaded = lakectl_cli(
        "--warehouse", wh, "load", "doctors", avro, "--mode", "append",
        "--effective-from", "2015-01-01", "--json",
    )  # fmt: skip
    assert loaded.code == 0, loaded.err
    early = lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--as-of", "2014-01-01", "--json")
    assert early.code == 0 and early.json["rows"] == []
    assert early.json["note"].startswith("no rows as of 2014-01-01")
    assert "2015-01-01" in early.json["note"]
    text = lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--as-of", "2014-01-01")
    assert "take effect later" in text.err
    later = lakectl_cli("--warehouse", wh, "snapshot", "doctors", "--as-of", "2015-06-01", "--json")
    assert len(later.json["rows"]) == 11 and "note" not in later.json
