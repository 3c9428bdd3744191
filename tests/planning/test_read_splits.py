"""The read's tasks: every data file once, each with its directory's delete files; tasks a
multiple of the cores; a directory cut only when its data outgrows a task."""

from __future__ import annotations

import random

import pytest

from lakectl.planning.read_splits import (
    OPEN_COST_TASKS_PER_CORE,
    SplitFile,
    SplitGroup,
    pack_splits,
)

MB = 1024 * 1024


def _group(name: str, sizes: list[int], deletes: int = 0) -> SplitGroup:
    return SplitGroup(
        (name,),
        tuple(SplitFile(f"{name}/f{i}", s, base=i == 0) for i, s in enumerate(sizes)),
        tuple(SplitFile(f"{name}/d{i}", 5_000) for i in range(deletes)),
    )


def _check_cover(groups: list[SplitGroup], splits: list[list[SplitGroup]]) -> None:
    placed = [f for split in splits for piece in split for f in piece.files]
    assert sorted(f.path for f in placed) == sorted(f.path for g in groups for f in g.files)
    by_values = {g.values: g for g in groups}
    for split in splits:
        for piece in split:
            assert piece.deletes == by_values[piece.values].deletes
            assert set(piece.files) <= set(by_values[piece.values].files)


@pytest.mark.parametrize("seed", range(8))
def test_every_file_is_read_once_with_its_directorys_deletes(seed):
    rng = random.Random(seed)
    groups = [
        _group(f"p{i}", [rng.randint(1, 200 * MB) for _ in range(rng.randint(1, 6))], i % 4)
        for i in range(rng.randint(1, 30))
    ]
    cores = rng.choice([1, 2, 3, 8])
    splits = pack_splits(groups, 64 * MB, 4 * MB, cores)
    _check_cover(groups, splits)
    assert all(splits)
    assert len(splits) % cores == 0 or len(splits) == sum(
        len(split) for split in splits
    )  # a multiple of the cores, unless there are fewer pieces


def test_a_directory_is_cut_only_where_its_data_outgrows_a_task():
    small = _group("small", [10 * MB] + [50_000] * 10, deletes=10)  # a base + 10 small deltas
    big = _group("big", [60 * MB, 60 * MB, 60 * MB], deletes=2)
    splits = pack_splits([small, big], 64 * MB, 4 * MB, 2)
    pieces = [piece for split in splits for piece in split]
    assert [len(p.files) for p in pieces if p.values == ("small",)] == [11]
    # Each 60 MB file is its own piece, and each piece loads the directory's 2 delete files.
    assert sorted(len(p.files) for p in pieces if p.values == ("big",)) == [1, 1, 1]
    _check_cover([small, big], splits)


def test_tasks_are_a_multiple_of_the_cores_and_balanced():
    groups = [_group(f"p{i}", [10 * MB]) for i in range(40)]  # 40 x (10 MB + 4 MB open cost)
    splits = pack_splits(groups, 64 * MB, 4 * MB, 3)
    # 560 MB at 64 MB a task: 9 tasks, a multiple of 3 cores.
    assert len(splits) == 9
    assert sorted(len(split) for split in splits) == [4] * 5 + [5] * 4
    # 10 for 5 cores (a multiple, not 9); 4 directories each.
    splits = pack_splits(groups, 64 * MB, 4 * MB, 5)
    assert len(splits) == 10
    assert {len(split) for split in splits} == {4}


def test_open_costs_add_at_most_a_few_tasks_per_core():
    # The compaction bench's shape: 40 directories, each a base and 10 small deltas and 10
    # delete deltas. Open costs weigh 84 MB a directory (55 tasks); the bytes fit in 2.
    groups = [_group(f"p{i}", [2 * MB] + [100_000] * 10, deletes=10) for i in range(40)]
    splits = pack_splits(groups, 64 * MB, 4 * MB, 2)
    assert len(splits) == OPEN_COST_TASKS_PER_CORE * 2
    assert {len(split) for split in splits} == {40 // len(splits)}  # balanced
    _check_cover(groups, splits)
    # With more cores the cap is higher: one directory a task (no directory is cut).
    assert len(pack_splits(groups, 64 * MB, 4 * MB, 16)) == 40
    # Where the bytes alone need more tasks, the cap does not apply: 80 pieces of 50 MB at
    # 64 MB a task need 63 tasks, 64 for 2 cores.
    big = [_group(f"b{i}", [50 * MB, 50 * MB], deletes=1) for i in range(40)]
    assert len(pack_splits(big, 64 * MB, 4 * MB, 2)) == 64


def test_fewer_pieces_than_cores_and_nothing_to_read():
    one = [_group("p", [MB])]
    assert [len(s) for s in pack_splits(one, 64 * MB, 4 * MB, 8)] == [1]
    assert pack_splits([], 64 * MB, 4 * MB, 2) == []
    assert pack_splits([SplitGroup(("p",), (), ())], 64 * MB, 4 * MB, 2) == []
