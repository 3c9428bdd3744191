"""The Spark data path on s3:// tables: pyspark has no Hadoop S3 connector, so event files go
through the fsspec ORC data source (lakectl.spark.fsspec_orc). Loads, snapshots, compaction and
clean on the real server give what the same commands give on a local table."""

from __future__ import annotations

from typing import Any

from samples import CDC, SALES, rows
from samples import SALES_SCHEMA as SCHEMA

from lakectl.storage.fs import storage_for

BATCHES = ("base.csv", "cdc_batch_1.csv")


def load_all(cli: Any, url: str) -> list[dict[str, int]]:
    created = cli(
        "create", url, "--schema", SCHEMA, "--primary-key", "sell_id",
        "--partition-by", "create_date",
    )  # fmt: skip
    assert created.code == 0, created.err
    counts = []
    for name in BATCHES:
        loaded = cli("load", url, SALES / name, *CDC, "--json")
        assert loaded.code == 0, loaded.err
        counts.append(loaded.json["counts"])
    return counts


def test_loads_snapshot_compact_and_clean_on_s3_match_local(s3, tmp_path, lakectl_cli, spark):
    on_s3, local = s3.url("sales"), str(tmp_path / "sales")
    assert load_all(lakectl_cli, on_s3) == load_all(lakectl_cli, local)
    snapshots = {}
    for args in ((), ("--version", "1")):
        remote = lakectl_cli("snapshot", on_s3, *args, "--json")
        assert remote.code == 0, remote.err
        snapshots[args] = rows(remote)
        assert snapshots[args] == rows(lakectl_cli("snapshot", local, *args, "--json"))
    assert len(snapshots[()]) == 200 + 30 - 11

    storage, root = storage_for(on_s3)
    files = storage.fs.find(root)
    assert any(p.rsplit("/", 1)[-1].startswith("bucket_") for p in files)
    # No file is left in staging (SeaweedFS may keep empty directory entries for a moment).
    staging = storage.join(root, "_lakectl", "staging")
    assert [p for p in storage.fs.find(staging) if p != staging] == []

    compacted = lakectl_cli("compact", on_s3, "--major", "--json")
    assert compacted.code == 0, compacted.err
    assert rows(lakectl_cli("snapshot", on_s3, "--json")) == snapshots[()]
    show = lakectl_cli("show", on_s3, "--json").json
    assert show["totals"]["rows"] == len(snapshots[()])
    assert all(p["base"] and not p["deltas"] for p in show["partitions"])
    listed = lakectl_cli("compactions", on_s3, "--json").json["compactions"]
    assert {e["state"] for e in listed} == {"ready for cleaning"}

    cleaned = lakectl_cli("clean", on_s3, "--retain", "0s", "--force", "--json")
    assert cleaned.code == 0, cleaned.err
    assert cleaned.json["deleted"]
    listed = lakectl_cli("compactions", on_s3, "--json").json["compactions"]
    assert {e["state"] for e in listed} == {"cleaned"}
    assert rows(lakectl_cli("snapshot", on_s3, "--json")) == snapshots[()]


def test_skew_and_list_bucket_on_s3_match_local(s3, tmp_path, lakectl_cli, spark):
    on_s3, local = s3.url("sales"), str(tmp_path / "sales")
    load_all(lakectl_cli, on_s3)
    load_all(lakectl_cli, local)
    skews = [lakectl_cli("skew", t, "--column", "store_id", "--json") for t in (on_s3, local)]
    assert all(s.code == 0 for s in skews), [s.err for s in skews]
    assert skews[0].json["partitions"] == skews[1].json["partitions"]
    assert skews[0].json["partitions"]  # there is something to compare
    rewrites = [
        lakectl_cli("list-bucket", t, "--column", "store_id", "--auto", "--json")
        for t in (on_s3, local)
    ]
    assert all(r.code == 0 for r in rewrites), [r.err for r in rewrites]
    assert [p["after"] for p in rewrites[0].json["partitions"]] == [
        p["after"] for p in rewrites[1].json["partitions"]
    ]
    hot = next(p["recommended"][0][0] for p in skews[1].json["partitions"] if p["recommended"])
    where = f"store_id = '{hot}'"
    reads = [lakectl_cli("snapshot", t, "--where", where, "--json") for t in (on_s3, local)]
    assert rows(reads[0]) == rows(reads[1]) and rows(reads[0])
    assert reads[0].json["scan"]["files_read"] == reads[1].json["scan"]["files_read"]
    assert reads[0].json["scan"]["files_read"] < reads[0].json["scan"]["files"]  # pruned
