"""Which commits and directories a change feed reads, from the log alone."""

from __future__ import annotations

import pytest

from lakectl.errors import TimeTravelError, UsageError
from lakectl.planning.change_plan import plan_changes
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema

META = TableMetadata(parse_schema("id bigint, r string"), primary_key=("id",), partition_by=("r",))


def _log(*extra: CommitRecord) -> TableState:
    """create@100; w1 append@1000; w2 cdc@2000 (delta + delete delta); statements w3@3000;
    w4 delete@4000."""
    return TableState(
        (
            CommitRecord(0, Operation.CREATE, 100, metadata=META),
            CommitRecord(1, Operation.APPEND, 1000, write_id=1, added=("r=a/delta_1_1_0000",)),
            CommitRecord(
                2,
                Operation.CDC,
                2000,
                write_id=2,
                added=("r=a/delta_2_2_0000", "r=a/delete_delta_2_2_0000"),
            ),
            CommitRecord(3, Operation.APPLY_UPDATES, 3000, write_id=3),
            CommitRecord(
                4, Operation.DELETE, 4000, write_id=4, added=("r=b/delete_delta_4_4_0000",)
            ),
            *extra,
        )
    )


def test_a_range_reads_the_directories_of_its_data_commits() -> None:
    rng = plan_changes(_log(), from_version=1)
    assert (rng.from_version, rng.to_version, rng.from_seq, rng.to_seq) == (1, 4, 1, 4)
    assert rng.write_ids == [2, 4]  # statements (w3) change no stored rows
    assert rng.commit_times == {2: 2000, 4: 4000}
    assert rng.insert_dirs == {"r=a/delta_2_2_0000"}
    assert rng.delete_dirs == {"r=a/delete_delta_2_2_0000", "r=b/delete_delta_4_4_0000"}


def test_from_the_empty_table_and_by_time() -> None:
    assert plan_changes(_log(), from_version=0, to_version=1).write_ids == [1]
    by_time = plan_changes(_log(), from_time=1500, to_time=3999)
    assert (by_time.from_version, by_time.to_version, by_time.write_ids) == (1, 3, [2])
    assert plan_changes(_log(), from_version=4).write_ids == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, UsageError, "give exactly one of --from-version and --from-time"),
        (
            {"from_version": 1, "from_time": 5},
            UsageError,
            "give exactly one of --from-version and --from-time",
        ),
        (
            {"from_version": 1, "to_version": 2, "to_time": 5},
            UsageError,
            "--to-version and --to-time cannot be combined",
        ),
        ({"from_version": 9}, TimeTravelError, "version 9 does not exist"),
        (
            {"from_version": -2},
            UsageError,
            "--from-version -2: a version is 0 (the empty table) or a write id",
        ),
        (
            {"from_version": 4, "to_version": 2},
            UsageError,
            "the end of the range is before its start: give --to-version/--to-time at or after "
            "--from-version/--from-time",
        ),
    ],
)
def test_bad_ranges(kwargs: dict[str, int], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        plan_changes(_log(), **kwargs)
    assert getattr(caught.value, "message", str(caught.value)) == message


def test_versions_whose_files_were_compacted_and_cleaned_are_refused() -> None:
    compact = CommitRecord(
        5,
        Operation.COMPACT,
        5000,
        added=("r=a/base_2",),
        obsolete=("r=a/delta_1_1_0000", "r=a/delta_2_2_0000", "r=a/delete_delta_2_2_0000"),
        info={"max_write_id": 2},
    )
    clean = CommitRecord(
        6,
        Operation.CLEAN,
        6000,
        info={"deleted": ["r=a/delta_1_1_0000", "r=a/delta_2_2_0000", "r=a/delete_delta_2_2_0000"]},
    )
    state = _log(compact, clean)
    with pytest.raises(TimeTravelError) as caught:
        plan_changes(state, from_version=0)
    assert caught.value.message == (
        "the changes of version(s) 1, 2 are no longer available: a compaction merged their files "
        "and clean removed them"
    )
    assert plan_changes(state, from_version=3).write_ids == [4]
