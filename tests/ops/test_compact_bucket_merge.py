"""Major compaction through the per-bucket merge (no shuffle) against the Spark rewrite.

Two tables with the same history: one compacted with ``spark.lakectl.compact.bucketMerge=false``
(the Spark shuffle + sort), one by the per-bucket merge. Both must write the same bucket files
holding the same events in the same order, the snapshot must equal the expected rows, and the
merge's files must carry the bloom filter on the key. (The other compaction tests use a timestamp
column, which the merge leaves to Spark.)
"""

from __future__ import annotations

import random
from pathlib import Path

import pyorc

from lakectl.spark.bucket_rewrite import ENABLED_CONF
from tests.support.orc_streams import acid_metadata_mismatch, bloom_filter_columns

SCHEMA = "id bigint, val string, amt double, qty int, day date, part string"
HEADER = "op_code,id,val,amt,qty,day,part"
PARTS = ["a", "b", "x/y"]


def _history(tmp: Path, seed: int, loads: int) -> tuple[list[Path], list[tuple]]:
    rng, rows, next_id = random.Random(seed), {}, 1
    paths: list[Path] = []
    for no in range(1, loads + 1):
        lines = [HEADER]
        keys = sorted(rows)
        rng.shuffle(keys)
        for key in keys[:12]:
            rows[key] = (f"u{no}_{key}", rows[key][1])
            lines.append(f"U,{key},{rows[key][0]},{no}.5,{no},2024-01-0{no},{rows[key][1]}")
        for key in keys[12:18]:
            lines.append(f"D,{key},,,,,{rows.pop(key)[1]}")
        for _ in range(80 if no == 1 else 9):
            rows[next_id] = (f"v{no}_{next_id}", rng.choice(PARTS))
            lines.append(
                f"I,{next_id},{rows[next_id][0]},1.25,{no},2024-01-0{no},{rows[next_id][1]}"
            )
            next_id += 1
        paths.append(tmp / f"batch_{no}.csv")
        paths[-1].write_text("\n".join(lines) + "\n")
    expected = sorted((k, v, p) for k, (v, p) in rows.items())
    return paths, expected


def _events(table: Path, base: str) -> dict[str, list[tuple]]:
    out = {}
    for f in sorted(table.glob(f"part=*/{base}*/bucket_*")):
        with f.open("rb") as handle:
            out[str(f.relative_to(table))] = list(pyorc.Reader(handle))
    return out


def test_bucket_merge_writes_what_the_spark_rewrite_writes(tmp_path, lakectl_cli, spark):
    batches, expected = _history(tmp_path, seed=7, loads=4)
    tables = {}
    for name in ("spark", "merge"):
        table = tmp_path / name
        created = lakectl_cli(
            "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "part"
        )
        assert created.code == 0, created.err
        for batch in batches:
            loaded = lakectl_cli("load", table, batch, "--mode", "cdc", "--op-column", "op_code")
            assert loaded.code == 0, loaded.err
        tables[name] = table

    previous = spark.conf.get(ENABLED_CONF, "true")
    try:
        spark.conf.set(ENABLED_CONF, "false")
        by_spark = lakectl_cli("compact", tables["spark"], "--major", "--json")
    finally:
        spark.conf.set(ENABLED_CONF, previous)
    by_merge = lakectl_cli("compact", tables["merge"], "--major", "--json")
    for done in (by_spark, by_merge):
        assert done.code == 0, done.err
    assert "merge_task_cpu_ms" in by_merge.json["counts"]
    assert "merge_task_cpu_ms" not in by_spark.json["counts"]
    assert by_merge.json["counts"]["rows_written"] == by_spark.json["counts"]["rows_written"]
    assert by_merge.json["added"] == by_spark.json["added"]

    spark_events, merge_events = (
        _events(tables["spark"], "base_"),
        _events(tables["merge"], "base_"),
    )
    assert spark_events.keys() == merge_events.keys() and merge_events
    for name, events in merge_events.items():
        assert events == spark_events[name], name  # same events, same order
        keys = [(e[1], e[2], e[3]) for e in events]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert all((e[2] >> 16) & 0xFFF == int(name.rsplit("_", 1)[1]) for e in events)
        assert bloom_filter_columns(tables["merge"] / name) in ({"row.id"}, None)
        assert acid_metadata_mismatch(tables["merge"] / name) is None

    for table in tables.values():
        shown = lakectl_cli("snapshot", table, "--json", "--limit", "100000")
        assert shown.code == 0, shown.err
        assert sorted((r["id"], r["val"], r["part"]) for r in shown.json["rows"]) == expected
