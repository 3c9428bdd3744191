"""A checkpoint edited to drop a load's directories does not make the table read fewer rows: both
engines read every row, from the log records, and the command warns about the checkpoint."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import lakectl
from lakectl.table.checkpoint import checkpoint_name
from lakectl.table.store import CHECKPOINT_DIR
from tests.support.cli import CliRun

SCHEMA = "id bigint, label string, day string"


def test_a_checkpoint_without_its_added_directories_is_skipped_by_both_engines(
    spark, tmp_path: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="day"
    )
    assert lakectl_cli("set", str(tmp_path / "t"), "log.checkpoint.interval=2").code == 0
    frame = spark.createDataFrame
    table.load(frame([(i, f"a{i}", f"d{i % 3}") for i in range(30)], SCHEMA))  # seq 2
    checkpoint = tmp_path / "t" / CHECKPOINT_DIR / checkpoint_name(2)
    body = json.loads(checkpoint.read_bytes())
    assert body["records"][2]["added"]
    body["records"][2]["added"] = []  # as an editor would: the digest no longer matches
    checkpoint.write_text(json.dumps(body))
    for engine in ("arrow", "spark"):
        read = lakectl_cli("snapshot", str(tmp_path / "t"), "--engine", engine, "--json")
        assert read.code == 0, read.err
        assert len(read.json["rows"]) == 30, engine
        assert read.err.count("warning: ") == 1
        assert f"checkpoint file://{checkpoint}" in read.err
        assert "do not match its SHA-256 digest" in read.err
