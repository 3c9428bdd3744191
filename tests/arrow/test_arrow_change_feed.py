"""The change feed and the SCD Type 2 view read with pyarrow (``Table.changes(...).to_arrow()``,
``.scd2().to_arrow()``, ``lakectl changes --engine arrow``) equal the Spark feed on a random CDC
history, for many ranges, row for row and in the order ``lakectl changes`` prints; the command
runs with no java on PATH."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakectl
from lakectl.errors import TimeTravelError, UsageError
from tests.support.change_batches import CDC_ARGS, SCHEMA, write_change_batch
from tests.support.cli import CliRun


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Path:
    """A table after six random CDC batches (updates move keys between partitions) and a
    delete: read-only for the tests."""
    from tests.support.cli import run_lakectl

    tmp = tmp_path_factory.mktemp("arrow_feed")
    root = tmp / "t"
    lakectl.create_table(
        str(root), schema=SCHEMA, primary_key="id", partition_by="region", spark=spark
    )
    rng = random.Random(23)
    for batch_no in range(1, 7):
        batch = tmp / f"b{batch_no}.csv"
        write_change_batch(batch, rng, batch_no, keys=25)
        done = run_lakectl("load", root, batch, *CDC_ARGS, "--engine", "arrow", "--json")
        assert done.code == 0, done.out
    done = run_lakectl("delete", root, "--where", "qty = 4", "--json")
    assert done.code == 0, done.out
    return root


def _plain(table: pa.Table) -> Counter[tuple[Any, ...]]:
    """Rows as a multiset, timestamps without their zone (Spark hands them over in its own)."""
    fields = [
        pa.field(f.name, pa.timestamp("us")) if pa.types.is_timestamp(f.type) else f
        for f in table.schema
    ]
    return Counter(tuple(r.values()) for r in table.cast(pa.schema(fields)).to_pylist())


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema.names == want.schema.names
    assert [f.type for f in got.schema if not pa.types.is_timestamp(f.type)] == [
        f.type for f in want.schema if not pa.types.is_timestamp(f.type)
    ]
    assert _plain(got) == _plain(want)


def test_feed_equals_the_spark_feed_for_every_range(history: Path, spark: Any) -> None:
    table = lakectl.open_table(str(history), spark=spark)
    newest = table.version
    pairs = [(0, newest), (newest - 1, newest), (2, 5), (1, 2), (3, 3)]
    pairs += [(a, a + 1) for a in range(3, newest - 1)]
    kinds: set[str] = set()
    for a, b in pairs:
        got = table.changes(from_version=a, to_version=b).to_arrow()
        _same(got, table.changes(from_version=a, to_version=b).to_spark().toArrow())
        kinds |= set(got.column("_change_type").to_pylist())
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
    _same(table.changes().scd2().to_arrow(), table.changes().scd2().to_spark().toArrow())
    _same(
        table.changes(to_version=3).scd2().to_arrow(),
        table.changes(to_version=3).scd2().to_spark().toArrow(),
    )


def test_rows_come_in_the_order_the_command_prints(
    history: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    for extra in (["--from-version", "1"], ["--scd2"]):
        spark_rows = lakectl_cli("changes", history, *extra, "--json")
        arrow_rows = lakectl_cli("changes", history, *extra, "--engine", "arrow", "--json")
        assert spark_rows.code == 0 and arrow_rows.code == 0, arrow_rows.out
        assert arrow_rows.json == spark_rows.json
        assert arrow_rows.json["rows"]


def test_mistakes_are_the_spark_engines(history: Path, spark: Any) -> None:
    table = lakectl.open_table(str(history), spark=spark)
    with pytest.raises(TimeTravelError, match="version 99 does not exist"):
        table.changes(from_version=99).to_arrow()
    with pytest.raises(UsageError, match="end of the range is before its start"):
        table.changes(from_version=3, to_version=2).to_arrow()
    with pytest.raises(UsageError, match="arrow engine"):
        table.changes(from_version=1, engine="arrow").write("/tmp/never", format="json")


def test_command_runs_without_java(history: Path, tmp_path: Path, spark: Any) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env.update(PATH=str(bin_dir), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    args = ["changes", str(history), "--from-version", "2", "--engine", "arrow"]
    out = tmp_path / "feed"
    done = subprocess.run(
        [sys.executable, "-m", "lakectl", *args, "--out", str(out), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    want = lakectl.open_table(str(history), spark=spark).changes(from_version=2).to_arrow()
    assert json.loads(done.stdout)["rows_written"] == want.num_rows
    import pyarrow.parquet as pq

    _same(pq.read_table(out), want)


def test_scd2_with_a_current_valid_to_sentinel(history: Path, spark: Any) -> None:
    import datetime as dt

    table = lakectl.open_table(str(history), spark=spark)
    got = table.changes().scd2(current_valid_to="9999-12-31").to_arrow()
    _same(got, table.changes().scd2(current_valid_to="9999-12-31").to_spark().toArrow())
    plain = table.changes().scd2().to_arrow()
    assert got.column("is_current").to_pylist() == plain.column("is_current").to_pylist()
    end = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)
    for row, before in zip(got.to_pylist(), plain.to_pylist(), strict=True):
        assert row["valid_to"] == (end if row["is_current"] else before["valid_to"])
    with pytest.raises(
        UsageError, match=r"scd2\(\) covers the whole history: give no from_version="
    ):
        table.changes(from_version=1, engine="arrow").scd2(current_valid_to="9999-12-31").collect()
