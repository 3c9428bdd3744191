"""The read planner (Hive's getAcidState) as a pure function of a partition listing."""

from __future__ import annotations

import pytest

from lakectl.errors import FormatError
from lakectl.planning.read_plan import (
    MIN_ORC_FILE_BYTES,
    plan_partition,
    require_whole_files,
    short_files,
)
from lakectl.table.layout import parse_acid_dir
from lakectl.table.listing import DirListing, FileEntry, PartitionListing
from lakectl.table.validity import ValidWriteIds, parse_valid_write_ids

ALL = ValidWriteIds(10**9)


def _dir(name: str) -> DirListing:
    acid = parse_acid_dir(name)
    assert acid is not None, name
    return DirListing(
        acid, f"/t/{name}", name, (FileEntry(f"/t/{name}/bucket_00000", "bucket_00000", 10),), True
    )


def _listing(*names: str, originals: tuple[str, ...] = ()) -> PartitionListing:
    return PartitionListing(
        relative="",
        dirs=[_dir(n) for n in names],
        originals=[FileEntry(f"/t/{n}", n, 10) for n in originals],
    )


def _names(dirs) -> list[str]:
    return [d.acid.name for d in dirs]


def _plan(*names: str, valid: ValidWriteIds = ALL, originals: tuple[str, ...] = (), visible=None):
    listing = _listing(*names, originals=originals)
    if visible is None:
        return plan_partition(listing, valid)
    return plan_partition(listing, valid, lambda d: d.acid.name in visible)


def test_deltas_and_delete_deltas_without_base():
    plan = _plan(
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delete_delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    )
    assert plan.base is None
    assert _names(plan.deltas) == [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    ]
    assert _names(plan.delete_deltas) == ["delete_delta_0000002_0000002_0000"]
    assert plan.obsolete == ()
    assert not plan.is_empty


def test_newest_valid_base_wins_and_deltas_above_it_are_read():
    plan = _plan(
        "base_0000003",
        "base_0000005",
        "delta_0000001_0000001_0000",
        "delta_0000005_0000005_0000",
        "delete_delta_0000004_0000004_0000",
        "delta_0000006_0000006_0000",
        "delete_delta_0000007_0000007_0000",
    )
    assert plan.base is not None and plan.base.acid.name == "base_0000005"
    assert _names(plan.deltas) == ["delta_0000006_0000006_0000"]
    assert _names(plan.delete_deltas) == ["delete_delta_0000007_0000007_0000"]
    assert set(_names(plan.obsolete)) == {
        "base_0000003",
        "delta_0000001_0000001_0000",
        "delta_0000005_0000005_0000",
        "delete_delta_0000004_0000004_0000",
    }
    assert _names(plan.data_dirs) == ["base_0000005", "delta_0000006_0000006_0000"]


def test_base_above_the_high_watermark_is_not_used():
    names = (
        "base_0000003",
        "base_0000008",
        "delta_0000004_0000004_0000",
        "delta_0000009_0000009_0000",
    )
    plan = _plan(*names, valid=ValidWriteIds(6))
    assert plan.base is not None and plan.base.acid.name == "base_0000003"
    assert _names(plan.deltas) == ["delta_0000004_0000004_0000"]


def test_compactor_base_with_visibility_suffix():
    plan = _plan(
        "base_0000004_v0000020", "delta_0000003_0000003_0000", "delta_0000005_0000005_0000"
    )
    assert plan.base is not None and plan.base.acid.name == "base_0000004_v0000020"
    assert _names(plan.deltas) == ["delta_0000005_0000005_0000"]


def test_minor_compacted_delta_covers_smaller_ones():
    plan = _plan(
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delta_0000001_0000003",
        "delta_0000004_0000004_0000",
        "delete_delta_0000001_0000003",
        "delete_delta_0000002_0000002_0000",
    )
    assert _names(plan.deltas) == ["delta_0000001_0000003", "delta_0000004_0000004_0000"]
    assert _names(plan.delete_deltas) == ["delete_delta_0000001_0000003"]
    assert set(_names(plan.obsolete)) == {
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delete_delta_0000002_0000002_0000",
    }


def test_compacted_delta_with_visibility_suffix_covers_smaller_ones():
    plan = _plan(
        "delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000001_0000002_v0000031"
    )
    assert _names(plan.deltas) == ["delta_0000001_0000002_v0000031"]


def test_single_delta_compacted_under_the_same_range():
    # Minor compaction of one delta gives `delete_delta_4_4` beside `delete_delta_4_4_0000`:
    # the same events twice. Hive reads the compacted one only (getAcidState: a delta with a
    # statement id whose range was already taken by one without is obsolete).
    plan = _plan(
        "delete_delta_0000004_0000004_0000",
        "delete_delta_0000004_0000004",
        "delete_delta_0000007_0000007_0000",
    )
    assert _names(plan.delete_deltas) == [
        "delete_delta_0000004_0000004",
        "delete_delta_0000007_0000007_0000",
    ]
    assert _names(plan.obsolete) == ["delete_delta_0000004_0000004_0000"]


def test_statements_of_one_transaction_are_all_read():
    plan = _plan(
        "delta_0000005_0000005_0000",
        "delta_0000005_0000005_0001",
        "delta_0000005_0000005_0002",
        "delta_0000006_0000006_0000",
    )
    assert _names(plan.deltas) == [
        "delta_0000005_0000005_0000",
        "delta_0000005_0000005_0001",
        "delta_0000005_0000005_0002",
        "delta_0000006_0000006_0000",
    ]


def test_aborted_and_future_write_ids_are_skipped():
    valid = ValidWriteIds(5, frozenset({3}))
    plan = _plan(
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delete_delta_0000003_0000003_0000",
        "delta_0000005_0000005_0000",
        "delta_0000006_0000006_0000",
        "delete_delta_0000006_0000006_0000",
        valid=valid,
    )
    assert _names(plan.deltas) == ["delta_0000002_0000002_0000", "delta_0000005_0000005_0000"]
    assert plan.delete_deltas == ()


def test_uncommitted_directories_are_invisible_not_obsolete():
    plan = _plan(
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delete_delta_0000002_0000002_0000",
        visible={"delta_0000001_0000001_0000"},
    )
    assert _names(plan.deltas) == ["delta_0000001_0000001_0000"]
    assert plan.delete_deltas == ()
    assert plan.obsolete == ()  # a crashed writer's files are not the cleaner's to judge here


def test_streaming_delta_holding_several_transactions():
    names = ("delta_1_2",)
    assert _names(_plan(*names).deltas) == ["delta_1_2"]
    # Only transaction 1 valid: the delta is still read; rows are filtered by write id.
    assert _names(
        _plan(*names, valid=parse_valid_write_ids("default.s:1:9223372036854775807::")).deltas
    ) == ["delta_1_2"]
    assert _plan(*names, valid=ValidWriteIds(2, frozenset({1, 2}))).deltas == ()


def test_originals_are_read_only_without_a_base():
    originals = ("000000_0", "000001_0", "000001_0_copy_1")
    plan = _plan("delete_delta_10000001_10000001_0000", originals=originals)
    assert [f.name for f in plan.originals] == list(originals)
    assert _names(plan.delete_deltas) == ["delete_delta_10000001_10000001_0000"]
    with_base = _plan("base_0000002", "delta_0000003_0000003_0000", originals=originals)
    assert with_base.originals == ()
    # A base the reader cannot see yet does not hide the originals.
    unseen_base = _plan("base_0000002", originals=originals, valid=ValidWriteIds(1))
    assert unseen_base.base is None
    assert [f.name for f in unseen_base.originals] == list(originals)


def test_empty_partition():
    plan = _plan()
    assert plan.is_empty
    assert plan.base is None and plan.deltas == () and plan.delete_deltas == ()
    assert not _plan(originals=("000000_0",)).is_empty


@pytest.mark.parametrize("hwm", [0, 1, 2, 3, 4, 5, 6])
def test_plan_reads_every_visible_write_id_exactly_once(hwm):
    """Whatever the watermark, the chosen data dirs cover each valid write id once."""
    names = (
        "base_0000002",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delta_0000003_0000004",
        "delta_0000004_0000004_0000",
        "delta_0000005_0000005_0000",
        "delta_0000006_0000006_0000",
    )
    plan = _plan(*names, valid=ValidWriteIds(hwm))
    covered: list[int] = []
    for d in plan.data_dirs:
        low = d.acid.min_write_id if not d.acid.is_base else 1
        covered += [w for w in range(low, d.acid.max_write_id + 1) if w <= hwm]
    assert sorted(covered) == list(range(1, hwm + 1))


def _sized(name: str, size: int) -> DirListing:
    acid = parse_acid_dir(name)
    assert acid is not None, name
    entry = FileEntry(f"/t/{name}/bucket_00000", "bucket_00000", size)
    return DirListing(acid, f"/t/{name}", name, (entry,), True)


@pytest.mark.parametrize("size", [0, 1, MIN_ORC_FILE_BYTES - 1])
def test_a_file_too_short_to_be_orc_is_a_damaged_table(size: int) -> None:
    listing = PartitionListing(
        relative="",
        dirs=[
            _sized("delta_0000001_0000001_0000", 4000),
            _sized("delta_0000002_0000002_0000", size),
        ],
    )
    plan = plan_partition(listing, ALL)
    assert [f.path for f in short_files(plan)] == ["/t/delta_0000002_0000002_0000/bucket_00000"]
    with pytest.raises(FormatError) as info:
        require_whole_files([plan], lambda p: "file://" + p)
    assert info.value.exit_code == 76
    assert info.value.message.startswith(
        "ORC file file:///t/delta_0000002_0000002_0000/bucket_00000 is damaged or truncated ("
    )
    assert ("it is empty" if size == 0 else f"{size} bytes") in info.value.message
    assert info.value.hint and "backup" in info.value.hint


def test_delete_deltas_are_checked_and_unread_directories_are_not() -> None:
    empty_delete = _sized("delete_delta_0000002_0000002_0000", 0)
    plan = plan_partition(
        PartitionListing(
            relative="", dirs=[_sized("delta_0000001_0000001_0000", 900), empty_delete]
        ),
        ALL,
    )
    assert [f.name for f in short_files(plan)] == ["bucket_00000"]
    # The same empty file in a directory this snapshot does not read (write id 2 is not valid).
    plan = plan_partition(
        PartitionListing(
            relative="", dirs=[_sized("delta_0000001_0000001_0000", 900), empty_delete]
        ),
        ValidWriteIds(1),
    )
    assert short_files(plan) == []
    require_whole_files([plan], str)
