"""``clean`` expires log entries and checkpoints older than the retention window: readers start
from the checkpoint history starts at, time travel inside the window keeps working, older states
are a clear error naming where history starts, and a crash while expiring leaves the table
readable."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pytest

import lakectl
from lakectl.errors import FormatError, TimeTravelError
from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.planning.log_expiry_plan import plan_log_expiry
from lakectl.storage.fs import storage_for
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.store import CHECKPOINT_DIR, LOG_DIR, TableStore
from lakectl.times import format_millis
from tests.support.cli import CliRun, run_lakectl_until_crash

SALES = Path(__file__).resolve().parents[2] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = {"mode": "cdc", "op_column": "op_code", "order_by": "change_ts"}


def _names(store: TableStore, directory: str) -> list[int]:
    return sorted(int(n[:-5]) for n in store.storage.list_names(store.path(directory)))


def _property_table(root: Path, commits: int, interval: int) -> TableStore:
    """A table of ``commits`` property changes after its creation, checkpointed every
    ``interval`` commits."""
    storage, path = storage_for(str(root))
    store = TableStore(storage, path, "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    set_properties(store, (f"log.checkpoint.interval={interval}",))
    for i in range(commits - 1):
        set_properties(TableStore(storage, path, "t"), (f"clean.retain={i % 2 + 1}d",))
    return TableStore(storage, path, "t")


# --- the plan, as a pure function ----------------------------------------------------------


def _log(times: list[int]) -> TableState:
    return TableState(
        tuple(
            CommitRecord(
                seq, Operation.APPEND if seq else Operation.CREATE, t, write_id=seq or None
            )
            for seq, t in enumerate(times)
        )
    )


def test_plan_starts_at_the_newest_usable_checkpoint_before_the_horizon() -> None:
    state = _log([0, 10, 20, 30, 40, 50])
    plan = plan_log_expiry(
        state, horizon=35, log_entries=range(6), checkpoints=[1, 2, 4], usable=[2]
    )
    assert plan is not None
    assert (plan.start, plan.start_version, plan.write_checkpoint) == (2, 2, False)
    assert plan.entries == (1,) and plan.checkpoints == (1,)  # entry 0 always stays


def test_plan_writes_a_checkpoint_at_the_horizon_state_when_none_is_usable() -> None:
    state = _log([0, 10, 20, 30, 40, 50])
    plan = plan_log_expiry(state, horizon=35, log_entries=range(6), checkpoints=[5], usable=[])
    assert plan is not None
    assert (plan.start, plan.write_checkpoint, plan.entries, plan.checkpoints) == (
        3,
        True,
        (1, 2),
        (),
    )
    assert plan.summary(dry_run=True).startswith("would expire 2 log entries: history starts")


def test_plan_expires_nothing_inside_the_window_and_never_moves_the_start_back() -> None:
    state = _log([0, 10, 20])
    assert (
        plan_log_expiry(state, horizon=5, log_entries=range(3), checkpoints=[], usable=[]) is None
    )
    cleaned = CommitRecord(3, Operation.CLEAN, 30, info={"log_start": 2})
    later = TableState((*state.records, cleaned))
    plan = plan_log_expiry(later, horizon=15, log_entries=[0, 1, 2, 3], checkpoints=[1], usable=[1])
    assert plan is not None and (plan.start, plan.recorded, plan.entries) == (2, True, (1,))


# --- property-only tables (no Spark) -------------------------------------------------------


def test_clean_expires_the_log_and_readers_start_from_the_checkpoint(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    store = _property_table(tmp_path / "t", commits=23, interval=10)
    before = store.read_state()
    assert _names(store, CHECKPOINT_DIR) == [10, 20]

    dry = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--dry-run", "--json")
    assert dry.code == 0, dry.out
    assert dry.json["plan"]["log_expiry"] == {
        "history_start": {
            "seq": 20,
            "version": None,
            "committed_at": format_millis(before.records[20].committed_at),
        },
        "write_checkpoint": False,
        "log_entries": list(range(1, 20)),
        "checkpoints": [10],
    }
    assert _names(store, LOG_DIR) == list(range(24))  # a dry run changes nothing

    done = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json")
    assert done.code == 0, done.out
    assert done.json["expired_log_entries"] == list(range(1, 20))
    assert done.json["expired_checkpoints"] == [10]
    assert _names(store, LOG_DIR) == [0, *range(20, 25)]  # entry 24: the clean record
    assert _names(store, CHECKPOINT_DIR) == [20]

    after = TableStore(store.storage, store.root, "t").read_state()
    assert after.records[:24] == before.records
    assert after.records[24].info["log_start"] == 20

    listed = lakectl_cli("history", store.root, "--json").json
    history = listed["commits"]
    assert [e["seq"] for e in history] == [20, 21, 22, 23, 24]
    assert history[0]["starts_history"] is True and history[1]["starts_history"] is False
    assert listed["history_start"].startswith("history starts at log entry 20")
    text = lakectl_cli("history", store.root, "--limit", "2")
    assert text.code == 0
    assert "history starts at log entry 20 (committed " in text.err
    again = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json").json
    assert again["expired_log_entries"] == [] and again["log_seq"] is None


def test_clean_writes_the_start_checkpoint_when_there_is_none(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    store = _property_table(tmp_path / "t", commits=6, interval=0)  # no automatic checkpoints
    assert _names(store, CHECKPOINT_DIR) == []
    done = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json")
    assert done.code == 0, done.out
    assert done.json["plan"]["log_expiry"]["write_checkpoint"] is True
    assert _names(store, CHECKPOINT_DIR) == [6]
    assert _names(store, LOG_DIR) == [0, 6, 7]
    assert TableStore(store.storage, store.root, "t").read_state().last_seq == 7


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_a_lost_start_checkpoint_is_a_clear_error(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun], damage: str
) -> None:
    store = _property_table(tmp_path / "t", commits=12, interval=5)
    assert lakectl_cli("clean", store.root, "--retain", "0s", "--force").code == 0
    checkpoint = Path(store.path(CHECKPOINT_DIR, f"{10:020d}.json"))
    if damage == "delete":
        checkpoint.unlink()
    else:
        checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    for command in ("history", "show"):
        result = lakectl_cli(command, store.root, "--json")
        assert result.code == 76
        message = result.json["error"]["message"]
        assert "starts again at entry 10 after entry 0" in message
        assert "checkpoint at entry 10" in message and "missing or damaged" in message
    with pytest.raises(FormatError):
        TableStore(store.storage, store.root, "t").read_state()


@pytest.mark.parametrize(
    "failpoint",
    ["clean.before_checkpoint", "clean.before_log_expiry", "clean.after_first_log_expiry"],
)
def test_a_crash_while_expiring_leaves_the_table_readable(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun], failpoint: str
) -> None:
    store = _property_table(tmp_path / "t", commits=8, interval=0)
    want = store.read_state()
    # stopped in this process as a kill would stop it; a real kill: test_checkpoint
    crashed = run_lakectl_until_crash(
        "clean", store.root, "--retain", "0s", "--force", failpoint=failpoint
    )
    assert crashed.code == 137, crashed.err
    state = TableStore(store.storage, store.root, "t").read_state()
    assert state.records[: len(want.records)] == want.records
    assert lakectl_cli("history", store.root, "--json").code == 0
    rerun = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json")
    assert rerun.code == 0, rerun.out
    assert _names(store, LOG_DIR)[:2] == [0, 8]
    final = TableStore(store.storage, store.root, "t").read_state()
    assert final.records[: len(want.records)] == want.records


# --- a table with data: time travel inside and outside the window --------------------------


def test_time_travel_inside_the_window_and_before_history(
    tmp_path: Path, spark: object, lakectl_cli: Callable[..., CliRun]
) -> None:
    path = tmp_path / "sales"
    table = lakectl.create_table(
        str(path), schema=SCHEMA, primary_key="sell_id", partition_by="create_date", spark=spark
    )
    table.load(str(SALES / "base.csv"), **CDC, engine="arrow")
    table.load(str(SALES / "cdc_batch_1.csv"), **CDC, engine="arrow")
    version_two = table.scan(version=2).to_arrow().sort_by("sell_id")
    time.sleep(0.5)
    table.load(str(SALES / "cdc_batch_2.csv"), **CDC, engine="arrow")
    current = table.scan().to_arrow().sort_by("sell_id")
    # Entries before version 2 go: the window starts halfway between version 2's commit and
    # version 3's, when version 2 was current (computed right before the clean, so a slow
    # machine does not move it).
    two, three = (e.committed_at.timestamp() for e in table.history()[-2:])
    result = table.clean(f"{round((time.time() - (two + three) / 2) * 1000)}ms", force=True)
    assert result.plan.log is not None and result.plan.log.start_version == 2
    assert result.expired_log_entries == (1,)

    reopened = lakectl.open_table(str(path), spark=spark)
    assert reopened.scan(version=2).to_arrow().sort_by("sell_id").equals(version_two)
    assert reopened.scan().to_arrow().sort_by("sell_id").equals(current)
    assert reopened.scan(version=3).to_arrow().num_rows == current.num_rows
    with pytest.raises(TimeTravelError) as before:
        reopened.scan(version=1).to_arrow()
    assert "version 1 is before the start of the table's history: history starts at version 2" in (
        str(before.value)
    )
    first_commit = reopened.history()[0].committed_at
    cli = lakectl_cli("snapshot", path, "--engine", "arrow", "--known-at", "2000-01-01", "--json")
    assert cli.code != 0 and "did not exist yet" in cli.json["error"]["message"]
    early = lakectl_cli("snapshot", path, "--engine", "arrow", "--version", "1", "--json").json[
        "error"
    ]
    assert early["type"] == "time_travel"
    assert "history starts at version 2" in early["message"]
    assert reopened.history().history_start is not None
    assert reopened.history()[0].starts_history and first_commit.timestamp() > 0
    # The change feed inside the window still works, and from before it is the same error.
    assert reopened.changes(from_version=2).to_spark().count() > 0
    with pytest.raises(TimeTravelError):
        reopened.changes(from_version=1).to_spark()
    # SCD2 starts at the history start: version 2's rows open it, its changes follow
    scd2 = reopened.changes().scd2().to_arrow()
    assert sorted(scd2.filter(pc.field("is_current")).column("sell_id").to_pylist()) == sorted(
        current.column("sell_id").to_pylist()
    )
    assert scd2.num_rows >= version_two.num_rows
    spark_scd2 = (
        reopened.changes().scd2().to_spark().toPandas().sort_values(["sell_id", "valid_from"])
    )
    assert (
        spark_scd2["sell_id"].tolist()
        == scd2.sort_by([("sell_id", "ascending"), ("valid_from", "ascending")])
        .column("sell_id")
        .to_pylist()
    )
    shutil.rmtree(path)
    assert json.dumps(result.to_dict())  # the result serialises
