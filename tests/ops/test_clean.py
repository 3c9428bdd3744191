"""Compaction and clean end to end on random load histories, checked against DuckDB.

One history per seed: loads, minor, load, major, load, auto; the snapshot after every step and at
every version equals the oracle's. Then `clean` with a retention window that ends between the
two first compactions, and `clean --retain 0s`: what is inside the window still reads the same,
what is outside fails with the clear error, and a second clean does nothing.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cdc_oracle import CdcOracle
from tests.support.orc_streams import acid_metadata_mismatch, bloom_filter_columns
from tests.support.random_cdc import (
    CDC_ARGS,
    COLUMNS,
    SCHEMA,
    make_batch,
    oracle_rows,
    rows_of,
    write_csv,
)


class History:
    """A table loaded with random CDC batches, and DuckDB's rows after each version."""

    def __init__(self, tmp_path: Path, cli, seed: int) -> None:
        self.tmp, self.cli, self.rng = tmp_path, cli, random.Random(seed)
        self.table = tmp_path / "orders"
        self.oracle = CdcOracle(COLUMNS, key=("id",), order_by="change_ts", op_column="op_code")
        self.at_version: dict[int, list[tuple]] = {}
        created = cli(
            "create", self.table, "--schema", SCHEMA, "--primary-key", "id",
            "--partition-by", "region",
        )  # fmt: skip
        assert created.code == 0, created.err

    def load(self) -> None:
        no = len(self.at_version) + 1
        path = write_csv(self.tmp / f"b{no}.csv", make_batch(self.rng, no, key_space=150))
        result = self.cli("load", self.table, path, *CDC_ARGS, "--json")
        assert result.code == 0, result.err
        assert result.json["counts"] == self.oracle.apply_csv(str(path), "cdc")
        self.at_version[result.json["version"]] = oracle_rows(self.oracle)

    def run(self, *args: object) -> dict:
        result = self.cli(*args[:1], self.table, *args[1:], "--json")
        assert result.code == 0, result.err
        return result.json

    def compact(self, *args: str) -> int:
        """Compact; check the snapshot is unchanged (read with Spark and with pyarrow); return
        the commit time."""
        out = self.run("compact", *args)
        assert out["committed"], out
        self.check_current(engine="spark")
        self.check_current()
        return self.log()[-1]["committed_at"]

    def snapshot(self, *args: object, engine: str = "spark"):
        return self.cli("snapshot", self.table, *args, "--engine", engine, "--json")

    def check_current(self, engine: str = "arrow") -> None:
        """The newest state, read with pyarrow unless told (no Spark job for a check)."""
        result = self.snapshot(engine=engine)
        assert result.code == 0, result.err
        assert rows_of(result) == self.at_version[max(self.at_version)]

    def check_version(self, version: int, engine: str = "arrow") -> None:
        result = self.snapshot("--version", version, engine=engine)
        assert result.code == 0, result.err
        assert rows_of(result) == self.at_version[version], f"--version {version}"

    def log(self) -> list[dict]:
        folder = self.table / "_lakectl" / "log"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def dirs(self) -> set[str]:
        return {
            str(p.relative_to(self.table))
            for p in self.table.glob("region=*/*")
            if p.is_dir() and not p.name.startswith((".", "_"))
        }


@pytest.mark.parametrize("seed", [5])
def test_compactions_and_clean_keep_every_state_inside_the_window(
    tmp_path, lakectl_cli, spark, seed
):
    h = History(tmp_path, lakectl_cli, seed)
    for _ in range(3):
        h.load()
    t_minor = h.compact("--minor")
    time.sleep(1.5)  # room for a horizon between the minor compaction and the next load
    h.load()
    t_load = h.log()[-1]["committed_at"]
    h.compact("--major")
    blooms = [bloom_filter_columns(f) for f in h.table.glob("region=*/base_*/bucket_*")]
    assert blooms and all(b == {"row.id"} for b in blooms if b is not None)  # on the key
    h.load()
    # `planned` is what `compact --auto` would do now.
    planned = [
        (e["partition"], e["type"])
        for e in h.run("compactions", "--state", "planned")["compactions"]
    ]
    dry = h.run("compact", "--auto", "--dry-run")["partitions"]
    assert planned == [(p["partition"] or "(table)", p["type"]) for p in dry if p["type"]]
    h.compact("--auto", "--delta-pct-threshold", "0")  # any delta: major
    # Every file written (loads, minor and major outputs) carries Hive's hive.acid.* metadata.
    written = list(h.table.glob("region=*/*/bucket_*"))
    assert {f.parent.name.split("_")[0] for f in written} >= {"base", "delta", "delete"}
    assert [m for m in map(acid_metadata_mismatch, written) if m] == []
    for version in h.at_version:
        h.check_version(version)

    # The window starts between the minor compaction and the load after it (so before the major
    # compaction): only the minor's inputs go, and version 3 is the oldest kept. The retention is
    # computed right before each command, so a slow machine does not move the window's start.
    def retain() -> str:
        return f"{int(time.time() * 1000) - (t_minor + t_load) // 2}ms"

    before = h.dirs()
    plan = h.run("clean", "--retain", retain(), "--dry-run")
    assert h.dirs() == before and plan["log_seq"] is None  # a dry run changes nothing
    minor_inputs = set(h.log()[4]["obsolete"])
    assert {i["path"] for i in plan["plan"]["delete"] if i["kind"] == "obsolete"} == minor_inputs
    assert {i["kind"] for i in plan["plan"]["delete"]} == {"obsolete", "compaction status"}
    assert {i["kind"] for i in plan["plan"]["keep"]} == {"obsolete"}
    cleaned = h.run("clean", "--retain", retain(), "--force")
    assert minor_inputs <= set(cleaned["deleted"]) and h.dirs() == before - minor_inputs
    assert not list((h.table / "_lakectl" / "compactions").iterdir())  # the log has them
    assert h.log()[-1]["operation"] == "clean"
    assert h.log()[-1]["info"]["oldest_available"]["version"] == 3
    h.check_current(engine="spark")
    for version in (3, 4, 5):  # 3: read through the minor compaction right after it
        h.check_version(version)
    h.check_version(3, engine="spark")
    too_old = h.snapshot("--version", 2)
    assert too_old.code == 67
    assert too_old.json["error"]["message"].startswith(
        "version 2 is no longer available: `lakectl clean` deleted"
    )
    assert too_old.json["error"]["hint"].startswith("the oldest state available is version 3 (")

    # Retain nothing, and crash after the first deletion: the record was committed first, so the
    # table reads, time travel fails cleanly, and a rerun finishes without a new record.
    env = {**os.environ, "LAKECTL_FAILPOINTS": "clean.after_first_delete=crash"}
    command = [
        sys.executable,
        "-m",
        "lakectl",
        "clean",
        str(h.table),
        "--retain",
        "0s",
        "--force",
        "--json",
    ]
    crashed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert crashed.returncode == 137, crashed.stderr[-2000:]
    assert h.log()[-1]["operation"] == "clean"
    assert h.log()[-1]["info"]["oldest_available"]["version"] == 5
    last_seq = h.log()[-1]["seq"]
    h.check_current()
    assert h.snapshot("--version", 4).code == 67
    everything = h.run("clean", "--retain", "0s", "--force")
    assert everything["deleted"] and everything["log_seq"] is None
    assert h.log()[-1]["seq"] == last_seq  # no new record (expired log entries may go)
    h.check_current(engine="spark")
    h.check_version(5)
    for version in (3, 4):
        assert h.snapshot("--version", version).code == 67
    assert h.snapshot("--version", 4, engine="arrow").code == 67
    first_load = h.log()[1]["committed_at"]
    known = h.cli("snapshot", h.table, "--known-at", str(first_load), "--json")
    assert known.code == 67 and "as known at" in known.json["error"]["message"]
    shown = h.run("show")
    assert all(p["obsolete_dirs"] == 0 for p in shown["partitions"])
    states = {e["state"] for e in h.run("compactions")["compactions"]}
    assert states == {"cleaned"}

    # Idempotent: nothing left, nothing recorded.
    again = h.run("clean", "--retain", "0s", "--force")
    assert again["deleted"] == [] and h.log()[-1]["seq"] == last_seq


def test_set_properties_drive_auto_compaction_and_are_validated(tmp_path, lakectl_cli):
    table = tmp_path / "t"
    created = lakectl_cli("create", table, "--schema", "id bigint, v string", "--primary-key", "id")
    assert created.code == 0, created.err
    changed = lakectl_cli(
        "set", table, "compactor.delta.num.threshold=2", "clean.retain=3d", "--json"
    )
    assert changed.code == 0, changed.err
    assert changed.json["changed"] == {"compactor.delta.num.threshold": "2", "clean.retain": "3d"}
    shown = lakectl_cli("show", table, "--json").json["properties"]
    assert shown["compactor.delta.num.threshold"] == "2" and shown["clean.retain"] == "3d"
    plan = lakectl_cli("compact", table, "--auto", "--dry-run", "--json").json
    assert plan["thresholds"]["compactor.delta.num.threshold"] == 2
    cleaned = lakectl_cli("clean", table, "--dry-run", "--json").json
    assert cleaned["retain_ms"] == 3 * 86_400_000

    unknown = lakectl_cli("set", table, "clean.retention=1d", "--json")
    assert unknown.code == 2
    assert unknown.json["error"]["message"] == "unknown table property 'clean.retention'"
    assert "clean.retain" in unknown.json["error"]["hint"]
    bad = lakectl_cli("set", table, "write.target-file-size=huge", "--json")
    assert bad.code == 2
    assert bad.json["error"]["message"] == "write.target-file-size=huge: 'huge' is not a size"
    bad_size = lakectl_cli("compact", table, "--major", "--target-file-size", "tiny", "--json")
    assert bad_size.code == 2 and bad_size.json["error"]["message"] == "'tiny' is not a size"
    bad_retain = lakectl_cli("clean", table, "--retain", "7 days", "--json")
    assert bad_retain.code == 2 and "is not a duration" in bad_retain.json["error"]["message"]

    same = lakectl_cli("set", table, "clean.retain=3d", "--json").json
    assert same["changed"] == {} and same["log_seq"] is None
    reset = lakectl_cli("set", table, "--unset", "clean.retain", "--json").json
    assert reset["properties"]["clean.retain"] == "7d"
