"""A table's own files are untrusted input: every parse is bounded in size and depth, every field
is typed, a checkpoint that contradicts its records is skipped with a warning, and a log with a
wrong, duplicate or missing seq is a clear damaged-log error naming the file."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lakectl.errors import FormatError
from lakectl.ops.clean import CleanOptions
from lakectl.ops.clean import plan as plan_clean
from lakectl.table.checkpoint import checkpoint_name, encode_checkpoint
from lakectl.table.compaction_runs import RUNS_DIR, RunStatus, read_statuses
from lakectl.table.json_input import (
    MAX_DEPTH,
    JsonInputError,
    SizeLimit,
    TableWarning,
    nesting_depth,
    parse_json,
)
from lakectl.table.log import CommitRecord, Operation, TableState
from lakectl.table.store import (
    CHECKPOINT_DIR,
    LOG_DIR,
    STAGING_DIR,
    TXN_DIR,
    IncompleteLogError,
    TableStore,
)
from tests.support.cli import CliRun
from tests.support.table_logs import (
    append_table,
    as_json,
    compaction_status,
    fresh,
    log_on_disk,
)

DEEP_OBJECT = '{"a":' * 100_000
DEEP_ARRAY = "[" * 100_000
DEEP_CLOSED = "[" * 100_000 + "]" * 100_000


def _log_file(store: TableStore, seq: int) -> Path:
    return Path(store.path(LOG_DIR, f"{seq:020d}.json"))


def _checkpoint_file(store: TableStore, seq: int) -> Path:
    return Path(store.path(CHECKPOINT_DIR, checkpoint_name(seq)))


def _read_warning(store: TableStore) -> tuple[TableState, list[str]]:
    """A fresh read of the table and the table warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        state = fresh(store).read_state()
    return state, [str(w.message) for w in caught if issubclass(w.category, TableWarning)]


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- bounded parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [DEEP_OBJECT, DEEP_ARRAY, DEEP_CLOSED])
def test_deep_nesting_is_refused_before_parsing(text: str) -> None:
    with pytest.raises(JsonInputError) as caught:
        parse_json(text.encode(), "x.json", limit=SizeLimit.LOG_RECORD)
    assert "x.json is damaged: nested 100000 levels deep" in caught.value.message
    assert caught.value.exit_code == 76


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert nesting_depth('{"a": "[[[[{{{{\\"[[", "b": [[1]]}') == 3
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(nested, "x", limit=1000) is not None
    with pytest.raises(JsonInputError):
        parse_json("[" + nested + "]", "x", limit=1000)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"x" * 101, "larger than 100 bytes"),
        (b"\xff{}", "not UTF-8 text"),
        (b'{"a": NaN}', "not valid JSON"),
        (b'{"a": 1', "not valid JSON"),
        (b"1" * 5000, "not valid JSON"),  # more digits than Python converts
    ],
)
def test_oversized_or_invalid_json_is_a_format_error(raw: bytes, why: str) -> None:
    with pytest.raises(JsonInputError) as caught:
        parse_json(raw, "f.json", limit=100 if len(raw) == 101 else 10_000)
    assert why in caught.value.message


# --- typed log records -------------------------------------------------------------------------


def _record() -> dict[str, Any]:
    return CommitRecord(
        3, Operation.APPEND, 10, write_id=2, read_seq=2, partitions=("p=1",), added=("d",)
    ).to_json()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"seq": "3"}, "'seq' must be an integer, not a string"),
        ({"seq": True}, "'seq' must be an integer, not a boolean"),
        ({"seq": 3.0}, "'seq' must be an integer, not a number"),
        ({"seq": -1}, "'seq' is out of range"),
        ({"seq": 2**64}, "'seq' is out of range"),
        ({"committed_at": [1]}, "'committed_at' must be an integer"),
        ({"write_id": "2"}, "'write_id' must be an integer"),
        ({"effective_at": {}}, "'effective_at' must be an integer"),
        ({"operation": "drop-table"}, "not a known operation"),
        ({"operation": 1}, "'operation' must be a string"),
        ({"partitions": "p=1"}, "'partitions' must be an array"),
        ({"added": [1]}, "an element of 'added' must be a string"),
        ({"obsolete": [None]}, "an element of 'obsolete' must be a string"),
        ({"counts": {"rows": "5"}}, "counts['rows'] must be an integer"),
        ({"counts": []}, "'counts' must be an object"),
        ({"info": []}, "'info' must be an object"),
        ({"info": {"max_write_id": [1]}}, "info['max_write_id'] must be an integer"),
        ({"info": {"deleted": "x"}}, "info['deleted'] must be an array"),
        ({"info": {"compactions": [{"outputs": [1]}]}}, "an element of 'outputs'"),
        ({"info": {"statements": {"a": 1}}}, "info['statements'] must be an array"),
        ({"info": {"retired": [[1]]}}, "must be a [write id, index] pair"),
        ({"info": {"reactivated": [["1", 0]]}}, "must be a [write id, index] pair"),
        ({"info": {"list_bucketing": {"base_1": {"columns": "a"}}}}, "'columns' must be an array"),
        ({"info": {"list_bucketing": {"base_1": [1]}}}, "expected an object"),
        ({"metadata": {"schema": "id bigint"}}, "'schema' must be an array"),
        ({"metadata": {"schema": [{"name": "id", "type": "bigint; drop"}]}}, "unsupported column"),
        ({"metadata": {"schema": [{"name": "id", "type": "BIGINT"}]}}, "has the type"),
        ({"metadata": {"schema": [{"name": "i d", "type": "bigint"}]}}, "invalid column"),
        ({"metadata": {"schema": [{"name": "id", "type": "int"}], "buckets": 1e21}}, "buckets"),
        (
            {"metadata": {"schema": [{"name": "id", "type": "int"}], "primary_key": ["x"]}},
            "'x' is not in the schema",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_refused(change: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError) as caught:
        CommitRecord.from_json({**_record(), **change})
    assert why in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [DEEP_OBJECT, DEEP_CLOSED, '{"seq": "1"}', "[1]", '"text"', "", "\x00" * 10],
)
def test_a_damaged_log_record_is_a_format_error_naming_the_file(
    tmp_path: Path, content: str
) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    _log_file(store, 2).write_text(content)
    with pytest.raises(FormatError) as caught:
        fresh(store).read_state()
    assert f"log record {store.storage.url(store.path(LOG_DIR, f'{2:020d}.json'))}" in str(
        caught.value
    )
    assert "is damaged" in caught.value.message
    assert not isinstance(caught.value, IncompleteLogError)


def test_a_damaged_log_record_is_exit_76_with_one_json_error(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun]
) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    _log_file(store, 2).write_text(DEEP_OBJECT)
    commands = [["history"], ["show"], ["clean"], ["compactions"], ["updates"], ["changes"]]
    for command in [*commands, ["snapshot", "--engine", "arrow"]]:
        result = lakectl_cli(command[0], store.root, *command[1:], "--json")
        assert result.code == 76, (command, result.err)
        body = json.loads(result.out)
        assert list(body) == ["error"] and body["error"]["type"] == "format"
        assert f"{2:020d}.json is damaged" in body["error"]["message"]
        assert "RecursionError" not in result.out + result.err


# --- seqs --------------------------------------------------------------------------------------


def test_an_entry_holding_another_seq_is_a_damaged_log(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=3, interval=0)
    record = json.loads(_log_file(store, 3).read_text())
    _log_file(store, 4).write_text(json.dumps({**record, "seq": 3}))  # two entries for seq 3
    with pytest.raises(FormatError) as caught:
        fresh(store).read_state()
    assert f"{4:020d}.json is damaged: it holds entry 3, not 4" in caught.value.message


def test_an_entry_holding_another_seq_after_a_checkpoint_is_a_damaged_log(
    tmp_path: Path,
) -> None:
    store = append_table(tmp_path, appends=3, interval=2)  # checkpoints at 2 and 4
    record = json.loads(_log_file(store, 4).read_text())
    _log_file(store, 5).write_text(json.dumps({**record, "seq": 4}))
    with pytest.raises(FormatError, match="it holds entry 4, not 5"):
        fresh(store).read_state()


def test_a_missing_entry_is_a_damaged_log_naming_the_file(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=4, interval=0)
    _log_file(store, 3).unlink()
    with pytest.raises(IncompleteLogError) as caught:
        fresh(store).read_state()
    assert f"the first missing entry is {store.storage.url(store.path(LOG_DIR))}/" in str(
        caught.value
    )
    assert f"{3:020d}.json" in caught.value.message


def test_names_of_another_shape_are_not_log_entries(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=2, interval=0)
    expected = log_on_disk(store)
    Path(store.path(LOG_DIR, "3.json")).write_text(_log_file(store, 2).read_text())
    Path(store.path(LOG_DIR, "9" * 200 + ".json")).write_text("{}")
    Path(store.path(LOG_DIR, "٣" * 20 + ".json")).write_text("{}")
    assert as_json(fresh(store).read_state()) == expected


# --- checkpoints -------------------------------------------------------------------------------


def _edit_checkpoint(path: Path, edit: Callable[[dict[str, Any]], None], *, reseal: bool) -> None:
    """Change a checkpoint's body; ``reseal`` recomputes its digest as a careful forger would."""
    body = json.loads(path.read_bytes())
    edit(body)
    if not reseal:
        path.write_text(json.dumps(body))
        return
    body["records_sha256"] = ""
    blank = json.dumps(body, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(blank.encode()).hexdigest()
    path.write_text(blank.replace('"records_sha256":""', f'"records_sha256":"{digest}"'))


def test_new_checkpoints_carry_their_record_count_and_digest(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=1)
    body = json.loads(_checkpoint_file(store, 2).read_bytes())
    assert body["seq"] == 2 and body["record_count"] == 3
    assert len(body["records_sha256"]) == 64


def test_a_checkpoint_contradicting_its_records_is_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    store = append_table(tmp_path, appends=3)  # checkpoints at 2 and 4
    expected = log_on_disk(store)
    for seq in (2, 4):
        _edit_checkpoint(
            _checkpoint_file(store, seq),
            lambda body: body["records"][2].pop("added"),
            reseal=False,
        )
    state, seen = _read_warning(store)
    assert as_json(state) == expected
    assert sorted(d for r in state.records for d in r.added) == [
        f"delta_{w:07d}_{w:07d}_0000" for w in (1, 2, 3)
    ]
    assert len(seen) == 2
    assert all("do not match its SHA-256 digest" in w and "was skipped" in w for w in seen)
    assert checkpoint_name(4) in seen[0] and checkpoint_name(2) in seen[1]


def test_a_resealed_checkpoint_whose_last_record_differs_from_the_log_is_skipped(
    tmp_path: Path,
) -> None:
    store = append_table(tmp_path, appends=1)  # checkpoint at 2 = the append
    expected = log_on_disk(store)
    _edit_checkpoint(
        _checkpoint_file(store, 2), lambda body: body["records"][2].pop("added"), reseal=True
    )
    state, seen = _read_warning(store)
    assert as_json(state) == expected
    assert len(seen) == 1 and "its last record differs from log entry 2" in seen[0]
    with pytest.warns(TableWarning, match="its last record differs"):
        assert not fresh(store).checkpoint_usable(2)


@pytest.mark.parametrize("last", [False, True])
def test_an_old_checkpoint_without_a_digest_is_used_only_when_its_last_record_matches(
    tmp_path: Path, last: bool
) -> None:
    store = append_table(tmp_path, appends=1)
    expected = log_on_disk(store)

    def strip(body: dict[str, Any]) -> None:
        del body["record_count"], body["records_sha256"]
        if last:
            body["records"][2]["added"] = []

    _edit_checkpoint(_checkpoint_file(store, 2), strip, reseal=False)
    state, seen = _read_warning(store)
    assert as_json(state) == expected
    reader = fresh(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TableWarning)
        reader.read_state()
    assert reader.last_read is not None
    assert reader.last_read.checkpoint_seq == (-1 if last else 2)
    assert len(seen) == (1 if last else 0)


@pytest.mark.parametrize(
    "content",
    [
        DEEP_ARRAY,
        DEEP_OBJECT,
        '{"format": 1, "seq": 2, "metadata": [], "records": [[[[1]]]]}',
        '{"format": 1, "seq": 2, "metadata": {}, "records": []}',
        '{"format": 1, "seq": "2"}',
        '{"format": 1, "seq": 2, "metadata": [], "records": [], "record_count": 1e21}',
        "[]",
    ],
)
def test_any_damaged_checkpoint_falls_back_to_the_records(tmp_path: Path, content: str) -> None:
    store = append_table(tmp_path, appends=1)
    expected = log_on_disk(store)
    _checkpoint_file(store, 2).write_text(content)
    state, seen = _read_warning(store)
    assert as_json(state) == expected
    assert len(seen) == 1 and "was skipped" in seen[0] and checkpoint_name(2) in seen[0]


@pytest.mark.parametrize("damage", ["edited", "deep"])
def test_a_skipped_checkpoint_is_a_warning_on_stderr_and_the_table_reads(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun], damage: str
) -> None:
    store = append_table(tmp_path, appends=1)
    expected = lakectl_cli("history", store.root, "--json")
    if damage == "deep":
        _checkpoint_file(store, 2).write_text(DEEP_ARRAY)
    else:
        _edit_checkpoint(
            _checkpoint_file(store, 2), lambda body: body["records"][2].pop("added"), reseal=False
        )
    for command in ("history", "show", "updates"):
        result = lakectl_cli(command, store.root, "--json")
        assert result.code == 0, result.err
        assert result.err.count("warning: ") == 1
        assert f"warning: checkpoint {store.checkpoint_url(2)} is damaged" in result.err
        assert "was skipped and the log records were read instead" in result.err
    assert lakectl_cli("history", store.root, "--json").out == expected.out


def test_a_checkpoint_written_by_encode_round_trips_with_a_forged_count_refused() -> None:
    from lakectl.table.checkpoint import decode_checkpoint
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.schema import parse_schema

    meta = TableMetadata(parse_schema("id bigint"), primary_key=("id",))
    records = [CommitRecord(0, Operation.CREATE, 1, metadata=meta)]
    raw = encode_checkpoint(records)
    assert decode_checkpoint(raw, 0) == tuple(records)
    forged = raw.replace(b'"record_count":1', b'"record_count":2')
    assert forged != raw and decode_checkpoint(forged, 0) is None


# --- txn and compaction status files -----------------------------------------------------------

HOSTILE_FIELDS = [
    {"pid": 1e21},
    {"pid": "abc"},
    {"pid": [1]},
    {"pid": -1},
    {"pid": 2**40},
    {"pid": True},
    {"started_at": "yesterday"},
    {"host": ["h"]},
]


@pytest.mark.parametrize("change", HOSTILE_FIELDS)
def test_a_damaged_allocation_keeps_its_write_id_open_with_a_warning(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    write_id = store.allocate_write_id("append")
    path = Path(store.path(TXN_DIR, f"{write_id:020d}.json"))
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        entry = fresh(store).allocated_write_ids()[write_id]
    assert entry == {"aborted": False}
    assert len(caught) == 1 and "counts as allocated" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TableWarning)
        decided, _ = plan_clean(fresh(store), CleanOptions(retain="0s", dry_run=True))
    assert write_id not in decided.abort_write_ids  # never judged gone on a damaged file's word


@pytest.mark.parametrize("content", [DEEP_OBJECT, DEEP_ARRAY, "x" * (SizeLimit.TXN + 1)])
def test_a_deep_or_huge_allocation_is_a_warning(tmp_path: Path, content: str) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    Path(store.path(TXN_DIR)).mkdir(parents=True, exist_ok=True)
    Path(store.path(TXN_DIR, f"{9:020d}.json")).write_text(content)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        assert fresh(store).allocated_write_ids()[9] == {"aborted": False}
    assert "is damaged" in str(caught[0].message)


@pytest.mark.parametrize(
    "change",
    [
        *HOSTILE_FIELDS,
        {"state": "exploded"},
        {"id": 7},
        {"heartbeat_at": None},
        {"compactions": [{"outputs": "delta_1_2"}]},
        {"compactions": [{"stats": {"base_bytes": "x"}}]},
        {"compactions": {}},
    ],
)
def test_a_damaged_status_file_is_ignored_with_a_warning(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RunStatus.from_json(compaction_status(**change))


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(compaction_status(pid=1e21)),
        json.dumps(compaction_status(pid="abc")),
        json.dumps(compaction_status(pid=[1])),
        DEEP_OBJECT,
        "[" * 1000,
        "[1]",
    ],
)
def test_clean_and_compactions_survive_damaged_status_files(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun], content: str
) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    runs = Path(store.path(RUNS_DIR))
    runs.mkdir(parents=True)
    (runs / "bad.json").write_text(content)
    good = compaction_status(state="failed", id="1700000000000-aaaaaa")
    (runs / "1700000000000-aaaaaa.json").write_text(json.dumps(good))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        assert [s.id for s in read_statuses(fresh(store))] == ["1700000000000-aaaaaa"]
    assert len(caught) == 1 and "bad.json is damaged" in str(caught[0].message)
    before = _hashes(tmp_path / "t")
    listed = lakectl_cli("compactions", store.root, "--json")
    assert listed.code == 0, listed.err
    assert "bad.json is damaged" in listed.err and "; ignored" in listed.err
    dry = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert "bad.json is damaged" in dry.err
    assert _hashes(tmp_path / "t") == before
    planned = [item["path"] for item in json.loads(dry.out)["plan"]["delete"]]
    assert planned == [f"{RUNS_DIR}/1700000000000-aaaaaa.json"]  # the failed run, not bad.json
    done = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["deleted"] == planned
    assert (runs / "bad.json").read_text() == content


def test_names_with_other_unicode_digits_are_not_lakectl_files(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=1)
    expected = log_on_disk(store)
    Path(store.path(CHECKPOINT_DIR, "²" * 20 + ".json")).write_text("{}")
    staging = Path(store.path(STAGING_DIR, "w²²²²²²²-1-1"))
    staging.mkdir(parents=True)
    assert as_json(fresh(store).read_state()) == expected
    decided, _ = plan_clean(fresh(store), CleanOptions(retain="0s", dry_run=True))
    kept = [i for i in decided.keep if i.path.endswith(staging.name)]
    assert [i.reason for i in kept] == ["not made by lakectl"]


@pytest.mark.parametrize("pid", [1e21, "abc", [1]])
def test_clean_and_compactions_survive_a_damaged_allocation(
    tmp_path: Path, lakectl_cli: Callable[..., CliRun], pid: Any
) -> None:
    store = append_table(tmp_path, appends=1, interval=0)
    write_id = store.allocate_write_id("append")
    path = Path(store.path(TXN_DIR, f"{write_id:020d}.json"))
    path.write_text(json.dumps({**json.loads(path.read_text()), "pid": pid, "started_at": 0}))
    assert lakectl_cli("compactions", store.root, "--json").code == 0
    result = lakectl_cli("clean", store.root, "--retain", "0s", "--force", "--json")
    assert result.code == 0, result.err
    assert f"warning: write id allocation {store.storage.url(str(path))} is damaged" in result.err
    assert not Path(store.path(TXN_DIR, f"{write_id:020d}.aborted")).exists()


def test_a_missing_entry_after_the_checkpoint_is_a_damaged_log(tmp_path: Path) -> None:
    store = append_table(tmp_path, appends=4)  # checkpoints at 2 and 4; entries up to 5
    _log_file(store, 5).rename(_log_file(store, 6))  # entry 5 missing, 6 present
    with pytest.raises(IncompleteLogError) as caught:
        fresh(store).read_state()
    assert "entry 5 (" in caught.value.message and f"{5:020d}.json) is missing" in str(caught.value)
