"""The stored events Spark's compaction writer takes, read by the live-row kernel in Spark tasks
(lakectl.spark.kernel_read.kernel_events): the live insert events of a major compaction, a minor
one's insert events and delete events. Checked against the Java data source (an independent
reader of the live rows and their identities) and against the event files read raw with pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.orc as orc

from lakectl.ops.context import Context
from lakectl.scan.target import plan_lakectl
from lakectl.spark import kernel_read, snapshot_rows
from lakectl.spark.native_read import native_rows
from tests.support.cli import create_region_table, csv_file

SCHEMA = "id bigint, note string, region string"
HEADER = ["op", "id", "note", "region"]
CDC = ("--mode", "cdc", "--op-column", "op", "--engine", "arrow", "--json")
REGIONS = ["a/b", "c", None]  # an escaped value and the default partition


def _table(tmp_path: Path, lakectl_cli) -> Path:
    """Three commits (by the Arrow engine: the reads are under test): 12 inserts; 4 updates
    and 3 deletes; 2 inserts after an added column."""
    wh = tmp_path / "wh"
    create_region_table(wh, SCHEMA)
    first = [("I", i, f"n{i}", REGIONS[i % 3]) for i in range(12)]
    second = [("U", i, "upd", REGIONS[i % 3]) for i in range(4)]
    second += [("D", i, "", REGIONS[i % 3]) for i in range(4, 7)]
    for n, rows in enumerate((first, second)):
        loaded = lakectl_cli(
            "load", "t", csv_file(tmp_path / f"{n}.csv", HEADER, rows), "--warehouse", wh, *CDC
        )
        assert loaded.code == 0, loaded.err
    altered = lakectl_cli("--json", "alter", wh / "t", "--add-column", "qty int default 7")
    assert altered.code == 0, altered.err
    third = tmp_path / "2.csv"
    third.write_text("op,id,note,region,qty\nI,20,new,c,3\nI,21,new,a/b,\n")
    loaded = lakectl_cli("load", "t", third, "--warehouse", wh, *CDC)
    assert loaded.code == 0, loaded.err
    return wh / "t"


def _raw(store, plans, dirs: str) -> list[tuple]:
    """Every event of ``dirs`` (``deltas`` or ``delete_deltas``), read raw with pyarrow:
    (partition, operation, originalTransaction, bucket, rowId, currentTransaction, id)."""
    out = []
    for plan in plans:
        for d in getattr(plan, dirs):
            for f in d.files:
                with store.storage.fs.open(f.path, "rb") as handle:
                    t = orc.ORCFile(handle).read()
                ids = pc.struct_field(t.column("row"), [0]).to_pylist()
                events = zip(*(t.column(c).to_pylist() for c in _EVENTS), ids, strict=True)
                out += [(plan.values[0], *e) for e in events]
    return sorted(out, key=str)


_EVENTS = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"]


def test_events_of_each_kind_match_the_data_source_and_the_raw_files(tmp_path, lakectl_cli, spark):
    table = _table(tmp_path, lakectl_cli)
    store = Context().table(str(table))
    state = store.read_state()
    meta = state.metadata
    valid, plans, _ = plan_lakectl(store, state)
    spec = snapshot_rows.ReadSpec(
        store.storage, store.root, meta.data_schema, meta.schema.select(["region"]), valid, "id"
    )
    live = kernel_read.kernel_events(spark, plans, spec, kernel_read.LIVE)
    assert live is not None
    assert live.columns == [*_EVENTS, "row", "region"]
    assert live.schema["row"].dataType.simpleString() == "struct<id:bigint,note:string,qty:int>"
    got = sorted(
        (r.row.id, r.row.note, r.row.qty, r.region, r.originalTransaction, r.bucket, r.rowId)
        for r in live.collect()
    )
    source = native_rows(spark, plans, spec, with_identity=True)
    assert source is not None
    want = sorted(tuple(r) for r in source.collect())
    assert got == want
    assert [r[0] for r in got] == [0, 1, 2, 3, 7, 8, 9, 10, 11, 20, 21]
    assert {r[2] for r in got if r[0] < 20} == {7} and {r[2] for r in got if r[0] >= 20} == {
        3,
        None,
    }
    # Every live event is an insert of its own write id.
    assert {
        (r.operation, r.currentTransaction == r.originalTransaction) for r in live.collect()
    } == {(0, True)}

    for kind, dirs, deletes in (
        (kernel_read.INSERTS, "deltas", False),
        (kernel_read.DELETES, "delete_deltas", True),
    ):
        frame = kernel_read.kernel_events(spark, plans, spec, kind)
        assert frame is not None and frame.columns == [*_EVENTS, "row", "region"]
        rows = frame.collect()
        assert all((r.row is None) == deletes for r in rows)
        events = sorted(
            ((r.region, *(r[c] for c in _EVENTS), r.row.id if r.row else None) for r in rows),
            key=str,
        )
        raw = _raw(store, plans, dirs)
        assert events == raw and len(raw) == (7 if deletes else 18)
