"""Property: whatever names a table's files hold, no command touches anything outside the table.

Each example is a real small table (a lakectl log over a data file Hive wrote) beside a "victim"
folder and another table, with hostile names planted in a compaction status file, a write-id
file, a log record and a checkpoint: paths out of the table, absolute paths, other schemes,
odd unicode, huge strings and wrong types. ``clean``, ``history``, ``compactions`` and an Arrow
``snapshot`` then run in this process while an audit hook records every file the process opens,
lists, deletes or renames: none is in the victim folder or the other table, no command exits 70,
and every file outside the table and every data file inside it keeps its bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.cli import run_lakectl as lakectl
from tests.support.paths import SHARED

DATA_FILE = SHARED / "interop/fixtures/acid_version_validation/acid_version_hive_3/00000_0"
DELTA = "delta_0000001_0000001_0000"
ZERO = "00000000000000000000"
INTERNAL_ERROR = 70
RUN_ID = "1700000000000-abcdef"
LEFTOVER = "delta_0000003_0000003_0000"  # of an aborted writer: clean deletes it

# --- watching what the process touches -----------------------------------------------------

_WATCH: dict[str, Any] = {"roots": (), "hits": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    roots = _WATCH["roots"]
    if not roots or not (event == "open" or event.startswith(("os.", "shutil."))):
        return
    for arg in args[:2]:
        if isinstance(arg, bytes):
            arg = arg.decode("utf-8", "replace")
        if isinstance(arg, os.PathLike):
            arg = os.fspath(arg)
        if isinstance(arg, str) and arg:
            path = os.path.normpath(os.path.join(os.getcwd(), arg))
            if any(path == r or path.startswith(r + os.sep) for r in roots):
                _WATCH["hits"].append((event, path))


sys.addaudithook(_audit)


@contextmanager
def watching(*roots: Path) -> Iterator[list[tuple[str, str]]]:
    """Every open, listing, delete or rename of a path under ``roots`` while inside."""
    hits: list[tuple[str, str]] = []
    _WATCH["roots"], _WATCH["hits"] = tuple(os.path.normpath(r) for r in roots), hits
    try:
        yield hits
    finally:
        _WATCH["roots"] = ()


# --- hostile values ----------------------------------------------------------------------

ATTACKS = [
    "../victim/important.json",
    "../../victim/important",
    "../../../victim/folder",
    "../other/_lakectl/log/" + ZERO,
    "../../other/" + DELTA,
    "p=1/../../../victim/base_0000001",
    "..",
    ".",
    "",
    "/",
    "//victim",
    "VICTIM",  # replaced by the victim folder's absolute path
    "file://VICTIM/important.json",
    "s3://bucket/t/" + DELTA,
    "hdfs://nn:8020/t/" + DELTA,
    "C:\\victim\\important.json",
    "..\\..\\victim\\important.json",
    "\u2025/victim",  # two-dot leader
    "\uff0e\uff0e/victim",  # fullwidth full stops
    "p=1/\u202ebase_0000001",
    "p=1\x00/" + DELTA,
    "p=1\n/" + DELTA,
    "base_0000001/../../victim",
    "x" * 5000,
    "p=" + "9" * 100_000 + "/" + DELTA,
    DELTA,
    "p=1/" + DELTA,
    "base_0000001",
]

names = st.one_of(st.sampled_from(ATTACKS), st.text(max_size=30))
wrong_types = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.lists(names, max_size=2),
    st.dictionaries(st.text(max_size=5), names, max_size=2),
)
values = st.one_of(names, names, wrong_types)
lists = st.one_of(st.lists(values, min_size=1, max_size=4), values)


def _fill(value: Any, victim: Path) -> Any:
    """``value`` with the VICTIM placeholder replaced by the victim folder's path."""
    if isinstance(value, str):
        return value.replace("VICTIM", str(victim))
    if isinstance(value, list):
        return [_fill(v, victim) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, victim) for k, v in value.items()}
    return value


plants = st.fixed_dictionaries(
    {
        "status_sound": st.booleans(),  # then only the log, checkpoint and txn file are hostile
        "status_name": st.sampled_from(["x.json", f"{RUN_ID}.json", "..json"]),
        "status_id": st.one_of(st.just(RUN_ID), values),
        "status_state": st.sampled_from(["committed", "working", "failed"]),
        "status_outputs": st.one_of(st.just([]), lists),
        "txn_host": values,
        "record_operation": st.sampled_from(["append", "compact", "clean", "cdc"]),
        "record_field": st.sampled_from(["added", "obsolete", "partitions"]),
        "record_value": lists,
        "compaction_inputs": lists,
        "where": st.sampled_from(["log", "checkpoint", "both", "status and txn only"]),
    }
)

# --- the lake ----------------------------------------------------------------------------


def _hashes(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            out[str(path)] = (
                "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            )
    return out


def _write_json(path: Path, body: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body))


def _lake(base: Path) -> tuple[Path, Path, Path]:
    """``lake/t`` (one committed data file), ``lake/other`` and ``victim`` beside them."""
    victim = base / "victim"
    (victim / "folder.json").mkdir(parents=True)
    (victim / "folder.json" / "inside").write_text("inside")
    (victim / "important.json").write_text("precious")
    (victim / "base_0000001").mkdir()
    shutil.copy(DATA_FILE, victim / "base_0000001" / "bucket_00002")
    table, other = base / "lake" / "t", base / "lake" / "other"
    for path in (table, other):
        made = lakectl("create", path, "--schema", "a bigint")
        assert made.code == 0, made.err
    (table / DELTA).mkdir()
    shutil.copy(DATA_FILE, table / DELTA / "bucket_00002")
    (table / DELTA / "_orc_acid_version").write_text("2")
    (table / LEFTOVER).mkdir()
    shutil.copy(DATA_FILE, table / LEFTOVER / "bucket_00002")
    _write_json(table / "_lakectl/txns" / f"{3:020d}.json", {"started_at": 0, "pid": 1})
    _write_json(table / "_lakectl/txns" / f"{3:020d}.aborted", {"reason": "test"})
    record = {"seq": 1, "operation": "append", "committed_at": 1, "write_id": 1, "read_seq": 0}
    _write_json(table / "_lakectl/log" / f"{1:020d}.json", {**record, "added": [DELTA]})
    return table, other, victim


def _plant(table: Path, victim: Path, plant: dict[str, Any]) -> None:
    plant = {k: _fill(v, victim) for k, v in plant.items()}
    if plant["status_sound"]:
        plant.update(status_name=f"{RUN_ID}.json", status_id=RUN_ID, status_outputs=[])
    status = {
        "id": plant["status_id"],
        "state": plant["status_state"],
        "started_at": 0,
        "heartbeat_at": 0,
        "compactions": [{"partition": "", "outputs": plant["status_outputs"]}],
    }
    _write_json(table / "_lakectl/compactions" / plant["status_name"], status)
    txn = {"operation": "append", "started_at": 0, "host": plant["txn_host"], "pid": 1}
    _write_json(table / "_lakectl/txns" / f"{2:020d}.json", txn)
    hostile = {
        "seq": 2,
        "operation": plant["record_operation"],
        "committed_at": 2,
        "read_seq": 1,
        plant["record_field"]: plant["record_value"],
        "info": {"compactions": [{"inputs": plant["compaction_inputs"]}], "max_write_id": 1},
    }
    sound = {k: v for k, v in hostile.items() if k != plant["record_field"]}
    sound["info"] = {}
    where = plant["where"]
    _write_json(
        table / "_lakectl/log" / f"{2:020d}.json", hostile if where in ("log", "both") else sound
    )
    log = [json.loads((table / "_lakectl/log" / f"{s:020d}.json").read_text()) for s in (0, 1)]
    metadata = log[0].pop("metadata")
    log[0]["metadata_ref"] = 0
    records = [*log, hostile if where in ("checkpoint", "both") else sound]
    checkpoint = {"format": 1, "seq": 2, "metadata": [metadata], "records": records}
    _write_json(table / "_lakectl/checkpoints" / f"{2:020d}.json", checkpoint)


COMMANDS = [
    ("clean", "--retain", "0s", "--force", "--json"),
    ("clean", "--dry-run", "--json"),
    ("history", "--json"),
    ("compactions", "--json"),
    ("snapshot", "--engine", "arrow", "--json"),
]


@settings(
    max_examples=int(os.environ.get("LAKECTL_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plants)
def test_no_command_touches_anything_outside_the_table(plant):
    with tempfile.TemporaryDirectory() as tmp:
        table, other, victim = _lake(Path(tmp))
        _plant(table, victim, plant)
        outside = _hashes(victim, other)
        data = _hashes(table / DELTA)
        with watching(victim, other) as hits:
            codes = [lakectl(command[0], table, *command[1:]) for command in COMMANDS]
        for command, done in zip(COMMANDS, codes, strict=True):
            assert done.code != INTERNAL_ERROR, (command, done.err)
            assert "Traceback" not in done.err, (command, done.err)
            assert done.code in (0, 76), (command, done.code, done.err)
        assert hits == []
        assert _hashes(victim, other) == outside
        assert _hashes(table / DELTA) == data
