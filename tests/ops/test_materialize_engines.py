"""``apply-updates --materialize`` by the Spark and the Arrow engine on the same table: the same
counts, commit record, directories and event files (row for row), and reads unchanged in both
engines. (The history is loaded by the Arrow engine: only the materialize runs in Spark.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.orc as orc

from tests.arrow.test_materialize_arrow import ARROW, partitioned_table
from tests.ops.test_materialize import PART_READS, Lake

COMPARED_RECORD = ("operation", "counts", "effective_at", "info", "partitions")


def _events(table: Path, added: list[str]) -> dict[str, tuple[list, list]]:
    """Each new bucket file's events (relative path -> the events without their rowId, sorted,
    and the rowIds in file order). Which new row gets which rowId follows the order Spark's
    tasks happen to hold the rows in; the ids, the rows and every delete event must match."""
    out = {}
    for directory in added:
        for path in sorted((table / directory).glob("bucket_*")):
            events = orc.read_table(path).to_pylist()
            rest = sorted(
                repr(sorted((k, v) for k, v in e.items() if k != "rowId")) for e in events
            )
            out[str(path.relative_to(table))] = (rest, [e["rowId"] for e in events])
    return out


def test_materialize_in_arrow_writes_what_spark_writes(tmp_path, lakectl_cli, spark):
    results, lakes = {}, {}
    for engine in ("spark", "arrow"):
        home = tmp_path / engine
        home.mkdir()
        lake = lakes[engine] = Lake(lakectl_cli, home)
        partitioned_table(lake, home)
        before = lake.reads("t", {n: (*a, *ARROW) for n, a in PART_READS.items()})
        results[engine] = lake.ok(
            "apply-updates", "t", "--materialize", "--until", "250", "--engine", engine
        )
        assert lake.reads("t", {n: (*a, *ARROW) for n, a in PART_READS.items()}) == before
        if engine == "arrow":  # and Spark reads what the Arrow engine wrote
            assert lake.reads("t", {"now": ("--engine", "spark")})["now"] == before["now"]

    spark_run, arrow_run = results["spark"], results["arrow"]
    assert (spark_run["engine"], arrow_run["engine"]) == ("spark", "arrow")
    for key in ("version", "counts", "retired_statements", "active_statements", "added"):
        assert arrow_run[key] == spark_run[key], key
    records = {
        e: {k: v for k, v in lakes[e].ok("history", "t")["commits"][-1].items()
            if k in COMPARED_RECORD}
        for e in results
    }  # fmt: skip
    assert records["arrow"] == records["spark"]
    events = {e: _events(tmp_path / e / "t", results[e]["added"]) for e in results}
    assert events["arrow"] == events["spark"] and events["spark"]
