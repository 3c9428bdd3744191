"""``lakectl maintain`` over a warehouse of tables in different states, on real Spark (in-process):
each table gets what it needs (minor or major compaction, clean of replaced directories and of a
dead writer's leftovers, a checkpoint, nothing), a damaged table is reported while the others
still run, a second run skips a locked table, and the rows read the same before and after."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from pathlib import Path

from lakectl.storage.fs import storage_for
from lakectl.table.maintenance_lock import MaintenanceLock
from lakectl.table.store import TableStore, now_millis

SCHEMA = "id bigint, v string"


def _ok(run) -> dict:
    assert run.code == 0, run.err
    return run.json


def _dirs(table: Path) -> set[str]:
    return {p.name for p in table.iterdir() if not p.name.startswith("_")}


def _rows(cli, wh: Path, name: str) -> list[tuple]:
    result = _ok(cli("snapshot", name, "--warehouse", wh, "--json"))
    return sorted((r["id"], r["v"]) for r in result["rows"])


def _leftover_of_a_dead_writer(table: Path) -> None:
    """What a load killed before its commit leaves: its write id allocation (its process is
    gone), its delta directory and its staging entry."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    body = {"operation": "load", "started_at": now_millis(), "host": socket.gethostname()}
    txn = table / "_lakectl" / "txns" / f"{1:020d}.json"
    txn.parent.mkdir(parents=True, exist_ok=True)
    txn.write_text(json.dumps({**body, "pid": proc.pid}))
    delta = table / "delta_0000001_0000001_0000"
    delta.mkdir()
    (delta / "bucket_00000").write_bytes(b"partial")
    staging = table / "_lakectl" / "staging" / f"w0000001-{proc.pid}-{now_millis()}"
    staging.mkdir(parents=True)
    (staging / "part-0.orc").write_bytes(b"partial")


def test_maintain_gives_each_table_what_it_needs(tmp_path, lakectl_cli, spark) -> None:
    cli = lakectl_cli
    wh = tmp_path / "wh"
    src = tmp_path / "src"
    src.mkdir()

    def load(name: str, rows: str) -> None:
        path = src / f"{name}_{len(list(src.iterdir()))}.csv"
        path.write_text("id,v\n" + rows)
        _ok(
            cli(
                "load",
                name,
                path,
                "--warehouse",
                wh,
                "--mode",
                "append",
                "--engine",
                "arrow",
                "--json",
            )
        )

    def create(name: str, *props: str) -> None:
        _ok(cli("create", name, "--warehouse", wh, "--schema", SCHEMA, "--json"))
        if props:
            _ok(cli("set", name, *props, "--warehouse", wh, "--json"))

    # Two deltas and no base: major. Copied before its own compaction to become `major`.
    create(
        "minor",
        "compactor.delta.num.threshold=1",
        "compactor.delta.pct.threshold=1000",
    )
    load("minor", "1,a\n2,b\n")
    load("minor", "3,c\n")
    shutil.copytree(wh / "minor", wh / "major")
    _ok(
        cli(
            "set",
            "major",
            "clean.retain=0s",
            "clean.retain.minimum=0s",
            "--warehouse",
            wh,
            "--json",
        )
    )
    # A base and two deltas above it: minor.
    _ok(cli("compact", "minor", "--major", "--warehouse", wh, "--engine", "arrow", "--json"))
    load("minor", "4,d\n")
    load("minor", "5,e\n")
    create("leftover")
    _leftover_of_a_dead_writer(wh / "leftover")
    create("checkpoint", "log.checkpoint.interval=1")
    for written in (wh / "checkpoint" / "_lakectl" / "checkpoints").iterdir():
        written.unlink()
    create("idle")
    create("damaged")
    (wh / "damaged" / "_lakectl" / "log" / f"{0:020d}.json").write_text("{not json")
    before = {n: _rows(cli, wh, n) for n in ("minor", "major")}
    idle_log = sorted(p.name for p in (wh / "idle" / "_lakectl").rglob("*"))

    listed = {t["table"]: t for t in _ok(cli("tables", "--warehouse", wh, "--json"))["tables"]}
    assert [p["type"] for p in listed["minor"]["pending_compaction"]] == ["minor"]
    assert [p["type"] for p in listed["major"]["pending_compaction"]] == ["major"]
    assert [listed["minor"][k] for k in ("version", "rows", "deltas")] == [4, 5, 2]
    assert [listed["major"][k] for k in ("version", "rows", "deltas")] == [2, 3, 2]
    assert listed["idle"]["pending_compaction"] == [] and listed["idle"]["rows"] == 0
    assert listed["damaged"]["error"]["type"] == "format"

    plan = cli("maintain", "--warehouse", wh, "--dry-run", "--json")
    assert plan.code == 79, plan.err
    planned = {t["table"]: [a["action"] for a in t["actions"]] for t in plan.json["tables"]}
    # `minor`'s clean: the status file of its earlier compaction; `major`'s: with a retention
    # of 0s, the log entries before the current state expire.
    assert planned == {
        "checkpoint": ["checkpoint"],
        "damaged": [],
        "idle": [],
        "leftover": ["clean"],
        "major": ["compact", "clean"],
        "minor": ["compact", "clean"],
    }
    reasons = {t["table"]: [a["reason"] for a in t["actions"]] for t in plan.json["tables"]}
    assert reasons["minor"][1] == "delete 1 path (1 compaction status)"
    assert re.match(r"expire \d+ log entries: history starts", reasons["major"][1])
    assert reasons["leftover"] == [
        "delete 2 paths (1 aborted writer, 1 staging); "
        "mark write id(s) 1 aborted (their writers are gone)"
    ]
    assert _dirs(wh / "major") == {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000"}

    run = cli("maintain", "--warehouse", wh, "--json")
    assert run.code == 79, run.err
    result = {t["table"]: t for t in run.json["tables"]}
    assert run.json["failed"] == 1 and run.json["skipped"] == 0
    assert [t for t, r in result.items() if r["status"] != "ok"] == ["damaged"]
    assert result["damaged"]["error"]["type"] == "format"
    assert "damaged" in result["damaged"]["error"]["message"]
    assert [p["type"] for p in result["minor"]["actions"][0]["details"]["partitions"]] == ["minor"]
    assert [p["type"] for p in result["major"]["actions"][0]["details"]["partitions"]] == ["major"]
    assert all(a["status"] == "done" for r in result.values() for a in r["actions"])
    assert "delta_0000003_0000004" in _dirs(wh / "minor")
    # `major`'s clean ran after its compaction: the replaced deltas are outside its 0s window.
    assert _dirs(wh / "major") == {"base_0000002_v0000002"}
    assert not (wh / "leftover" / "delta_0000001_0000001_0000").exists()
    assert not list((wh / "leftover" / "_lakectl" / "staging").iterdir())
    assert (wh / "leftover" / "_lakectl" / "txns" / f"{1:020d}.aborted").exists()
    assert [p.name for p in (wh / "checkpoint" / "_lakectl" / "checkpoints").iterdir()] == [
        f"{1:020d}.json"
    ]
    assert sorted(p.name for p in (wh / "idle" / "_lakectl").rglob("*")) == idle_log
    assert not list(wh.glob("*/_lakectl/maintain.lock"))
    assert {n: _rows(cli, wh, n) for n in before} == before

    # Second run, `idle` locked by a run still going: skipped, not failed. The others need
    # nothing more (`minor`'s replaced deltas stay inside its 7d window).
    storage, path = storage_for(str(wh / "idle"))
    with MaintenanceLock(TableStore(storage, path, "idle")) as lock:
        assert lock.acquire() is None
        again = cli("maintain", "--warehouse", wh, "--json")
    result = {t["table"]: t for t in again.json["tables"]}
    assert again.code == 79 and again.json["skipped"] == 1
    assert result["idle"]["status"] == "skipped"
    assert result["idle"]["reason"].startswith("locked: another maintenance run holds it (pid")
    assert "delta_0000003_0000003_0000" in _dirs(wh / "minor")
    for name in ("minor", "leftover", "checkpoint"):
        assert result[name]["actions"] == [], name

    # Named tables only, the damaged one left out: exit 0.
    named = cli("maintain", "minor", "major", "--warehouse", wh)
    assert named.code == 0, named.err
    assert "2 table(s): 2 ok, 0 skipped, 0 failed" in named.out
