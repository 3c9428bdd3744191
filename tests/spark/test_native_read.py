"""lakectl's Spark data source (jvm/, lakectl.spark.native_read): deletes applied inside each
task. Checked against a plain Python oracle of the same changes and against the live-row kernel
in Spark tasks (the path of reads the data source cannot serve), which is tested against DuckDB;
the plans show which path ran."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakectl.config import Config
from lakectl.ops.context import Context
from lakectl.ops.snapshot import SnapshotRequest, snapshot_frame
from lakectl.planning.read_plan import plan_partition
from lakectl.scan.target import ReadTarget, open_for_read
from lakectl.spark.native_read import ENABLED_CONF, jar_path
from lakectl.table.listing import list_table
from lakectl.table.validity import ValidWriteIds

SCHEMA = (
    "id bigint, flag boolean, tiny tinyint, small smallint, qty int, price double, ratio float, "
    "amount decimal(10,2), big decimal(30,5), note string, blob binary, day date, "
    "region string, yr int, d date"
)
PARTITIONS = "region,yr,d"
NOTES = ["plain", "ünïcode", "", None, "x=y/z", "50% off"]
REGIONS = ["east", "n/a", "50% off", None]
SCAN = "lakectl ACID merge-on-read"
KERNEL_SCAN = "MapInArrow"


def test_the_jar_is_built():
    """make builds the data source; without it every read here would take the kernel path."""
    assert jar_path() is not None


def _value_row(rng: random.Random, key: int) -> dict:
    return {
        "id": key,
        "flag": rng.choice([True, False, None]),
        "tiny": rng.choice([None, rng.randint(-128, 127)]),
        "small": rng.randint(-32768, 32767),
        "qty": rng.choice([None, rng.randint(-(2**31), 2**31 - 1)]),
        "price": rng.choice([None, rng.uniform(-1e6, 1e6)]),
        "ratio": rng.choice([None, 0.5, -2.25]),
        "amount": rng.choice([None, Decimal(f"{rng.uniform(-1000, 1000):.2f}")]),
        "big": Decimal(f"{rng.randint(-(10**20), 10**20)}.{rng.randint(0, 99999):05d}"),
        "note": rng.choice(NOTES),
        "blob": rng.choice([None, b"", bytes(rng.randrange(256) for _ in range(5))]),
        "day": rng.choice([None, dt.date(1400, 3, 1), dt.date(2024, 2, 29)]),
        "region": rng.choice(REGIONS),
        "yr": rng.choice([2023, 2024, -7, None]),
        "d": rng.choice([dt.date(2024, 1, 1), dt.date(1999, 12, 31), None]),
    }


ARROW = pa.schema(
    [
        ("op_code", pa.string()),
        ("id", pa.int64()),
        ("flag", pa.bool_()),
        ("tiny", pa.int8()),
        ("small", pa.int16()),
        ("qty", pa.int32()),
        ("price", pa.float64()),
        ("ratio", pa.float32()),
        ("amount", pa.decimal128(10, 2)),
        ("big", pa.decimal128(30, 5)),
        ("note", pa.string()),
        ("blob", pa.binary()),
        ("day", pa.date32()),
        ("region", pa.string()),
        ("yr", pa.int32()),
        ("d", pa.date32()),
    ]
)


def _batch(rng: random.Random, live: dict[int, dict], path: Path) -> Path:
    """A CDC batch of distinct keys (inserts, updates, deletes), applied to the oracle ``live``.
    A key stays in its partition: partition values are part of a row's identity (README)."""
    rows = []
    for key in rng.sample(range(1, 400), 120):
        if key in live and rng.random() < 0.35:
            rows.append({"op_code": "D", **live.pop(key)})
            continue
        row = _value_row(rng, key)
        if key in live:
            row.update({c: live[key][c] for c in PARTITIONS.split(",")})
        live[key] = row
        rows.append({"op_code": "U" if rng.random() < 0.5 else "I", **row})
    pq.write_table(pa.Table.from_pylist(rows, ARROW), path)
    return path


def _expected(live: dict[int, dict]) -> Counter:
    names = [f.name for f in ARROW if f.name != "op_code"]
    return Counter(tuple(row[n] for n in names) for row in live.values())


def _read(spark, target: ReadTarget, native: bool, with_identity: bool = False):
    """The snapshot's rows (a Counter) and whether the data source read them (else the kernel
    in Spark tasks)."""
    ctx = Context(config=Config())
    spark.conf.set(ENABLED_CONF, "true" if native else "false")
    try:
        frame = snapshot_frame(ctx, target, SnapshotRequest(), with_identity=with_identity)
        plan = frame._jdf.queryExecution().executedPlan().toString()
        rows = Counter(tuple(r) for r in frame.collect())
    finally:
        spark.conf.unset(ENABLED_CONF)
    assert native or KERNEL_SCAN in plan or "LocalTableScan <empty>" in plan, plan
    return rows, SCAN in plan


def _target(table: Path, version: int | None = None) -> ReadTarget:
    return open_for_read(Context(config=Config()).table(str(table)), version=version)


@pytest.fixture(scope="module")
def history(tmp_path_factory, spark, lakectl_cli):
    """A table of every type the data source decodes, partitioned by a string, an int and a
    date (with NULLs), after 4 CDC batches; the oracle's rows after each."""
    run_lakectl = lakectl_cli
    tmp = tmp_path_factory.mktemp("native")
    table = tmp / "t"
    created = run_lakectl(
        "create", table, "--schema", SCHEMA, "--primary-key", "id", "--partition-by", PARTITIONS
    )  # fmt: skip
    assert created.code == 0, created.err
    rng = random.Random(7)
    live: dict[int, dict] = {}
    states = []
    for n in range(1, 5):
        source = _batch(rng, live, tmp / f"b{n}.parquet")
        loaded = run_lakectl("load", table, source, "--mode", "cdc", "--op-column", "op_code")
        assert loaded.code == 0, loaded.err
        states.append(_expected(live))
    return table, states


def test_every_version_equals_the_oracle_and_the_kernel_path(spark, history):
    table, states = history
    for version, expected in enumerate(states, start=1):
        native, used = _read(spark, _target(table, version), native=True)
        assert used, f"version {version}: the data source did not serve the read"
        by_kernel, used_source = _read(spark, _target(table, version), native=False)
        assert not used_source
        assert by_kernel == native, f"version {version}"
        assert native == expected, f"version {version}"


def test_identity_columns_equal_the_kernel_paths(spark, history):
    table, _ = history
    native, used = _read(spark, _target(table), native=True, with_identity=True)
    by_kernel, _ = _read(spark, _target(table), native=False, with_identity=True)
    assert used and native == by_kernel
    # One live row per identity within a partition (Hive's rule: identities are numbered per
    # partition directory, so two partitions may hold the same one): partition values + identity.
    data_columns = len(_target(table).metadata.data_schema.columns)
    identities = [row[data_columns:] for row in native]
    assert len(set(identities)) == len(identities)


def test_columns_and_counts_are_pruned_correctly(spark, history):
    table, states = history
    ctx = Context(config=Config())
    frame = snapshot_frame(ctx, _target(table), SnapshotRequest())
    assert frame.count() == sum(states[-1].values())
    picked = Counter(tuple(r) for r in frame.select("d", "note", "id").collect())
    assert picked == Counter((row[14], row[9], row[0]) for row in states[-1].elements())
    # A filter on a partition column and one on a data column, as a user's --where.
    east = frame.where("region = 'n/a' and yr = -7 and qty is not null").select("id").collect()
    assert sorted(r[0] for r in east) == sorted(
        row[0]
        for row in states[-1].elements()
        if row[12] == "n/a" and row[13] == -7 and row[4] is not None
    )


def test_events_of_write_ids_outside_the_snapshot_are_skipped_inside_a_compacted_delta(
    spark, history, tmp_path, lakectl_cli
):
    """A minor compaction's delta_1_4 holds every writer's events; a reader whose valid list
    excludes write id 2 must drop its inserts and its deletes, event by event."""
    import shutil

    run_lakectl = lakectl_cli
    source, _ = history
    table = tmp_path / "t"
    shutil.copytree(source, table)
    compacted = run_lakectl("compact", table, "--minor", "--json")
    assert compacted.code == 0, compacted.err
    target = _target(table)
    assert any(
        d.acid.min_write_id == 1 and d.acid.max_write_id == 4
        for p in target.plans
        for d in p.deltas
    )
    valid = ValidWriteIds(4, frozenset({2}))
    listings = list_table(target.store.storage, target.store.root, PARTITIONS.split(","))
    plans = tuple(plan_partition(listing, valid) for listing in listings)
    skipping = dataclasses.replace(target, valid=valid, plans=plans)
    native, used = _read(spark, skipping, native=True)
    by_kernel, _ = _read(spark, skipping, native=False)
    assert used
    assert native == by_kernel
    full, _ = _read(spark, target, native=True)
    assert native != full  # write id 2 changed rows that the full snapshot shows


def test_types_it_does_not_decode_take_the_kernel_path(spark, tmp_path, lakectl_cli):
    run_lakectl = lakectl_cli
    table = tmp_path / "ts"
    assert run_lakectl("create", table, "--schema", "id bigint, at timestamp").code == 0
    source = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": [1, 2], "at": [dt.datetime(2024, 1, 1), None]}), source)
    assert run_lakectl("load", table, source, "--mode", "append").code == 0
    rows, used = _read(spark, _target(table), native=True)
    assert not used
    assert rows == Counter({(1, dt.datetime(2024, 1, 1)): 1, (2, None): 1})


def test_partition_values_are_typed_only_in_the_plain_form_sparks_cast_reads():
    from lakectl.spark.native_read import _typed_values
    from lakectl.table.schema import parse_schema

    schema = parse_schema("yr int, d date, ok boolean, s string")
    assert _typed_values(["-7", "1999-12-31", "TRUE", "x"], schema) == [-7, 10956, True, "x"]
    assert _typed_values([None, None, None, None], schema) == [None, None, None, None]
    # Spark's cast reads ASCII digits only; out-of-range, odd forms: the kernel reads them.
    for odd in (["٥", "2024-01-01", "true", ""], ["５", "2024-01-01", "true", ""]):
        assert _typed_values(odd, schema) is None
    assert _typed_values(["2147483648", "2024-01-01", "true", ""], schema) is None
    assert _typed_values(["1", "2024-1-01", "true", ""], schema) is None
    assert _typed_values(["1", "2024-01-01", "yes", ""], schema) is None


def test_a_foreign_insert_event_with_a_null_key_is_not_live_on_either_path(
    spark, tmp_path, lakectl_cli
):
    """lakectl's loads refuse NULL keys; a file another writer put in a delta may hold one. The
    kernel's rule drops such rows; the data source must too."""
    import pyarrow.orc as orc

    table = tmp_path / "k"
    created = lakectl_cli("create", table, "--schema", "id bigint, v string", "--primary-key", "id")
    assert created.code == 0, created.err
    source = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}), source)
    loaded = lakectl_cli("load", table, source, "--mode", "append", "--engine", "arrow")
    assert loaded.code == 0, loaded.err
    delta = next(p for p in table.iterdir() if p.name.startswith("delta_"))
    row = pa.StructArray.from_arrays(
        [pa.array([None, 3], pa.int64()), pa.array(["ghost", "c"])], names=["id", "v"]
    )
    events = pa.table(
        {
            "operation": pa.array([0, 0], pa.int32()),
            "originalTransaction": pa.array([1, 1], pa.int64()),
            "bucket": pa.array([537_001_984, 537_001_984], pa.int32()),  # bucket 3
            "rowId": pa.array([0, 1], pa.int64()),
            "currentTransaction": pa.array([1, 1], pa.int64()),
            "row": row,
        }
    )
    orc.write_table(events, delta / "bucket_00003_foreign")
    native, used = _read(spark, _target(table), native=True)
    by_kernel, _ = _read(spark, _target(table), native=False)
    assert used
    assert native == by_kernel == Counter({(1, "a"): 1, (2, "b"): 1, (3, "c"): 1})


def test_deletes_in_runs_gaps_and_at_the_ends_of_large_files(spark, tmp_path, lakectl_cli):
    """The delete probe walks each file's sorted row ids forward (steps of 1, 2, 4, ... then a
    binary search). Deletes of 20,000 rows in one partition: runs of neighbours, single rows
    far apart, the first and the last rows, then deletes of rows the first batch skipped."""
    table = tmp_path / "t"
    created = lakectl_cli("create", table, "--schema", "id bigint, v string", "--primary-key", "id")
    assert created.code == 0, created.err
    keys = range(20_000)
    first = pa.table({"op_code": ["I"] * len(keys), "id": list(keys), "v": [f"v{k}" for k in keys]})
    pq.write_table(first, tmp_path / "b0.parquet")
    rng = random.Random(11)
    runs = {k for start in rng.sample(range(0, 19_900, 50), 40) for k in range(start, start + 37)}
    sparse = set(rng.sample(range(20_000), 300))
    edges = {0, 1, 19_998, 19_999}
    batches = [sorted(runs | sparse | edges), sorted(set(rng.sample(range(20_000), 2_000)))]
    live = set(keys)
    for n, batch in enumerate(batches, start=1):
        gone = [k for k in batch if k in live]
        pq.write_table(
            pa.table({"op_code": ["D"] * len(gone), "id": gone, "v": [None] * len(gone)}),
            tmp_path / f"b{n}.parquet",
        )
        live -= set(gone)
    for n in range(len(batches) + 1):
        loaded = lakectl_cli(
            "load", table, tmp_path / f"b{n}.parquet", "--mode", "cdc", "--op-column", "op_code"
        )
        assert loaded.code == 0, loaded.err
    native, used = _read(spark, _target(table), native=True)
    assert used
    assert native == Counter((k, f"v{k}") for k in live)
    by_kernel, _ = _read(spark, _target(table), native=False)
    assert by_kernel == native


def test_the_probe_seeks_forward_over_runs_of_equal_and_smaller_row_ids(spark):
    """``DeleteSet.seekForward`` (called through reflection) against Python's bisect, on sorted
    arrays with duplicates (Hive's writers can repeat a delete event) and long runs to pass."""
    import bisect

    gateway = spark.sparkContext._gateway
    jvm = gateway.jvm
    long_array = jvm.java.lang.Class.forName("[J")
    cls = jvm.java.lang.Class.forName("io.lakectl.spark.DeleteSet")
    params = gateway.new_array(jvm.java.lang.Class, 3)
    params[0], params[1], params[2] = (
        long_array,
        jvm.java.lang.Integer.TYPE,
        jvm.java.lang.Long.TYPE,
    )
    seek = cls.getDeclaredMethod("seekForward", params)
    seek.setAccessible(True)
    rng = random.Random(5)
    for case in range(300):
        values = sorted(
            rng.choice([rng.randrange(40), rng.randrange(10_000)])
            for _ in range(rng.randrange(1, 200))
        )
        start = rng.randrange(len(values))
        target = values[start] + rng.choice([1, 2, rng.randrange(1, 10_001)])
        java_values = gateway.new_array(jvm.long, len(values))
        for i, v in enumerate(values):
            java_values[i] = v
        args = gateway.new_array(jvm.java.lang.Object, 3)
        args[0], args[1], args[2] = (
            java_values,
            jvm.java.lang.Integer(start),
            jvm.java.lang.Long(target),
        )
        got = seek.invoke(None, args)
        assert got == bisect.bisect_left(values, target, start + 1), (case, values, start, target)
