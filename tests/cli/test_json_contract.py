"""What scripts rely on in lakectl's output, for the commands that run without a JVM: `--json`
prints exactly one JSON object (results and errors), with snake_case keys, numbers as numbers,
times as ISO-8601 UTC strings, and the same names and nesting as the Python result objects;
listing formats (`--format json|csv|tsv`) use the `--json` field names."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import lakectl
from lakectl.ops.changes import ChangesResult
from lakectl.ops.checkpoint import CheckpointResult
from lakectl.ops.clean import CleanResult
from lakectl.ops.compact import CompactionEntry, CompactResult
from lakectl.ops.dml import DmlResult, PartitionChange
from lakectl.ops.load import LoadResult
from lakectl.ops.materialize import MaterializeResult
from lakectl.ops.restore import RestoreResult
from lakectl.ops.server import ServerStatus
from lakectl.ops.set_properties import SetResult
from lakectl.ops.skew import PartitionSkew, SkewResult, ValueCount
from lakectl.ops.snapshot import SnapshotResult
from lakectl.ops.stream import StreamResult, StreamStatus
from lakectl.ops.updates import InstallResult
from lakectl.planning.clean_plan import CleanPlan
from lakectl.planning.compaction_plan import Thresholds
from lakectl.scan.pruning import ScanStats
from lakectl.times import utc
from tests.conftest import CliRun

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")
# Keys that are data, not field names: a table's columns and property names, log info.
DATA_KEYS = {"rows", "properties", "changed", "info", "pruned_on", "counts", "metadata"}
DATA_KEYS |= {"thresholds"}  # table property names
TIME_KEYS = {"committed_at", "started_at", "ended_at", "installed_at", "effective", "until"}
TIME_KEYS |= {"effective_at", "last_commit_at"}
SCHEMA = "id bigint, amount double, day string"


@pytest.fixture
def lake(tmp_path: Path, lakectl_cli: Callable[..., CliRun]) -> Callable[..., CliRun]:
    """The CLI on a warehouse holding ``t`` (partitioned by day; a few commits, no data)."""

    def run(*args: object) -> CliRun:
        return lakectl_cli("--warehouse", tmp_path, *args)

    made = run("create", "t", "--schema", SCHEMA, "--primary-key", "id", "--partition-by", "day")
    assert made.code == 0, made.err
    assert run("set", "t", "compactor.delta.num.threshold=7").code == 0
    return run


def _one_object(run: CliRun) -> dict[str, Any]:
    """stdout is exactly one JSON object (json.loads refuses a second value after the first)."""
    body = json.loads(run.out)
    assert isinstance(body, dict), run.out[:200]
    return body


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) for every key of every object inside ``value``, skipping the keys of
    objects that hold data (column or property names) rather than fields."""
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, path + "[]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            if key not in DATA_KEYS:
                yield from _walk(item, f"{path}.{key}")


def _check_shape(body: dict[str, Any]) -> None:
    for path, key, value in _walk(body):
        assert SNAKE.match(key), f"{path}.{key} is not snake_case"
        assert value != "-", f"{path}.{key} is a '-' placeholder, not null"
        if key in TIME_KEYS and value is not None:
            assert isinstance(value, str) and ISO_UTC.match(value), f"{path}.{key}: {value!r}"
        if key in ("version", "seq", "log_seq", "bytes", "deltas", "records") and value:
            assert isinstance(value, int) and not isinstance(value, bool), f"{path}.{key}"


# Each command that runs without a JVM, and the Python call that returns its result object.
COMMANDS: list[tuple[tuple[str, ...], Callable[[Any], Any] | None]] = [
    (("show", "t"), lambda t: t.show()),
    (("history", "t"), lambda t: t.history()),
    (("history", "t", "--limit", "1"), lambda t: t.history(1)),
    (("compactions", "t"), lambda t: t.compactions()),
    (("updates", "t"), lambda t: t.statements()),
    (("checkpoint", "t"), lambda t: t.checkpoint()),
    (("set", "t", "clean.retain=3d"), lambda t: t.set_properties(["clean.retain=4d"])),
    (("alter", "t", "--add-column", "note string"), lambda t: t.alter("memo string")),
    (("clean", "t", "--dry-run"), lambda t: t.clean(dry_run=True)),
    (("compact", "t", "--auto", "--dry-run"), lambda t: t.compact("auto", dry_run=True)),
    (("snapshot", "t", "--engine", "arrow"), lambda t: t.scan(engine="arrow").collect()),
    (
        ("changes", "t", "--engine", "arrow", "--from-version", "0"),
        lambda t: t.changes(from_version=0, engine="arrow").collect(),
    ),
    (("create", "u", "--schema", "a int"), None),
    (("config",), None),
]


@pytest.mark.parametrize(("args", "python"), COMMANDS, ids=[" ".join(a[:3]) for a, _ in COMMANDS])
def test_json_is_one_snake_case_object_with_the_python_names(
    lake: Callable[..., CliRun], tmp_path: Path, args: tuple[str, ...], python: Any
) -> None:
    run = lake(*args, "--json")
    assert run.code == 0, run.err
    body = _one_object(run)
    _check_shape(body)
    if python is None:
        return
    result = python(lakectl.open_table("t", warehouse=str(tmp_path)))
    expected = result.to_dict()
    assert list(body) == list(expected)  # the same fields, in the same order
    for key in body:
        assert hasattr(result, key), f"{type(result).__name__} has no {key!r}"
    for name in ("commits", "compactions", "statements"):  # a listing's entries
        for entry, shown in zip(getattr(result, name, []), body.get(name, []), strict=True):
            assert list(shown) == list(entry.to_dict()) == list(type(result).columns)
            assert all(hasattr(entry, key) for key in shown)


def test_listings_print_one_object_naming_the_table(lake: Callable[..., CliRun]) -> None:
    history = _one_object(lake("history", "t", "--json"))
    assert history["table"] == "t" and history["history_start"] is None
    assert [c["operation"] for c in history["commits"]] == ["create", "set-properties"]
    assert [c["version"] for c in history["commits"]] == [None, None]  # null, not "-"
    assert all(ISO_UTC.match(c["committed_at"]) for c in history["commits"])
    assert _one_object(lake("compactions", "t", "--json")) == {"table": "t", "compactions": []}
    assert _one_object(lake("updates", "t", "--json")) == {"table": "t", "statements": []}


@pytest.mark.parametrize(
    ("command", "key"),
    [("history", "commits"), ("compactions", "compactions"), ("updates", "statements")],
)
@pytest.mark.parametrize("fmt", ["json", "csv", "tsv"])
def test_listing_formats_use_the_json_field_names(
    lake: Callable[..., CliRun], command: str, key: str, fmt: str
) -> None:
    listed = _one_object(lake(command, "t", "--json"))[key]
    run = lake(command, "t", "--format", fmt)
    assert run.code == 0, run.err
    if fmt == "json":
        assert json.loads(run.out) == listed
        return
    header, *rows = list(csv.reader(io.StringIO(run.out), delimiter="," if fmt == "csv" else "\t"))
    assert all(SNAKE.match(name) for name in header), header
    assert len(rows) == len(listed)
    for row, entry in zip(rows, listed, strict=True):
        assert header == list(entry)
        shown = dict(zip(header, row, strict=True))
        assert shown["operation" if command == "history" else header[0]] == str(
            entry["operation" if command == "history" else header[0]] or ""
        )
    if command == "history":
        assert [r[header.index("version")] for r in rows] == ["", ""]  # null: an empty cell
        assert json.loads(rows[1][header.index("info")]) == listed[1]["info"]


def test_show_and_config_formats_use_the_json_field_names(lake: Callable[..., CliRun]) -> None:
    partitions = _one_object(lake("show", "t", "--json"))["partitions"]
    header = next(csv.reader(io.StringIO(lake("show", "t", "--format", "csv").out)))
    assert partitions == [] and all(SNAKE.match(name) for name in header)
    assert "delete_deltas" in header and "obsolete_dirs" in header
    settings = _one_object(lake("config", "--json"))["settings"]
    rows = list(csv.DictReader(io.StringIO(lake("config", "--format", "csv").out)))
    assert rows == [{k: "" if v is None else str(v) for k, v in s.items()} for s in settings]


@pytest.mark.parametrize(
    "args",
    [
        ("history", "nope"),
        ("compactions", "nope"),
        ("updates", "nope"),
        ("show", "nope"),
        ("snapshot", "t", "--engine", "arrow", "--columns", "nope"),
        ("history", "t", "--limit", "x"),
        ("no-such-command",),
    ],
    ids=lambda a: " ".join(a),
)
def test_errors_are_one_object_too(lake: Callable[..., CliRun], args: tuple[str, ...]) -> None:
    run = lake(*args, "--json")
    assert run.code in (2, 65, 66), run.err
    body = _one_object(run)
    assert list(body) == ["error"] and body["error"]["message"]
    _check_shape(body)


def _instances() -> list[Any]:
    """One of each result a JVM-using command prints, with placeholder values."""
    status = StreamStatus(batches=2, last_commit_at=utc(1_700_000_000_000), lags=[1.0, 3.0])
    skew = PartitionSkew("day=1", 10, 2, (ValueCount(("a",), 6, 0.6),), (("a",),))
    return [
        LoadResult("t", 3, "cdc", {"inserted": 1}, ("day=1/delta_3_3",)),
        CompactResult("t", "auto", True, None, Thresholds(10, 0.1, 1000), []),
        CleanResult("t", True, 1000, CleanPlan(0, (), (), (), (), None)),
        DmlResult("t", "delete", "a = 1", False, 4, 1, 0, [PartitionChange("day=1", 1, 0)]),
        RestoreResult("t", 2, False, 5, 1, 1),
        MaterializeResult("t", 1_700_000_000_000, 6, 1, 0, 0, {"rewritten": 1}, 5, ()),
        InstallResult("t", 7, 1, 1, ()),
        StreamResult("t", "/landing", "signal", status, 1.5),
        status,
        SkewResult("t", ("store",), 3, 0.1, 20, [skew]),
        skew,
        ScanStats(2, 1, 4, 2, 100, 50),
        SnapshotResult("t", ["a"], ["int"], out="/x", rows_written=3),
        ChangesResult("t", 0, 2, [1, 2], ["a"], out="/x", rows_written=2),
        ServerStatus(False),
        SetResult("t", 1, {}, {}),
        CheckpointResult("t", 3, 4, "file:///t", True),
        CompactionEntry(1, "day=1", "minor", "cleaned", "auto", 1, 2, (), (), 0, 0, "r"),
    ]


@pytest.mark.parametrize("result", _instances(), ids=lambda r: type(r).__name__)
def test_every_json_key_is_a_python_name(result: Any) -> None:
    """A script reading `--json` and a program reading the result object see one shape: each
    key of ``to_dict()`` is a field or property of the same name."""
    body = result.to_dict()
    json.dumps(body)  # JSON-ready as it is
    _check_shape(body)
    for key in body:
        assert hasattr(result, key), f"{type(result).__name__} has no {key!r}"


def test_version_with_json_is_one_object(lakectl_cli: Callable[..., CliRun]) -> None:
    for args in (("--json", "--version"), ("--version", "--json")):
        run = lakectl_cli(*args)
        assert run.code == 0, run.err
        body = _one_object(run)
        assert list(body) == ["version", "pyspark", "python", "data_source_jar"]
        assert body["version"] == lakectl.__version__


def test_verbose_names_the_engine_that_ran_and_why(tmp_path):
    """``--verbose`` says on stderr which engine moved the data and why; without it, nothing."""
    from tests.support.cli import run_lakectl

    table = tmp_path / "t"
    batch = tmp_path / "b.csv"
    batch.write_text("id,qty\n1,5\n")
    assert run_lakectl("create", table, "--schema", "id bigint, qty int").code == 0
    loud = run_lakectl("--verbose", "load", table, batch, "--engine", "arrow")
    assert loud.code == 0, loud.err
    assert "engine: arrow (asked for); peak memory " in loud.err
    quiet = run_lakectl("load", table, batch, "--engine", "auto", "--force")
    assert quiet.code == 0 and "engine:" not in quiet.err
    auto = run_lakectl("load", table, batch, "--engine", "auto", "--force", "--verbose")
    assert "engine: arrow (auto: " in auto.err
    measured = run_lakectl("--json", "load", table, batch, "--engine", "arrow", "--force")
    assert json.loads(measured.out)["peak_memory_bytes"] > 0
