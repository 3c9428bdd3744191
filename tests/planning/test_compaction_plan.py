"""The compaction planner (Hive's Initiator) as a pure function: decisions and their reasons."""

from __future__ import annotations

import pytest

from lakectl.errors import UsageError
from lakectl.planning.compaction_plan import Thresholds, aborted_write_ids, plan_compaction
from lakectl.planning.read_plan import plan_partition
from lakectl.table.layout import delta_dir_name, parse_acid_dir
from lakectl.table.listing import DirListing, FileEntry, PartitionListing
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Column, Schema
from lakectl.table.validity import ValidWriteIds

ALL = ValidWriteIds(10**9)
HIVE = Thresholds()


def _dir(name: str, size: int, part: str = "p=a") -> DirListing:
    acid = parse_acid_dir(name)
    assert acid is not None, name
    path = f"/t/{part}/{name}"
    return DirListing(
        acid,
        path,
        f"{part}/{name}",
        (FileEntry(f"{path}/bucket_00000", "bucket_00000", size),),
        True,
    )


def _plan(dirs: list[DirListing], part: str = "p=a"):
    return plan_partition(PartitionListing(relative=part, values=(part[2:],), dirs=dirs), ALL)


def _deltas(first: int, last: int, size: int = 10, deletes: bool = False) -> list[DirListing]:
    out = [_dir(delta_dir_name(w), size) for w in range(first, last + 1)]
    if deletes:
        out += [_dir(delta_dir_name(w, delete=True), size) for w in range(first, last + 1)]
    return out


def _one(dirs, kind="auto", thresholds=HIVE, **kw):
    [decision] = plan_compaction([_plan(dirs)], kind, thresholds, **kw)
    return decision


def test_auto_below_thresholds_is_left_alone_with_reason():
    d = _one([_dir("base_0000005", 10_000), *_deltas(6, 8, size=10)])
    assert d.kind is None
    assert d.reason == (
        "below thresholds: 3 deltas (<= 10), deltas are 0.3% of the base's bytes (<= 0.1)"
    )
    assert d.outputs == ()


def test_auto_minor_when_more_than_ten_deltas():
    d = _one([_dir("base_0000005", 100_000), *_deltas(6, 16, size=10)])
    assert d.kind == "minor"
    assert d.reason == "11 deltas (> compactor.delta.num.threshold=10)"
    assert d.outputs == ("delta_0000006_0000016",)
    assert [x.acid.name for x in d.inputs] == [delta_dir_name(w) for w in range(6, 17)]


def test_auto_exactly_ten_deltas_is_not_enough():
    d = _one([_dir("base_0000005", 100_000), *_deltas(6, 15, size=10)])
    assert d.kind is None and d.reason.startswith("below thresholds: 10 deltas (<= 10)")


def test_auto_major_when_deltas_exceed_pct_of_base_bytes():
    d = _one([_dir("base_0000005", 1000), *_deltas(6, 7, size=60)], visibility_txn=9)
    assert d.kind == "major"
    assert d.reason == "deltas hold 12% of the base's bytes (> compactor.delta.pct.threshold=0.1)"
    assert d.outputs == ("base_0000007_v0000009",)
    assert d.base is not None and d.base in d.inputs


def test_auto_major_by_rows_when_bytes_are_small():
    dirs = [_dir("base_0000005", 1000), _dir(delta_dir_name(6), 50)]
    rows = {"p=a/base_0000005": 100, "p=a/delta_0000006_0000006_0000": 20}
    d = _one(dirs, rows=rows)
    assert d.kind == "major"
    assert "20% of the base's rows" in d.reason


def test_auto_without_base_needs_enough_deltas_then_major():
    few = _one(_deltas(1, 4, deletes=True))
    assert few.kind is None and few.reason == "below thresholds: 8 deltas (<= 10)"
    many = _one(_deltas(1, 6, deletes=True))
    assert many.kind == "major"
    assert many.reason == "12 deltas (> compactor.delta.num.threshold=10) and no base"
    assert many.outputs == ("base_0000006",)


def test_thresholds_come_from_properties_and_options_override_them():
    schema = Schema((Column("id", "bigint"), Column("p", "string")))
    meta = TableMetadata(schema, ("id",), ("p",), properties={"compactor.delta.num.threshold": "2"})
    assert Thresholds.from_metadata(meta) == Thresholds(2, 0.1)
    assert Thresholds.from_metadata(meta, delta_pct=0.5) == Thresholds(2, 0.5)
    assert Thresholds.from_metadata(meta, delta_num=7) == Thresholds(7, 0.1)
    d = _one([_dir("base_0000005", 100_000), *_deltas(6, 8)], thresholds=Thresholds(2, 0.1))
    assert d.kind == "minor" and d.reason == "3 deltas (> compactor.delta.num.threshold=2)"
    bad = TableMetadata(schema, ("id",), ("p",), properties={"compactor.delta.pct.threshold": "x"})
    with pytest.raises(
        UsageError, match=r"compactor.delta.pct.threshold=.x. is not a valid number"
    ):
        Thresholds.from_metadata(bad)


def test_minor_merges_deltas_and_delete_deltas_into_one_range_each():
    d = _one([_dir("base_0000002", 100), *_deltas(3, 5, deletes=True)], kind="minor")
    assert d.kind == "minor"
    assert d.reason == "minor requested: merge 6 deltas (3..5)"
    assert d.outputs == ("delta_0000003_0000005", "delete_delta_0000003_0000005")
    assert d.base not in d.inputs  # minor leaves the base alone
    assert (d.min_write_id, d.max_write_id) == (3, 5)


def test_minor_with_one_range_has_nothing_to_merge():
    d = _one([_dir("delta_0000001_0000004", 10), _dir("delete_delta_0000001_0000004", 10)], "minor")
    assert d.kind is None
    assert d.reason == "nothing to merge: the deltas cover one write-id range (1..4)"


def test_compacted_partition_is_a_no_op():
    d = _one([_dir("base_0000007_v0000009", 100)], kind="major")
    assert d.kind is None
    assert d.reason == "nothing to compact: no committed deltas above base_0000007_v0000009"


def test_open_write_id_blocks_compaction_above_it():
    dirs = [*_deltas(1, 6, deletes=True)]
    d = _one(dirs, kind="major", lowest_open=4)
    assert d.kind == "major"
    assert d.outputs == ("base_0000003",)
    assert {x.acid.max_write_id for x in d.inputs} == {1, 2, 3}
    assert {x.acid.max_write_id for x in d.waiting} == {4, 5, 6}
    assert d.reason.endswith("; 6 deltas at or above open write id 4 left as they are")
    blocked = _one(dirs, kind="minor", lowest_open=1)
    assert blocked.kind is None
    assert blocked.reason.startswith("nothing to compact: no committed deltas in the partition")


def test_every_partition_gets_a_decision_in_order():
    busy = _plan([_dir(delta_dir_name(w), 10, "p=b") for w in range(1, 13)], "p=b")
    quiet = _plan([_dir(delta_dir_name(1), 10)], "p=a")
    decisions = plan_compaction([busy, quiet], "auto", HIVE)
    assert [(d.relative, d.kind) for d in decisions] == [("p=a", None), ("p=b", "major")]
    assert all(d.reason for d in decisions)
    with pytest.raises(UsageError, match="compaction kind 'huge'"):
        plan_compaction([busy], "huge", HIVE)


def test_aborted_write_ids_counts_those_with_directories_per_partition():
    a = PartitionListing(
        relative="p=a",
        values=("a",),
        dirs=[
            _dir("base_0000002", 100),
            _dir(delta_dir_name(3), 10),
            _dir(delta_dir_name(3, delete=True), 10),  # the same writer: counted once
            _dir("delta_0000004_0000004_0001", 10),  # a statement of write id 4
            _dir(delta_dir_name(5), 10),  # committed
        ],
    )
    b = PartitionListing(relative="p=b", values=("b",), dirs=[_dir(delta_dir_name(5), 10, "p=b")])
    # 7 left no directory; a compacted range is never an aborted writer's.
    ranged = PartitionListing(
        relative="p=c", values=("c",), dirs=[_dir("delta_0000003_0000004", 10, "p=c")]
    )
    assert aborted_write_ids([a, b, ranged], {3, 4, 7}) == {"p=a": 2}


def test_auto_major_when_aborted_write_ids_pile_up_checked_first():
    dirs = [_dir("base_0000005", 100_000), *_deltas(6, 7)]
    low = Thresholds(10, 0.1, aborted_num=2)
    d = _one(dirs, thresholds=low, aborted={"p=a": 3})
    assert d.kind == "major"
    assert d.reason == (
        "3 aborted write ids left directories here (> compactor.aborted.threshold=2): rewrite "
        "base_0000005 + 2 deltas; `lakectl clean` then removes their directories"
    )
    assert d.outputs == ("base_0000007",)
    assert d.stats["aborted_write_ids"] == 3
    # At the threshold the usual policy decides; minor and major requests ignore the count.
    assert _one(dirs, thresholds=low, aborted={"p=a": 2}).kind is None
    assert _one(dirs, kind="minor", thresholds=low, aborted={"p=a": 3}).kind == "minor"
    # Hive's default: more than 1000.
    assert _one(dirs, aborted={"p=a": 1000}).kind is None
    assert _one(dirs, aborted={"p=a": 1001}).kind == "major"


def test_aborts_without_committed_deltas_leave_the_partition_to_clean():
    d = _one([_dir("base_0000005", 100)], thresholds=Thresholds(aborted_num=0), aborted={"p=a": 4})
    assert d.kind is None
    assert d.reason == (
        "4 aborted write ids left directories here (> compactor.aborted.threshold=0), but no "
        "committed deltas above base_0000005 to compact; `lakectl clean` removes their directories"
    )


def test_aborted_threshold_from_properties_and_options():
    schema = Schema((Column("id", "bigint"), Column("p", "string")))
    meta = TableMetadata(schema, ("id",), ("p",), properties={"compactor.aborted.threshold": "5"})
    assert Thresholds.from_metadata(meta).aborted_num == 5
    assert Thresholds.from_metadata(meta, aborted_num=9).aborted_num == 9
    assert Thresholds.from_metadata(TableMetadata(schema)).aborted_num == 1000
    for bad in ({"aborted_num": -1}, {"delta_pct": float("nan")}, {"delta_pct": float("inf")}):
        with pytest.raises(UsageError, match="must be finite and not negative"):
            Thresholds.from_metadata(meta, **bad)
    assert Thresholds(1, 0.5, 3).to_json() == {
        "compactor.delta.num.threshold": 1,
        "compactor.delta.pct.threshold": 0.5,
        "compactor.aborted.threshold": 3,
    }
