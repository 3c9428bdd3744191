"""How many Spark tasks each partition's kernel read is split into (pure: no JVM)."""

from __future__ import annotations

from lakectl.spark.arrow_tasks import TASK_BYTES, task_counts

MB = 1 << 20


def test_partitions_a_little_over_their_share_stay_whole() -> None:
    # 4 partitions on 2 slots: a share is a quarter; each partition is about one
    assert task_counts([10 * MB + 3, 10 * MB + 1, 10 * MB, 10 * MB - 4], slots=2) == [1, 1, 1, 1]


def test_one_partition_is_split_two_per_slot() -> None:
    assert task_counts([40 * MB], slots=2) == [4]


def test_a_large_partition_among_small_ones_is_split() -> None:
    assert task_counts([30 * MB, 2 * MB, 2 * MB, 2 * MB], slots=2) == [3, 1, 1, 1]


def test_tasks_hold_about_task_bytes_at_most() -> None:
    assert task_counts([10 * TASK_BYTES], slots=1) == [10]
