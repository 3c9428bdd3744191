"""Files with stripes larger than a batch: ``to_batches`` streams them in bounded batches (and
bounded memory), and every way of reading them gives the rows computed here from the events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pytest

import lakectl
from lakectl.arrow.partition_reader import CHUNK_ROWS

ROWS = 3 * CHUNK_ROWS + 123
BUCKET = 536870912
DELETED = np.arange(7, ROWS, 1000, dtype=np.int64)  # rowIds (= ids) deleted by write 2


def _events(n: int, op: int, txn: int, row_ids: np.ndarray, row: pa.Array) -> pa.Table:
    return pa.table(
        {
            "operation": pa.array(np.full(n, op, np.int32)),
            "originalTransaction": pa.array(np.ones(n, np.int64)),
            "bucket": pa.array(np.full(n, BUCKET, np.int32)),
            "rowId": pa.array(row_ids),
            "currentTransaction": pa.array(np.full(n, txn, np.int64)),
            "row": row,
        }
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    """A Hive-layout table: a base of one large stripe, a delete delta of every 1000th row."""
    root = tmp_path_factory.mktemp("large") / "t"
    ids = np.arange(ROWS, dtype=np.int64)
    row = pa.StructArray.from_arrays(
        [pa.array(ids), pa.array([f"s{i % 50:02d}" for i in range(ROWS)])], names=["id", "store"]
    )
    (root / "base_0000001").mkdir(parents=True)
    base = _events(ROWS, 0, 1, ids, row)
    orc.write_table(base, str(root / "base_0000001" / "bucket_00000"), stripe_size=1 << 30)
    (root / "delete_delta_0000002_0000002_0000").mkdir()
    deletes = _events(len(DELETED), 2, 2, DELETED, pa.nulls(len(DELETED), row.type))
    orc.write_table(deletes, str(root / "delete_delta_0000002_0000002_0000" / "bucket_00000"))
    assert orc.ORCFile(str(root / "base_0000001" / "bucket_00000")).nstripes == 1
    return root


def _expected_ids() -> set[int]:
    return set(range(ROWS)) - set(DELETED.tolist())


def test_batches_are_bounded_and_hold_the_live_rows(table):
    sizes, ids = [], set()
    for batch in lakectl.open_table(str(table)).scan().to_batches():
        sizes.append(batch.num_rows)
        ids.update(batch.column("id").to_pylist())
    assert max(sizes) <= CHUNK_ROWS and len(sizes) > 1
    assert ids == _expected_ids() and sum(sizes) == len(ids)


@pytest.mark.parametrize("columns", [None, ["store", "id"]])
def test_table_and_stream_agree(table, columns):
    t = lakectl.open_table(str(table))
    whole = t.scan(columns=columns, where="id >= 100").to_arrow()
    streamed = t.scan(columns=columns, where="id >= 100").to_batches().read_all()
    want = {i for i in _expected_ids() if i >= 100}
    assert set(whole.column("id").to_pylist()) == want and whole.num_rows == len(want)
    assert sorted(streamed.column("id").to_pylist()) == sorted(whole.column("id").to_pylist())
    stores = pc.value_counts(whole.column("store")).to_pylist()
    assert sum(s["counts"] for s in stores) == len(want)


def test_to_arrow_keeps_the_stream_order_and_the_limit(table):
    t = lakectl.open_table(str(table))
    whole = t.scan().to_arrow()
    assert whole.equals(t.scan().to_batches().read_all())
    assert whole.num_rows == len(_expected_ids())
    assert t.scan(limit=5).to_arrow().column("id").to_pylist() == [0, 1, 2, 3, 4]
