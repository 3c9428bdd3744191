"""List bucketing's pure parts: names, keys, refusals, recommendations, rewrites, pruning."""

from __future__ import annotations

import pytest

from lakectl.errors import BadInputError, UsageError
from lakectl.expr import bind_where
from lakectl.planning.list_bucket_plan import (
    DEFAULT_SUBDIR,
    NO_SUBDIR,
    ListBucketing,
    check_keys,
    decide_rewrite,
    file_may_match,
    kept_layouts,
    layout_info,
    layouts_by_dir,
    parse_keys,
    recommend,
    subdir_names,
    validate_columns,
)
from lakectl.planning.prune import analyze_where, canonical_text
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.layout import (
    LIST_BUCKETING_DEFAULT_DIR,
    is_list_bucketing_segment,
    list_bucketing_dir,
    parse_acid_dir,
)
from lakectl.table.listing import DirListing, FileEntry
from lakectl.table.log import CommitRecord
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema

DEFAULT = LIST_BUCKETING_DEFAULT_DIR


def meta(buckets: int = 0) -> TableMetadata:
    schema = parse_schema("id bigint, x int, y string, f double, d date, ds string")
    return TableMetadata(schema, ("id",), ("ds",), buckets)


def test_directory_names_follow_hive():
    assert list_bucketing_dir(("x",), ("6",)) == "x=6"
    assert list_bucketing_dir(("x", "y"), ("10", "a/b")) == "x=10/y=a%2Fb"
    assert list_bucketing_dir(("x", "y"), None) == f"{DEFAULT}/{DEFAULT}"
    assert is_list_bucketing_segment("x=6")
    assert is_list_bucketing_segment(DEFAULT)
    assert not is_list_bucketing_segment("bucket_00000")
    assert not is_list_bucketing_segment("_tmp")


def test_subdir_numbers_map_to_directories():
    lb = ListBucketing(("x",), (("6",), ("20",)))
    names = subdir_names(["ds=1", "ds=2"], {"ds=1": lb})
    assert names == {
        ("ds=1", NO_SUBDIR): "",
        ("ds=1", 0): "x=6",
        ("ds=1", 1): "x=20",
        ("ds=1", DEFAULT_SUBDIR): DEFAULT,
        ("ds=2", NO_SUBDIR): "",
    }


def test_parse_keys():
    assert parse_keys("6,20,30", ("x",), ["int"]) == (("6",), ("20",), ("30",))
    assert parse_keys("6", ("x",), ["int"]) == (("6",),)
    assert parse_keys("-6", ("x",), ["int"]) == (("-6",),)
    assert parse_keys("US,'DE'", ("y",), ["string"]) == (("US",), ("DE",))
    assert parse_keys("(10,'a'),(20,c)", ("x", "y"), ["int", "string"]) == (
        ("10", "a"),
        ("20", "c"),
    )


@pytest.mark.parametrize(
    ("text", "columns", "types", "message"),
    [
        ("6,20", ("x", "y"), ["int", "string"], "has 1 value(s) for 2 column(s)"),
        ("abc", ("x",), ["int"], "abc is not a int value for column 'x'"),
        ("6,6", ("x",), ["int"], "value 6 is given twice"),
        ("6,NULL", ("x",), ["int"], "NULL is not a int value"),
        ("''", ("y",), ["string"], "empty values go to the default directory"),
    ],
)
def test_parse_keys_refusals(text, columns, types, message):
    with pytest.raises(UsageError) as err:
        parse_keys(text, columns, types)
    assert message in err.value.message


def test_too_many_keys_refused():
    with pytest.raises(UsageError, match="at most 1000"):
        check_keys([(str(i),) for i in range(1001)], ("x",))


@pytest.mark.parametrize(
    ("columns", "buckets", "message"),
    [
        (["x"], 4, "list bucketing cannot be combined with bucketing"),
        (["ds"], 0, "--column 'ds' is a partition column"),
        (["nope"], 0, "--column 'nope' is not a column of the table"),
        (["f"], 0, "--column 'f' has type double"),
        (["x", "X"], 0, "--column 'x' is given twice"),
        ([], 0, "give the skewed column(s) with --column"),
    ],
)
def test_validate_columns_refusals(columns, buckets, message):
    refused = BadInputError if "is not a column" in message else UsageError
    with pytest.raises(refused) as err:
        validate_columns(meta(buckets), columns)
    assert message in err.value.message


def test_validate_columns_for_skew_is_looser():
    assert validate_columns(meta(4), ["F"], for_list_bucketing=False) == ("f",)
    assert validate_columns(meta(), ["X", "y"]) == ("x", "y")


def test_recommend_follows_threshold_and_limit():
    counts = [
        (("6",), 300),
        (("20",), 200),
        ((None,), 150),
        (("",), 120),
        (("7",), 9),
        (("8",), 10),
    ]
    assert recommend(counts, 1000, 0.01, 10) == (("6",), ("20",), ("8",))
    assert recommend(counts, 1000, 0.2, 10) == (("6",), ("20",))
    assert recommend(counts, 1000, 0.01, 1) == (("6",),)
    assert recommend(counts, 1000, 0.5, 10) == ()
    assert recommend([], 0, 0.01, 10) == ()
    ties = [(("b",), 5), (("a",), 5)]
    assert recommend(ties, 10, 0.1, 1) == (("a",),)


# --- rewrites -------------------------------------------------------------------------------


def _dir(relative: str, files: tuple[FileEntry, ...] = ()) -> DirListing:
    acid = parse_acid_dir(relative.rsplit("/", 1)[-1])
    assert acid is not None
    return DirListing(acid, "/t/" + relative, relative, files, True)


def _plan(base: str | None, deltas: list[str] = (), deletes: list[str] = ()) -> PartitionReadPlan:
    return PartitionReadPlan(
        "ds=1",
        ("1",),
        _dir(base) if base else None,
        tuple(_dir(d) for d in deltas),
        tuple(_dir(d) for d in deletes),
        (),
    )


LB = ListBucketing(("x",), (("6",), ("20",)))


def test_rewrite_folds_base_and_deltas_below_open_write_ids():
    plan = _plan(
        "ds=1/base_0000002",
        ["ds=1/delta_0000003_0000003_0000", "ds=1/delta_0000005_0000005_0000"],
        ["ds=1/delete_delta_0000003_0000003_0000"],
    )
    decision = decide_rewrite(plan, None, LB, lowest_open=5, visibility_txn=9)
    c = decision.compaction
    assert c is not None
    assert c.output_base == "base_0000003_v0000009"
    assert [d.relative for d in c.inputs] == [
        "ds=1/base_0000002",
        "ds=1/delta_0000003_0000003_0000",
        "ds=1/delete_delta_0000003_0000003_0000",
    ]
    assert [d.relative for d in c.waiting] == ["ds=1/delta_0000005_0000005_0000"]
    assert decision.to_json()["output"] == "ds=1/base_0000003_v0000009"


@pytest.mark.parametrize(
    ("plan", "current", "wanted", "reason"),
    [
        (_plan(None), None, LB, "empty partition"),
        (_plan("ds=1/base_0000002"), LB, LB, "already list-bucketed by x: 6, 20 + default"),
        (_plan("ds=1/base_0000002", ["ds=1/delta_0000003_0000003_0000"]), None, None, "not list"),
        (_plan("ds=1/base_0000004"), None, LB, "above open write id 3"),
    ],
)
def test_nothing_to_rewrite(plan, current, wanted, reason):
    decision = decide_rewrite(plan, current, wanted, lowest_open=3, visibility_txn=9)
    assert decision.compaction is None
    assert reason in decision.reason


def test_mapping_lives_in_the_log_per_base_directory():
    records = [
        CommitRecord(
            1, "list-bucket", 0, 2, info={"list_bucketing": {"ds=1/base_1_v2": LB.to_json()}}
        ),
        CommitRecord(2, "list-bucket", 0, 3, info={"list_bucketing": {"ds=1/base_1_v3": None}}),
    ]
    assert layouts_by_dir(records) == {"ds=1/base_1_v2": LB}
    major = decide_rewrite(
        _plan("ds=1/base_1_v2", ["ds=1/delta_0000004_0000004_0000"]),
        None,
        LB,
        lowest_open=None,
        visibility_txn=7,
    ).compaction
    assert major is not None
    kept = kept_layouts(records, [major])
    assert kept == {"ds=1": LB}
    assert layout_info([major], kept) == {"ds=1/base_0000004_v0000007": LB.to_json()}
    assert ListBucketing.from_json(LB.to_json()) == LB


# --- pruning --------------------------------------------------------------------------------

TWO = ListBucketing(("x", "y"), (("10", "a"), ("10", "b"), ("20", "c")))
CANON = {"x": lambda t: canonical_text(t, "int"), "y": lambda t: canonical_text(t, "string")}


def _constraints(where: str) -> dict:
    return analyze_where(
        bind_where(where, parse_schema("x int, y string")), {"x": "int", "y": "string"}
    )


def _read(layout: ListBucketing, where: str) -> list[str]:
    constraints = _constraints(where)
    dirs = [layout.dir_of(v) for v in layout.values] + [layout.default_dir, ""]
    entries = [FileEntry(f"/t/{d}/bucket_00000", "bucket_00000", 1, d) for d in dirs]
    return [e.subdir for e in entries if file_may_match(e, layout, constraints, CANON)]


def test_point_query_reads_one_directory():
    one = ListBucketing(("x",), (("6",), ("20",), ("30",), ("40",)))
    assert _read(one, "x = 30") == ["x=30", ""]
    assert _read(one, "x = 50") == [DEFAULT, ""]
    assert _read(one, "x IN (6, 50)") == ["x=6", DEFAULT, ""]
    assert _read(one, "x IN (6, 40)") == ["x=6", "x=40", ""]
    assert _read(one, "x > 30") == ["x=6", "x=20", "x=30", "x=40", DEFAULT, ""]


def test_partial_predicates_on_several_columns_prune_what_they_can():
    # The seed's example: skewed (10,'a'), (10,'b'), (20,'c') and a default directory.
    assert _read(TWO, "x = 10") == ["x=10/y=a", "x=10/y=b", f"{DEFAULT}/{DEFAULT}", ""]
    assert _read(TWO, "y = 'b'") == ["x=10/y=b", f"{DEFAULT}/{DEFAULT}", ""]
    assert _read(TWO, "x = 10 AND y = 'b'") == ["x=10/y=b", ""]
    assert _read(TWO, "x = 10 AND y IN ('a', 'z')") == ["x=10/y=a", f"{DEFAULT}/{DEFAULT}", ""]


def test_unknown_directories_are_always_read():
    constraints = _constraints("x = 6")
    lb = ListBucketing(("x",), (("6",),))
    odd = FileEntry("/t/z=1/bucket_00000", "bucket_00000", 1, "z=1")
    assert file_may_match(odd, lb, constraints, CANON)
    other = FileEntry("/t/x=7/bucket_00000", "bucket_00000", 1, "x=7")
    assert not file_may_match(other, lb, constraints, CANON)
    assert file_may_match(other, None, constraints, CANON)


def test_a_later_rewrite_of_the_same_write_id_wins():
    from lakectl.planning.read_plan import plan_partition
    from lakectl.table.listing import PartitionListing
    from lakectl.table.validity import ValidWriteIds

    compacted, split = _dir("ds=1/base_0000003_v0000004"), _dir("ds=1/base_0000003_v0000005")
    for dirs in ([compacted, split], [split, compacted]):
        listing = PartitionListing("ds=1", ("1",), list(dirs))
        assert plan_partition(listing, ValidWriteIds(5)).base == split


def test_list_bucket_conflicts_with_nothing_and_nothing_with_it():
    from lakectl.table.log import find_conflict

    rewrite = CommitRecord(5, "list-bucket", 0, 4, read_seq=2, partitions=("ds=1",))
    merge = CommitRecord(4, "cdc", 0, 3, read_seq=2, partitions=("ds=1",))
    assert find_conflict(rewrite, [merge]) is None
    assert find_conflict(merge, [rewrite]) is None
