"""A table's own files cannot make lakectl read or delete outside the table (no Spark).

Compaction status files whose id walks out of the table, names a folder or another table's log
entry; log records and checkpoints naming paths lakectl never writes: ``clean`` refuses with
exit 76 naming the file, ``compactions`` lists the status file as damaged, and every file
outside the table (and inside it) is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lakectl.table.compaction_runs import new_run
from tests.support.cli import run_lakectl as lakectl

DAMAGED_TABLE = 76
LOG = "_lakectl/log"


def _hashes(*roots: Path) -> dict[str, str]:
    """Every file and folder under ``roots``, with a hash of each file's bytes."""
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            key = str(path)
            out[key] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """``lake/t`` and ``lake/other`` (two tables) beside ``victim/`` (a file and a folder)."""
    victim = tmp_path / "victim"
    (victim / "folder.json").mkdir(parents=True)
    (victim / "folder.json" / "inside").write_text("inside")
    (victim / "important.json").write_text("precious")
    for name in ("t", "other"):
        made = lakectl("create", tmp_path / "lake" / name, "--schema", "id bigint, v string")
        assert made.code == 0, made.err
    return tmp_path


def _status(table: Path, file_name: str, run_id: object, state: str = "committed") -> Path:
    path = table / "_lakectl" / "compactions" / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"id": run_id, "state": state, "started_at": 0, "heartbeat_at": 0}
    path.write_text(json.dumps(body))
    return path


@pytest.mark.parametrize(
    "run_id",
    [
        "../../../victim/important",  # a file beside the lake
        "../../../victim/folder",  # a folder: clean deletes recursively
        "../../other/_lakectl/log/00000000000000000000",  # another table's log entry
    ],
)
def test_clean_refuses_a_status_file_whose_id_leads_out_of_the_table(lake, run_id):
    table = lake / "lake" / "t"
    status = _status(table, "x.json", run_id)
    before = _hashes(lake)
    done = lakectl("clean", table, "--retain", "0s", "--force")
    assert done.code == DAMAGED_TABLE, done.err
    assert f"compaction status file file://{status} is damaged" in done.err
    assert f"its id {run_id!r} is not a compaction id lakectl writes" in done.err
    assert "nothing was deleted" in done.err
    assert _hashes(lake) == before
    assert lakectl("history", lake / "lake" / "other").code == 0


def test_clean_json_error_is_one_object(lake):
    table = lake / "lake" / "t"
    status = _status(table, "x.json", "../../../victim/important")
    done = lakectl("clean", table, "--retain", "0s", "--force", "--json")
    assert done.code == DAMAGED_TABLE
    [line] = done.out.splitlines()
    error = json.loads(line)["error"]
    assert error["type"] == "format"
    assert str(status) in error["message"]
    assert (lake / "victim" / "important.json").read_text() == "precious"


@pytest.mark.parametrize(
    ("file_name", "run_id", "why", "clean_code"),
    [
        # Names a path: clean stops before deleting anything.
        ("x.json", "../../../victim/important", "is not a compaction id lakectl writes", 76),
        ("x.json", "1700000000000-abcdef", "is not its file name", 76),  # another run's file
        # Merely unreadable (an id of the wrong type): ignored with a warning, like a
        # half-written file; it names nothing clean could delete.
        (
            "1700000000000-abcdef.json",
            ["1700000000000-abcdef"],
            "must be a string, not an array",
            0,
        ),
    ],
)
def test_compactions_lists_such_a_status_file_as_damaged(lake, file_name, run_id, why, clean_code):
    table = lake / "lake" / "t"
    _status(table, file_name, run_id, state="working")
    listed = lakectl("compactions", table, "--json")
    assert listed.code == 0, listed.err
    [entry] = listed.json["compactions"]
    assert entry["state"] == "damaged" and entry["partition"] is None
    assert why in entry["error"] and file_name in entry["error"]
    only = lakectl("compactions", table, "--state", "damaged", "--json")
    assert [e["state"] for e in only.json["compactions"]] == ["damaged"]
    assert lakectl("compactions", table, "--state", "failed", "--json").json["compactions"] == []
    shown = lakectl("compactions", table)
    assert "damaged:" in shown.out and file_name in shown.out
    assert DAMAGED_TABLE == 76
    assert lakectl("clean", table, "--retain", "0s", "--force").code == clean_code
    assert (table / "_lakectl" / "compactions" / file_name).exists()


def test_a_sound_status_file_is_still_cleaned(lake):
    table = lake / "lake" / "t"
    run = new_run("major", [])
    status = _status(table, f"{run.id}.json", run.id)
    half_written = table / "_lakectl" / "compactions" / "1700000000000-aaaaaa.json"
    half_written.write_text('{"id": "17000')
    done = lakectl("clean", table, "--retain", "0s", "--force", "--json")
    assert done.code == 0, done.err
    assert done.json["deleted"] == [f"_lakectl/compactions/{run.id}.json"]
    assert not status.exists()
    assert half_written.exists()  # unreadable: names nothing, so clean leaves it and goes on
    [entry] = lakectl("compactions", table, "--json").json["compactions"]
    assert (entry["state"], "unreadable" in entry["error"]) == ("damaged", True)


def _record(seq: int, **fields: object) -> dict:
    base = {"seq": seq, "operation": "append", "committed_at": 1, "write_id": seq}
    return {**base, "read_seq": seq - 1, **fields}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("added", "../victim/base_0000001"),
        ("obsolete", "../../victim/folder.json/../base_0000001"),
        ("obsolete", "/etc/base_0000001"),
        ("partitions", "s3://bucket/t"),
        ("added", "p=1/base_0000001/../../../x"),
    ],
)
def test_a_log_record_naming_such_a_path_is_a_damaged_table_error(lake, field, value):
    table = lake / "lake" / "t"
    entry = table / LOG / "00000000000000000001.json"
    entry.write_text(json.dumps(_record(1, **{field: [value]})))
    before = _hashes(lake)
    for command in (["history"], ["clean", "--retain", "0s", "--force"], ["snapshot"]):
        extra = ["--engine", "arrow"] if command == ["snapshot"] else []
        done = lakectl(command[0], table, *command[1:], *extra)
        assert done.code == DAMAGED_TABLE, (command, done.err)
        assert f"file://{entry} ({field} of log record 1)" in done.err
        assert f"{value!r} is not a" in done.err
    assert _hashes(lake) == before


def test_a_checkpoint_naming_such_a_path_is_skipped_for_the_log(lake):
    table = lake / "lake" / "t"
    (table / LOG / "00000000000000000001.json").write_text(
        json.dumps(_record(1, added=["delta_0000001_0000001_0000"]))
    )
    made = lakectl("checkpoint", table, "--json")
    assert made.code == 0, made.err
    checkpoint = Path(made.json["url"].removeprefix("file://"))
    text = checkpoint.read_text()
    assert "delta_0000001_0000001_0000" in text
    checkpoint.write_text(text.replace("delta_0000001_0000001_0000", "../../victim/base_0000001"))
    history = lakectl("history", table, "--json")
    assert history.code == 0, history.err
    assert lakectl("checkpoint", table, "--json").json["usable"] is False


def test_a_linked_log_record_is_not_read(lake):
    """Listed, a linked log entry is left out like any link; probed for (after a checkpoint),
    it is refused with exit 76 before it is read."""
    table = lake / "lake" / "t"
    (table / LOG / "00000000000000000001.json").symlink_to(lake / "victim" / "important.json")
    history = lakectl("history", table, "--json")
    assert history.code == 0, history.err
    assert [v["operation"] for v in history.json["commits"]] == ["create"]
    assert lakectl("checkpoint", table, "--json").json["seq"] == 0
    for command in (["history"], ["snapshot", "--engine", "arrow"]):
        done = lakectl(command[0], table, *command[1:])
        assert done.code == DAMAGED_TABLE, done.err
        assert "00000000000000000001.json is a symbolic link" in done.err
