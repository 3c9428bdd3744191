"""The counts a load reports: observed while writing, taken only when the files confirm them."""

from __future__ import annotations

import pytest

from lakectl.arrow.acid_writer import WrittenChanges
from lakectl.spark.change_classify import checked_counts, count_results
from lakectl.table.orc_tail import acid_stats, parse_acid_stats

OBSERVED = {"insert": 3, "update": 5, "delete": 2, "ignored": 1}


def written(inserts: int, deletes: int) -> WrittenChanges:
    return WrittenChanges(["p=1/delta_0000002_0000002_0000"], inserts, deletes)


def test_counts_that_the_files_confirm_are_taken():
    assert checked_counts(OBSERVED, written(8, 7), rows=11) == OBSERVED
    assert checked_counts(OBSERVED, written(8, 7), rows=20) == OBSERVED  # repeated keys
    # Nothing to write (all ignored): nothing written, nothing observed but the ignored.
    none = {"insert": 0, "update": 0, "delete": 0, "ignored": 4}
    assert checked_counts(none, written(0, 0), rows=4) == none
    # A metric Spark left out (no row had that result) counts as 0.
    assert checked_counts({"insert": 2, "ignored": None}, written(2, 0), rows=2) == {
        "insert": 2,
        "update": 0,
        "delete": 0,
        "ignored": 0,
    }


@pytest.mark.parametrize(
    ("files", "rows"),
    [
        ((16, 7), 11),  # a task counted twice: more new rows observed than written
        ((8, 14), 11),
        ((8, 7), 10),  # more results than the batch has rows
    ],
)
def test_counts_the_files_contradict_are_refused(files, rows):
    assert checked_counts(OBSERVED, written(*files), rows=rows) is None


def test_count_results_counts_every_result(spark):
    frame = spark.createDataFrame(
        [("insert",), ("update",), ("update",), ("ignored",)], "__lakectl_result string"
    )
    assert count_results(frame) == {"insert": 1, "update": 2, "delete": 0, "ignored": 1}


def test_acid_stats_round_trip():
    assert parse_acid_stats(acid_stats(4, 0, 9)) == (4, 0, 9)
    assert parse_acid_stats(b"0,0,1000") == (0, 0, 1000)  # as in a Hive-written delete delta
    with pytest.raises(ValueError, match=r"not a hive\.acid\.stats value"):
        parse_acid_stats(b"1,2")


def test_no_observed_metrics_means_count_again():
    """Spark Connect returns no metrics when the write job's plan was emptied."""
    assert checked_counts({}, written(0, 0), rows=4) is None
