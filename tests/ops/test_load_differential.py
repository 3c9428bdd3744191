"""Differential tests: random CDC batches loaded by lakectl equal the same batches applied by
an independent engine (DuckDB, tests/support/cdc_oracle.py), row for row, count for count, and at
every version.

Batches have inserts, updates and deletes, keys repeated within a batch, change times older
than the stored row's (late arrivals) and equal to it (ties), deletes of keys that never
existed, and values that need CSV quoting, in a table partitioned by a column whose values
need Hive's path escaping.
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyorc
import pytest

from tests.support.cdc_oracle import CdcOracle
from tests.support.orc_streams import dictionary_columns
from tests.support.random_cdc import (
    CDC_ARGS,
    COLUMNS,
    SCHEMA,
    make_batch,
    oracle_rows,
    rows_of,
    write_csv,
)


def data_files(table: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p.relative_to(table)): (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size)
        for p in table.rglob("*")
        if p.is_file() and "_lakectl" not in p.parts
    }


def check_acid_layout(table: Path) -> None:
    """Every committed directory is Hive 3 ACID: version file, bucket files, sorted events,
    and each delete event points at a row an earlier transaction wrote in that partition."""
    inserted: dict[str, set[tuple[int, int, int]]] = {}
    dirs = sorted(
        (d for d in table.rglob("*delta_*") if d.is_dir()),
        key=lambda d: (int(d.name.split("_")[-2]), d.name.startswith("delta")),
    )
    assert dirs
    for d in dirs:
        write_id = int(d.name.split("_")[-2])
        assert (d / "_orc_acid_version").read_text() == "2"
        files = [f for f in d.iterdir() if not f.name.startswith(("_", "."))]
        assert files and all(f.name.startswith("bucket_") and len(f.name) == 12 for f in files)
        for f in files:
            with f.open("rb") as handle:
                reader = pyorc.Reader(handle)
                assert list(reader.schema.fields)[:5] == [
                    "operation",
                    "originalTransaction",
                    "bucket",
                    "rowId",
                    "currentTransaction",
                ]
                events = list(reader)
            keys = [(e[1], e[2], e[3]) for e in events]
            assert keys == sorted(keys), f"{f}: events not ordered by (otid, bucket, rowId)"
            assert len(set(keys)) == len(keys)
            assert all(e[4] == write_id for e in events)
            bucket_id = int(f.name[len("bucket_") :])
            assert all((e[2] >> 16) & 0xFFF == bucket_id and e[2] >> 29 == 1 for e in events)
            partition = str(d.parent.relative_to(table))
            seen = inserted.setdefault(partition, set())
            if d.name.startswith("delete_delta_"):
                assert all(e[0] == 2 and e[5] is None for e in events)
                assert set(keys) <= seen, f"{f}: deletes rows that were never written"
            else:
                assert all(e[0] == 0 and e[1] == write_id for e in events)
                seen.update(keys)


# A string change time orders like the timestamp; both take the pyarrow key lookup
# (lakectl.spark.key_lookup).
@pytest.mark.parametrize(
    ("seed", "ts_type"), [(11, "timestamp"), (22, "timestamp"), (33, "timestamp"), (44, "string")]
)
def test_random_cdc_batches_match_duckdb(tmp_path, lakectl_cli, spark, seed, ts_type):
    rng = random.Random(seed)
    table = tmp_path / "wh" / "orders"
    schema = SCHEMA.replace("change_ts timestamp", f"change_ts {ts_type}")
    created = lakectl_cli(
        "create", "orders", "--warehouse", tmp_path / "wh", "--schema", schema,
        "--primary-key", "id", "--partition-by", "region", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    columns = {**COLUMNS, "change_ts": "TIMESTAMP" if ts_type == "timestamp" else "VARCHAR"}
    oracle = CdcOracle(columns, key=("id",), order_by="change_ts", op_column="op_code")
    after_batch: list[list[tuple]] = []
    files_so_far: dict[str, tuple[int, int, int]] = {}
    for batch_no in range(1, 5):
        path = write_csv(
            tmp_path / f"batch_{batch_no}.csv", make_batch(rng, batch_no, key_space=200)
        )
        result = lakectl_cli(
            "load", "orders", path, "--warehouse", tmp_path / "wh", *CDC_ARGS, "--json"
        )
        assert result.code == 0, result.err
        expected_counts = oracle.apply_csv(str(path), "cdc")
        assert result.json["version"] == batch_no
        assert result.json["counts"] == expected_counts, f"batch {batch_no}"
        after_batch.append(oracle_rows(oracle))
        # Load never rewrites existing files.
        now = data_files(table)
        assert {k: now.get(k) for k in files_so_far} == files_so_far
        files_so_far = now

    snap = lakectl_cli("snapshot", "orders", "--warehouse", tmp_path / "wh", "--json")
    assert snap.code == 0, snap.err
    assert snap.json["columns"] == list(COLUMNS)
    assert snap.json["version"] == 4
    assert rows_of(snap) == after_batch[-1]
    assert len({r[0] for r in rows_of(snap)}) == len(after_batch[-1])  # one row per key

    # Time travel read with Spark once, the other versions with pyarrow (no Spark job each).
    for version, expected in enumerate(after_batch, start=1):
        engine = "spark" if version == 1 else "arrow"
        old = lakectl_cli("snapshot", table, "--version", version, "--engine", engine, "--json")
        assert old.code == 0, old.err
        assert rows_of(old) == expected, f"--version {version}"

    # A filter on an escaped partition value, and a column subset.
    filtered = lakectl_cli(
        "snapshot", table, "--where", "region = 'n/a'", "--columns", "region,id", "--json"
    )
    assert filtered.json["columns"] == ["region", "id"]
    assert sorted((r["region"], r["id"]) for r in filtered.json["rows"]) == sorted(
        (r[5], r[0]) for r in after_batch[-1] if r[5] == "n/a"
    )
    assert {p.name for p in table.iterdir() if p.is_dir() and p.name != "_lakectl"} == {
        "region=east",
        "region=west",
        "region=n%2Fa",
        "region=50%25 off",
        "region=__HIVE_DEFAULT_PARTITION__",
    }
    check_acid_layout(table)

    history = lakectl_cli("history", table, "--json").json["commits"]
    assert [e["version"] for e in history] == [None, 1, 2, 3, 4]
    assert [e["operation"] for e in history] == ["create", "cdc", "cdc", "cdc", "cdc"]


def test_time_travel_by_commit_time(tmp_path, lakectl_cli, spark):
    """--known-at T reads what was committed at T; --version 0 is the empty table."""
    rng = random.Random(5)
    table = tmp_path / "t"
    created = lakectl_cli(
        "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "region"
    )  # fmt: skip
    assert created.code == 0, created.err
    oracle = CdcOracle(COLUMNS, key=("id",), order_by="change_ts", op_column="op_code")
    states = []
    for batch_no in (1, 2):
        path = write_csv(
            tmp_path / f"b{batch_no}.csv", make_batch(rng, batch_no, key_space=60)[:60]
        )
        assert lakectl_cli("load", table, path, *CDC_ARGS, "--json").code == 0
        oracle.apply_csv(str(path), "cdc")
        states.append(oracle_rows(oracle))
    history = lakectl_cli("history", table, "--json").json["commits"]
    first_commit = next(e["committed_at"] for e in history if e["version"] == 1)
    known = lakectl_cli("snapshot", table, "--known-at", first_commit, "--json")
    assert known.code == 0, known.err
    assert rows_of(known) == states[0]
    empty = lakectl_cli("snapshot", table, "--version", "0", "--json")
    assert empty.code == 0 and empty.json["rows"] == []
    missing = lakectl_cli("snapshot", table, "--version", "9", "--json")
    assert missing.code == 67
    assert missing.json["error"]["type"] == "time_travel"
    assert "version 9 does not exist" in missing.json["error"]["message"]
    assert "1-2" in missing.json["error"]["hint"]


# --- upsert and append ------------------------------------------------------------------------

UPSERT_FILE_COLUMNS = ["id", "name", "score", "region"]
UPSERT_COLUMNS = {"id": "BIGINT", "name": "VARCHAR", "score": "DOUBLE", "region": "VARCHAR"}


def _upsert_rows(rng: random.Random, keys: range, n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": (k := rng.choice(keys)),
            "name": rng.choice(["ann", "bob", "cy", 'd "q"']),
            "score": round(rng.uniform(0, 100), 3),
            "region": "r" + str(k % 3),
        }
        for _ in range(n)
    ]


def _write(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _plain(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted((int(r["id"]), r["name"], float(r["score"]), r["region"]) for r in rows)


def test_upsert_first_load_creates_the_table_then_replaces_by_key(tmp_path, lakectl_cli, spark):
    rng = random.Random(3)
    table = tmp_path / "people"
    oracle = CdcOracle(UPSERT_COLUMNS, key=("id",))
    first = _write(tmp_path / "a.csv", UPSERT_FILE_COLUMNS, _upsert_rows(rng, range(1, 16), 25))
    second = _write(tmp_path / "b.csv", UPSERT_FILE_COLUMNS, _upsert_rows(rng, range(10, 26), 25))

    result = lakectl_cli(
        "load",
        table,
        first,
        "--create",
        "--primary-key",
        "id",
        "--partition-by",
        "region",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json["created_table"] is True
    assert result.json["mode"] == "upsert"
    assert result.json["counts"] == oracle.apply_csv(str(first), "upsert")

    result = lakectl_cli("load", table, second, "--json")  # the key comes from the table now
    assert result.code == 0, result.err
    assert result.json["mode"] == "upsert"
    counts = oracle.apply_csv(str(second), "upsert")
    assert result.json["counts"] == counts
    assert counts["updated"] > 0 and counts["superseded_in_batch"] > 0

    snap = lakectl_cli("snapshot", table, "--json")
    assert _plain(snap.json["rows"]) == _plain(oracle.rows())
    show = lakectl_cli("show", table, "--json").json
    assert show["primary_key"] == ["id"] and show["partition_by"] == ["region"]
    assert [c["name"] for c in show["schema"]] == ["id", "name", "score", "region"]
    assert show["totals"]["rows"] == len(oracle.rows())


def test_append_keeps_every_row(tmp_path, lakectl_cli, spark):
    rng = random.Random(4)
    table = tmp_path / "events"
    created = lakectl_cli(
        "create", table, "--schema", "id bigint, name string, score double, region string"
    )
    assert created.code == 0, created.err
    oracle = CdcOracle(UPSERT_COLUMNS)
    batch = _upsert_rows(rng, range(1, 6), 15)
    first = _write(tmp_path / "a.csv", UPSERT_FILE_COLUMNS, batch)
    second = _write(
        tmp_path / "b.csv", UPSERT_FILE_COLUMNS, batch[:5] + _upsert_rows(rng, range(1, 6), 5)
    )
    for path in (first, second):
        result = lakectl_cli("load", table, path, "--json")  # no key: append
        assert result.code == 0, result.err
        assert result.json["mode"] == "append"
        assert result.json["counts"] == oracle.apply_csv(str(path), "append")
    snap = lakectl_cli("snapshot", table, "--json")
    assert Counter(_plain(snap.json["rows"])) == Counter(_plain(oracle.rows()))
    assert len(snap.json["rows"]) == 15 + 10

    for mode in ("upsert", "cdc"):
        refused = lakectl_cli("load", table, first, "--mode", mode, "--json")
        assert refused.code == 2
        assert "needs a primary key" in refused.json["error"]["message"]
    assert len(lakectl_cli("history", table, "--json").json["commits"]) == 3


def test_strings_get_orcs_default_encoding_in_deltas_and_bases(tmp_path, lakectl_cli, spark):
    """As Hive writes them: a dictionary for a string column of few distinct values, direct
    encoding for one of unique values; in a load's delta and in a major compaction's base."""
    table = tmp_path / "events"
    rows = [{"id": i, "name": f"n{i % 3}", "score": 1.0, "region": f"r{i}"} for i in range(400)]
    source = _write(tmp_path / "a.csv", UPSERT_FILE_COLUMNS, rows)
    loaded = lakectl_cli("load", table, source, "--create", "--primary-key", "id", "--json")
    assert loaded.code == 0, loaded.err
    deltas = list(table.glob("delta_*/bucket_*"))
    assert deltas and all(dictionary_columns(f) == {"row.name"} for f in deltas)
    compacted = lakectl_cli("compact", table, "--major", "--json")
    assert compacted.code == 0, compacted.err
    bases = list(table.glob("base_*/bucket_*"))
    assert bases and all(dictionary_columns(f) == {"row.name"} for f in bases)


# --- other source formats ---------------------------------------------------------------------


def test_parquet_orc_json_and_avro_sources(tmp_path, lakectl_cli, spark, interop):
    import fastavro
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    rng = random.Random(9)
    rows = [
        {
            "id": i,
            "name": rng.choice(["ann", "bob", None]),
            "score": rng.uniform(0, 9),
            "region": f"r{i % 2}",
        }
        for i in range(1, 13)
    ]
    arrow = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                ("id", pa.int64()),
                ("name", pa.string()),
                ("score", pa.float64()),
                ("region", pa.string()),
            ]
        ),
    )
    pq.write_table(arrow, tmp_path / "batch.parquet")
    orc.write_table(arrow, tmp_path / "batch.orc")
    (tmp_path / "batch.json").write_text("".join(json.dumps(r) + "\n" for r in rows))

    table = tmp_path / "t"
    created = lakectl_cli(
        "create", table, "--schema", "id bigint, name string, score double, region string"
    )
    assert created.code == 0, created.err
    for name in ("batch.parquet", "batch.orc", "batch.json"):
        result = lakectl_cli("load", table, tmp_path / name, "--json")  # format from the extension
        assert result.code == 0, (name, result.err)
        assert result.json["counts"] == {"inserted": len(rows)}
    snap = lakectl_cli("snapshot", table, "--json").json["rows"]
    assert Counter(_plain(snap)) == Counter(_plain(rows) * 3)

    # A real Avro file (seed 000's doctors table); the first load creates the table.
    doctors = interop / "hive-scd" / "doctors.avro"
    with doctors.open("rb") as handle:
        expected = [dict(r) for r in fastavro.reader(handle)]
    result = lakectl_cli("load", tmp_path / "doctors", doctors, "--create", "--json")
    assert result.code == 0, result.err
    assert result.json["created_table"] is True and result.json["mode"] == "append"
    got = lakectl_cli("snapshot", tmp_path / "doctors", "--json").json
    assert sorted(got["rows"], key=lambda r: r["number"]) == sorted(
        expected, key=lambda r: r["number"]
    )
    assert len(got["rows"]) == 11


def test_snapshot_out_files(tmp_path, lakectl_cli, spark):
    import pyarrow.parquet as pq

    rng = random.Random(8)
    table = tmp_path / "t"
    source = _write(tmp_path / "a.csv", UPSERT_FILE_COLUMNS, _upsert_rows(rng, range(1, 30), 40))
    assert lakectl_cli("load", table, source, "--create", "--primary-key", "id").code == 0
    oracle = CdcOracle(UPSERT_COLUMNS, key=("id",))
    oracle.apply_csv(str(source), "upsert")
    out = tmp_path / "out.parquet"
    result = lakectl_cli("snapshot", table, "--out", out, "--format", "parquet", "--json")
    assert result.code == 0, result.err
    assert result.json["rows_written"] == len(oracle.rows())
    written = pq.read_table(out).to_pylist()
    assert _plain(written) == _plain(oracle.rows())
    again = lakectl_cli("snapshot", table, "--out", out, "--json")
    assert again.code == 65
    assert "already exists" in again.json["error"]["message"]


def test_updates_find_rows_in_partitions_with_any_character(tmp_path, lakectl_cli, spark):
    """Partition paths written by Spark and looked up by lakectl must agree on escaping for every
    character, or an update would add a second row instead of replacing the first."""
    ascii_ = "".join(chr(c) for c in range(0x21, 0x7F))
    # Every printable ASCII character, eight to a value, plus spaces, tabs, non-ASCII, escapes.
    values = [ascii_[i : i + 8] for i in range(0, len(ascii_), 8)]
    values += ["a b", "tab\there", "é中", "x%2Fy", "+1", "..", "/", "=", "%"]
    rows = [(i, v) for i, v in enumerate(values, start=1)]

    def batch(name: str, label: str) -> Path:
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "label", "part"])
            writer.writerows((i, f"{label}{i}", v) for i, v in rows)
        return path

    table = tmp_path / "t"
    created = lakectl_cli(
        "create", table, "--schema", "id bigint, label string, part string",
        "--primary-key", "id", "--partition-by", "part",
    )  # fmt: skip
    assert created.code == 0, created.err
    first = lakectl_cli("load", table, batch("a.csv", "old"), "--json")
    assert first.code == 0, first.err
    assert first.json["counts"]["inserted"] == len(rows)
    second = lakectl_cli("load", table, batch("b.csv", "new"), "--json")
    assert second.code == 0, second.err
    assert second.json["counts"]["updated"] == len(rows)
    assert second.json["counts"]["inserted"] == 0
    snap = lakectl_cli("snapshot", table, "--json").json["rows"]
    assert sorted((r["id"], r["label"], r["part"]) for r in snap) == [
        (i, f"new{i}", v) for i, v in rows
    ]
    assert all(p.parent == table for p in table.glob("part=*"))
    assert len(list(table.glob("part=*"))) == len(rows)


def test_avro_source_without_a_record_schema(tmp_path, lakectl_cli, spark):
    import fastavro

    source = tmp_path / "numbers.avro"
    with source.open("wb") as handle:
        fastavro.writer(handle, "long", [1, 2, 3])
    table = tmp_path / "t"
    result = lakectl_cli("load", table, source, "--create", "--json")
    assert result.code == 65, result.err
    assert "top level must be a record" in result.err
    assert not table.exists()  # nothing created for a source that cannot be read
