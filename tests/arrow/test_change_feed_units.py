"""The change feed computed unit by unit, as Spark's tasks compute it, equals the whole feed.

On a bucketed table with a random history (CDC loads moving keys between partitions, a delete, a
restore, a major compaction, an added column, written by the Arrow engine), each partition read
as groups of its buckets (the same buckets of the older snapshot, all of its delete deltas)
gives, once updates are paired, the rows of the Arrow engine's feed. No JVM.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

import lakectl
from lakectl.arrow.changes import FeedRule, change_rows, feed_units, pair_updates
from lakectl.arrow.partition_reader import concat_as
from lakectl.scan.changes import ChangesRequest, plan_change_scan
from lakectl.spark.change_feed import spread_units
from tests.support.change_batches import SCHEMA, write_change_batch


def _history(tmp_path: Path, seed: int) -> lakectl.Table:
    rng = random.Random(seed)
    table = lakectl.create_table(
        str(tmp_path / "t"), schema=SCHEMA, primary_key="id", partition_by="region", buckets=4
    )

    def load(n: int) -> None:
        batch = tmp_path / f"b{n}.csv"
        write_change_batch(batch, rng, n, keys=40)
        table.load(str(batch), op_column="op_code", order_by="change_ts", engine="arrow")

    for n in range(1, 4):
        load(n)
    table.delete(f"qty < {rng.randint(2, 5)}", engine="arrow")
    table.restore(rng.choice([1, 2]), engine="arrow")
    load(4)
    table.compact("major", engine="arrow")
    table.alter("bonus int default 7")
    load(5)
    return table


def _plain(rows: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r.values()) for r in rows.to_pylist())


def test_the_feed_by_bucket_groups_equals_the_whole_feed(tmp_path: Path) -> None:
    table = _history(tmp_path, seed=5)
    store = table.context.table(table.location)
    newest = table.version
    kinds: set[str] = set()
    for start, end in [(0, newest), (1, newest), (2, 4), (newest - 1, newest)]:
        source = plan_change_scan(store, ChangesRequest(from_version=start, to_version=end))
        whole = feed_units(source)
        units = spread_units(whole, slots=8)
        assert len(units) > len(whole), (start, end)
        rule = FeedRule.of(source)
        rows = concat_as([rule.unit_changes(u) for u in units], rule.output_schema())
        got = pair_updates(rows, source.metadata.primary_key)
        want = change_rows(source)
        assert got.schema == want.schema
        assert _plain(got) == _plain(want), (start, end)
        kinds |= set(want.column("_change_type").to_pylist())
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
