"""Load sources and ``snapshot --out`` on s3:// without hadoop-aws: files go through fsspec
(lakectl.spark.fsspec_files) and must give what Spark's own readers and writers give on the same
files on local disk: same inferred columns and types, same rows (in file order for one file), same
load counts, same snapshot output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from samples import CDC, REPO, SALES, rows
from samples import SALES_SCHEMA as SCHEMA

from lakectl.spark import fsspec_files
from lakectl.spark.sources import read_source
from lakectl.storage.fs import storage_for


def upload(local: Path, url: str) -> None:
    storage, path = storage_for(url)
    if local.is_dir():
        storage.fs.put(str(local), path, recursive=True)
    else:
        storage.fs.put_file(str(local), path)


def collected(df: Any) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields], [
        tuple(r) for r in df.collect()
    ]


@pytest.fixture(scope="module")
def spark_written(spark, tmp_path_factory) -> dict[str, Path]:
    """The sales base as Spark writes it in each format: directories with part files,
    ``_SUCCESS`` and ``.crc`` files beside them (which readers must skip)."""
    base = tmp_path_factory.mktemp("sources")
    df = (
        spark.read.option("header", "true")
        .option("inferSchema", "true")
        .csv(str(SALES / "base.csv"))
    )
    out = {}
    for fmt in ("json", "parquet", "orc"):
        out[fmt] = base / fmt
        getattr(df.repartition(3).write, fmt)(str(out[fmt]))
    return out


def test_one_csv_read_in_small_ranges_gives_spark_s_rows_in_file_order(s3, spark, monkeypatch):
    url = s3.url("landing/base.csv")
    upload(SALES / "base.csv", url)
    monkeypatch.setattr(fsspec_files, "SPLIT_BYTES", 3000)
    data = (SALES / "base.csv").read_bytes()
    cuts = range(3000, len(data), 3000)
    assert len(cuts) == 5 and all(data[c - 1 : c] != b"\n" for c in cuts)  # each cuts a line
    for infer in (True, False):
        local = collected(read_source(spark, str(SALES / "base.csv"), "csv", infer))
        remote = collected(read_source(spark, url, "csv", infer))
        assert remote == local
        assert len(remote[1]) == 200
    assert local[0][0] == ("sell_id", "string")  # infer=False: strings, cast and checked later


@pytest.mark.parametrize("fmt", ["json", "parquet", "orc"])
def test_spark_written_directories_read_the_same_from_s3(s3, spark, spark_written, fmt):
    url = s3.url(f"landing/{fmt}")
    upload(spark_written[fmt], url)
    local_cols, local_rows = collected(read_source(spark, str(spark_written[fmt]), fmt, True))
    remote_cols, remote_rows = collected(read_source(spark, url, fmt, True))
    assert remote_cols == local_cols
    assert sorted(remote_rows) == sorted(local_rows)
    assert len(remote_rows) == 200


def test_avro_source_on_s3(s3, spark):
    avro = REPO / "sample_data" / "doctors" / "doctors.avro"
    url = s3.url("landing/doctors.avro")
    upload(avro, url)
    assert collected(read_source(spark, url, "avro", True)) == collected(
        read_source(spark, str(avro), "avro", True)
    )


def test_cdc_loads_from_s3_sources_and_snapshot_out_to_s3_match_local(
    s3, tmp_path, lakectl_cli, spark
):
    tables = {"s3": s3.url("sales"), "local": str(tmp_path / "sales")}
    sources = {
        "s3": [s3.url(f"landing/{n}") for n in ("base.csv", "cdc_batch_1.csv")],
        "local": [SALES / n for n in ("base.csv", "cdc_batch_1.csv")],
    }
    for local, url in zip(sources["local"], sources["s3"], strict=True):
        upload(local, url)
    counts = {}
    for where, table in tables.items():
        made = lakectl_cli("create", table, "--schema", SCHEMA, "--primary-key", "sell_id",
                           "--partition-by", "create_date")  # fmt: skip
        assert made.code == 0, made.err
        counts[where] = []
        for source in sources[where]:
            loaded = lakectl_cli("load", table, source, *CDC, "--json")
            assert loaded.code == 0, loaded.err
            counts[where].append(loaded.json["counts"])
    assert counts["s3"] == counts["local"]
    # A replayed S3 source is recognised by its location and content, as a local one is.
    replay = lakectl_cli("load", tables["s3"], sources["s3"][1], *CDC, "--json")
    assert (replay.code, replay.json["status"], replay.json["loaded_by"]) == (0, "skipped", 2)
    expected = rows(lakectl_cli("snapshot", tables["local"], "--json"))
    assert len(expected) == 200 + 30 - 11

    storage, _ = storage_for(s3.url("x"))
    for fmt in ("parquet", "csv", "json", "orc"):
        outs = {"s3": s3.url(f"out/{fmt}"), "local": str(tmp_path / f"out-{fmt}")}
        for where, out in outs.items():
            done = lakectl_cli("snapshot", tables[where], "--out", out, "--format", fmt, "--json")
            assert done.code == 0, done.err
            assert done.json["rows_written"] == len(expected)
        # What Spark reads back from the local output equals what lakectl reads back from S3.
        back = {
            where: sorted(collected(read_source(spark, out, fmt, infer=True))[1])
            for where, out in outs.items()
        }
        assert back["s3"] == back["local"]
        assert len(back["s3"]) == len(expected)
        _, prefix = storage_for(outs["s3"])
        names = storage.fs.ls(prefix, detail=False)
        summary = json.loads(storage.fs.cat_file(f"{prefix}/_SUCCESS"))
        assert summary["rows"] == len(expected)
        assert sorted(n.rsplit("/", 1)[-1] for n in names) == sorted(
            ["_SUCCESS", *summary["files"]]
        )
    again = lakectl_cli("snapshot", tables["s3"], "--out", s3.url("out/csv"), "--json")
    assert again.code == 65 and "already exists" in again.out


def test_missing_and_malformed_sources_on_s3_fail_as_locally(s3, tmp_path, lakectl_cli, spark):
    bad = tmp_path / "bad.json"
    bad.write_text('{"sell_id": 1}\n{"sell_id": \n')
    upload(bad, s3.url("landing/bad.json"))
    results = {}
    for where, source in (("local", bad), ("s3", s3.url("landing/bad.json"))):
        done = lakectl_cli("load", tmp_path / f"t-{where}", source, "--create", "--json")
        results[where] = (done.code, done.json["error"]["message"].split(": ", 1)[1][:40])
    assert results["s3"][0] == results["local"][0] == 65
    nothing = s3.url("landing/nothing.csv")
    missing = lakectl_cli("load", tmp_path / "t", nothing, "--create", "--json")
    assert missing.code == 66, missing.out
    assert missing.json["error"]["message"] == f"source {nothing} does not exist"


def test_sources_registered_and_read_from_several_threads_at_once(s3, spark):
    """Each read registers its data source on the session again; reads from worker threads
    (as a server or a test harness runs commands) must neither miss nor confuse registrations."""
    from concurrent.futures import ThreadPoolExecutor

    url = s3.url("landing/threads.csv")
    upload(SALES / "cdc_batch_1.csv", url)
    expected = collected(read_source(spark, str(SALES / "cdc_batch_1.csv"), "csv", True))

    def read(_: int) -> Any:
        return collected(read_source(spark, url, "csv", True))

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(read, range(4))) == [expected] * 4
