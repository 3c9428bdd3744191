"""``maintain``'s decision per table, as a pure function: compaction when a partition is chosen,
clean when it would change anything, a checkpoint when one is due; in that order, with reasons."""

from __future__ import annotations

from dataclasses import replace

from lakectl.planning.clean_plan import ABORTED, OBSOLETE, STAGING, CleanItem, CleanPlan
from lakectl.planning.compaction_plan import PartitionCompaction
from lakectl.planning.log_expiry_plan import LogExpiry
from lakectl.planning.maintain_plan import TableFacts, plan_maintenance

NOTHING_TO_CLEAN = CleanPlan(
    horizon=0, delete=(), keep=(), abort_write_ids=(), record_deleted=(), oldest=None
)
LEFT_ALONE = PartitionCompaction("day=1", None, "below thresholds: 1 delta (<= 10)")


def facts(**changes: object) -> TableFacts:
    base = TableFacts(
        table="sales",
        compaction=(LEFT_ALONE,),
        clean=NOTHING_TO_CLEAN,
        last_seq=5,
        checkpoint_seq=-1,
        checkpoint_interval=10,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_table_that_needs_nothing_gets_no_action() -> None:
    plan = plan_maintenance(facts())
    assert plan.actions == () and plan.needs_nothing
    assert plan.table == "sales"


def test_chosen_partitions_make_one_compaction_with_the_planners_reasons() -> None:
    minor = PartitionCompaction("day=1", "minor", "11 deltas (> compactor.delta.num.threshold=10)")
    major = PartitionCompaction("day=2", "major", "deltas hold 40% of the base's bytes (> 0.1)")
    plan = plan_maintenance(facts(compaction=(minor, LEFT_ALONE, major)))
    assert [a.kind for a in plan.actions] == ["compact"]
    action = plan.actions[0]
    assert action.reason == (
        "major in 1 partition, minor in 1 partition: day=1: 11 deltas "
        "(> compactor.delta.num.threshold=10) (and 1 more partition)"
    )
    assert action.details["partitions"] == [
        {"partition": "day=1", "type": "minor", "reason": minor.reason},
        {"partition": "day=2", "type": "major", "reason": major.reason},
    ]


def test_clean_is_planned_for_replaced_dirs_dead_writers_and_staging_leftovers() -> None:
    cleaning = replace(
        NOTHING_TO_CLEAN,
        delete=(
            CleanItem("day=1/delta_0000001_0000001_0000", OBSOLETE, "replaced", 100),
            CleanItem("day=1/delta_0000004_0000004_0000", ABORTED, "writer gone", 20),
            CleanItem("_lakectl/staging/w0000004-1-2", STAGING, "writer gone", 3),
        ),
        abort_write_ids=(4,),
    )
    plan = plan_maintenance(facts(clean=cleaning))
    assert [a.kind for a in plan.actions] == ["clean"]
    assert plan.actions[0].reason == (
        "delete 3 paths (1 aborted writer, 1 obsolete, 1 staging); "
        "mark write id(s) 4 aborted (their writers are gone)"
    )
    assert plan.actions[0].details["bytes"] == 123


def test_log_expiry_alone_is_a_reason_to_clean() -> None:
    expiry = LogExpiry(
        start=3,
        start_version=2,
        start_time=0,
        write_checkpoint=True,
        entries=(1, 2),
        checkpoints=(),
        recorded=False,
        describe="history starts at version 2",
    )
    plan = plan_maintenance(facts(clean=replace(NOTHING_TO_CLEAN, log=expiry)))
    assert [a.kind for a in plan.actions] == ["clean"]
    assert plan.actions[0].reason.startswith("expire 2 log entries")


def test_a_checkpoint_is_due_after_the_interval_counted_from_the_newest_usable_one() -> None:
    assert plan_maintenance(facts(last_seq=9, checkpoint_seq=-1)).actions == ()
    due = plan_maintenance(facts(last_seq=10, checkpoint_seq=-1)).actions
    assert [(a.kind, a.reason) for a in due] == [
        (
            "checkpoint",
            "the log has 11 entries and no usable checkpoint; log.checkpoint.interval=10",
        )
    ]
    assert plan_maintenance(facts(last_seq=29, checkpoint_seq=20)).actions == ()
    later = plan_maintenance(facts(last_seq=30, checkpoint_seq=20)).actions
    assert later[0].reason.startswith("log entry 30 is 10 entries past the newest checkpoint")
    assert plan_maintenance(facts(last_seq=500, checkpoint_interval=0)).actions == ()


def test_actions_run_compaction_then_clean_then_checkpoint() -> None:
    cleaning = replace(NOTHING_TO_CLEAN, abort_write_ids=(7,))
    chosen = PartitionCompaction("", "major", "11 deltas and no base")
    plan = plan_maintenance(
        facts(compaction=(chosen,), clean=cleaning, last_seq=12, lowest_open_write_id=9)
    )
    assert [a.kind for a in plan.actions] == ["compact", "clean", "checkpoint"]
    assert plan.actions[0].reason == "major in 1 partition: 11 deltas and no base"
    assert plan.notes == ("write id 9 is open: deltas from it up are not compacted",)
