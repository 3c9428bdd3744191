"""The live-row kernel against the Java data source and DuckDB's oracle, on a random history.

Every version of a random CDC history (deletes, a minor and a major compaction, a restore, an
alter that adds, widens and renames) is read three ways: by the Java data source (Spark's fast
path), by Spark running the kernel in its tasks (the path taken where the data source cannot
serve a read), and by the Arrow engine (the kernel on the driver). All three must give the rows
DuckDB computed from the same batches.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import lakectl
from lakectl.spark.native_read import ENABLED_CONF as NATIVE
from tests.support.cdc_oracle import CdcOracle

SCHEMA = "id bigint, seq int, amount decimal(10,2), note string, region string"
COLUMNS = {
    "id": "BIGINT",
    "seq": "INTEGER",
    "amount": "DECIMAL(10,2)",
    "note": "VARCHAR",
    "region": "VARCHAR",
}
REGIONS = ["east", "n/a", "50% off", None]


def _batch(rng: random.Random, number: int, path: Path, columns: list[str]) -> str:
    """A CDC batch of keys 1..60 (a key keeps its region), late and tied ``seq`` values."""
    rows = []
    for _ in range(rng.randint(20, 50)):
        key = rng.randint(1, 60)
        row = {
            "op_code": rng.choices("IUD", weights=[4, 4, 2])[0],
            "id": key,
            "seq": number * 10 + rng.randint(-12, 12),
            "amount": rng.choice(["", f"{rng.uniform(-1000, 1000):.2f}"]),
            "note": rng.choice(["a", "b,c", ""]),
            "remark": rng.choice(["a", "b,c", ""]),
            "extra": rng.choice(["", rng.randint(0, 9)]),
            "region": REGIONS[key % len(REGIONS)] or "",
        }
        rows.append([row[c] for c in ["op_code", *columns]])
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["op_code", *columns])
        writer.writerows(rows)
    return str(path)


def _rows(table: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_plain(v) for v in r.values()) for r in table.to_pylist())


def _plain(value: Any) -> Any:
    return Decimal(str(value)) if isinstance(value, Decimal) else value


def _oracle_rows(oracle: CdcOracle) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_plain(r[c]) for c in oracle.columns) for r in oracle.rows())


def _plan(frame: Any) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def _three_ways(spark: Any, table: Any, version: int) -> list[Counter[tuple[Any, ...]]]:
    """The rows at ``version`` by the data source, by the kernel in Spark tasks, by Arrow."""
    got = []
    for native, shows in (("true", "lakectl ACID merge-on-read"), ("false", "MapInArrow")):
        spark.conf.set(NATIVE, native)
        try:
            frame = table.scan(version=version).to_spark()
        finally:
            spark.conf.unset(NATIVE)
        assert shows in _plan(frame), f"version {version}: not read by {shows}"
        got.append(_rows(frame.toArrow()))
    got.append(_rows(table.scan(version=version).to_arrow()))
    return got


def test_every_version_reads_alike_by_data_source_kernel_and_arrow(tmp_path, spark):
    rng = random.Random(32)
    root = tmp_path / "sales"
    table = lakectl.create_table(
        str(root), schema=SCHEMA, primary_key="id", partition_by="region", spark=spark
    )
    oracle = CdcOracle(dict(COLUMNS), key=("id",), order_by="seq", op_column="op_code")
    expected: dict[int, Counter[tuple[Any, ...]]] = {}
    columns = list(COLUMNS)

    def load(number: int) -> None:
        path = _batch(rng, number, tmp_path / f"b{number}.csv", columns)
        version = table.load(path, mode="cdc", op_column="op_code", order_by="seq").version
        oracle.apply_csv(path, "cdc")
        expected[version] = _oracle_rows(oracle)

    load(1)
    load(2)
    restore_to = max(expected)
    version = table.delete("seq % 3 = 0").version
    assert version is not None
    oracle.db.execute("DELETE FROM state WHERE seq % 3 = 0")
    expected[version] = _oracle_rows(oracle)
    load(3)
    table.compact("minor")
    load(4)
    table.compact("major")
    version = table.restore(restore_to).version
    assert version is not None
    oracle.db.execute("DELETE FROM state")
    for row in expected[restore_to].elements():
        oracle.db.execute("INSERT INTO state VALUES (?, ?, ?, ?, ?)", list(row))
    expected[version] = _oracle_rows(oracle)
    table.alter("extra int default 7", widen="seq bigint", rename={"note": "remark"})
    oracle.db.execute(
        "CREATE TABLE evolved AS SELECT id, CAST(seq AS BIGINT) AS seq, amount, note AS remark, "
        "7::INTEGER AS extra, region FROM state"
    )
    oracle.db.execute("DROP TABLE state")
    oracle.db.execute("ALTER TABLE evolved RENAME TO state")
    oracle.columns = {
        "id": "BIGINT",
        "seq": "BIGINT",
        "amount": "DECIMAL(10,2)",
        "remark": "VARCHAR",
        "extra": "INTEGER",
        "region": "VARCHAR",
    }
    columns = list(oracle.columns)
    load(5)
    for version, want in sorted(expected.items()):
        by_source, by_kernel, by_arrow = _three_ways(spark, table, version)
        assert by_source == want, f"version {version}: the data source"
        assert by_kernel == want, f"version {version}: the kernel in Spark tasks"
        assert by_arrow == want, f"version {version}: the Arrow engine"


OLD_DAYS = [
    dt.date(1, 1, 1),
    dt.date(1000, 2, 28),
    dt.date(1400, 3, 1),
    dt.date(1582, 10, 4),
    dt.date(1582, 10, 15),
    dt.date(2024, 2, 29),
    None,
]


def test_dates_before_1582_read_alike_by_data_source_kernel_and_arrow(tmp_path, spark):
    """ORC files count days before 1582-10-15 in the hybrid Julian calendar (Spark's writer
    stores them so; Spark's reader and the Java data source rebase them). The kernel moves
    them to Arrow's calendar as it reads, so every reader sees the dates loaded (it read
    1400-03-01 as 1400-03-10)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = lakectl.create_table(
        str(tmp_path / "old"),
        schema="id bigint, day date, tag date",
        primary_key="id",
        partition_by="tag",
        spark=spark,
    )
    ids = list(range(len(OLD_DAYS)))
    tags = [dt.date(1400, 3, 1) if i % 2 else None for i in ids]
    source = tmp_path / "old.parquet"
    columns = {"id": (ids, pa.int64()), "day": (OLD_DAYS, pa.date32()), "tag": (tags, pa.date32())}
    pq.write_table(pa.table({k: pa.array(v, t) for k, (v, t) in columns.items()}), source)
    table.load(str(source))
    expected = Counter(zip(ids, OLD_DAYS, tags, strict=True))
    by_source, by_kernel, by_arrow = _three_ways(spark, table, 1)
    assert by_source == expected
    assert by_kernel == expected
    assert by_arrow == expected
