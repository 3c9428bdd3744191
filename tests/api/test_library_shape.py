"""The library reads as one design, checked without Spark: what ``import lakectl`` exposes, a
table pinned to the version it loaded, read objects whose engine is an argument, result types
with short reprs and datetime values, and errors that name the Python arguments."""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

import lakectl
from lakectl.python_names import python_text
from tests.conftest import CliRun


@pytest.fixture
def table(tmp_path: Path) -> lakectl.Table:
    """An empty table with a key, partitioned by day (created without Spark)."""
    return lakectl.create_table(
        str(tmp_path / "orders"),
        schema="id bigint, amount double, day string",
        primary_key="id",
        partition_by="day",
    )


def test_dir_shows_the_api_and_every_name_resolves() -> None:
    assert dir(lakectl) == sorted(lakectl.__all__)
    for noise in ("Any", "annotations", "TYPE_CHECKING", "typing", "importlib"):
        assert noise not in dir(lakectl)
        assert noise not in vars(lakectl)
    for name in lakectl.__all__:
        assert getattr(lakectl, name) is not None
    from lakectl.ops.inspect import ShowResult
    from lakectl.table_reads import Scan

    assert lakectl.ShowResult is ShowResult and lakectl.Scan is Scan
    with pytest.raises(AttributeError):
        lakectl.no_such_thing  # noqa: B018


@pytest.mark.parametrize("cls", ["Table", "Scan", "Changes", "Warehouse"])
def test_public_methods_document_their_arguments_and_returns(cls: str) -> None:
    undocumented = []
    for name, member in vars(getattr(lakectl, cls)).items():
        if name.startswith("_") or isinstance(member, property):
            continue
        doc = inspect.getdoc(member) or ""
        params = [p for p in inspect.signature(member).parameters if p != "self"]
        if "Returns:" not in doc or (params and "Args:" not in doc):
            undocumented.append(name)
    # The shared terminal methods live on the base class of Scan and Changes.
    for name in ("to_arrow", "to_batches", "to_pandas", "to_polars", "to_duckdb", "to_spark"):
        if cls in ("Scan", "Changes"):
            assert "Returns:" in (inspect.getdoc(getattr(getattr(lakectl, cls), name)) or "")
    assert not undocumented, undocumented


def test_the_engine_is_an_argument_not_a_method_name() -> None:
    methods = [n for n in dir(lakectl.Table) if not n.startswith("_")]
    assert not [n for n in methods if n.endswith("_arrow") or n.endswith("_spark")]
    for old in ("to_spark", "to_arrow", "snapshot", "list_changes", "scd2", "update", "updates"):
        assert old not in methods, old
    assert {"scan", "changes", "refresh", "update_rows", "statements"} <= set(methods)


def test_a_table_is_pinned_until_refresh_and_its_own_writes_refresh_it(
    table: lakectl.Table,
) -> None:
    other = lakectl.open_table(table.location)
    threshold = table.properties["compactor.delta.num.threshold"]
    commits = len(table.history())
    other.set_properties({"compactor.delta.num.threshold": 33})
    other.alter("note string")
    assert other.properties["compactor.delta.num.threshold"] == "33"  # writes refresh
    assert "note" in other.schema.names
    # ``table`` still reads the state it loaded: properties, schema, history, scans.
    assert table.properties["compactor.delta.num.threshold"] == threshold
    assert "note" not in table.schema.names
    assert len(table.history()) == commits
    assert "note" not in table.scan().to_arrow().column_names
    assert "note" not in [name for name, _ in table.show().schema]
    assert table.refresh() is table
    assert table.properties["compactor.delta.num.threshold"] == "33"
    assert "note" in table.scan().to_arrow().column_names
    assert len(table.history()) == commits + 2
    other.alter("memo string")
    table.set_properties({"clean.retain": "3d"})  # a write through the table refreshes it
    assert "memo" in table.schema.names and table.properties["clean.retain"] == "3d"


def test_reads_are_objects_with_a_plan(table: lakectl.Table) -> None:
    scan = table.scan(where="day = 'a'", columns="id,amount", limit=5)
    assert repr(scan) == "Scan(where=\"day = 'a'\", columns=['id', 'amount'], limit=5)"
    plan = scan.plan()
    assert isinstance(plan, lakectl.ScanPlan)
    assert (plan.version, plan.partitions, plan.files, plan.bytes) == (0, [], 0, 0)
    assert plan.pruned_on == {"day": ["a"]}
    assert list(plan.to_dict()) == [
        "table",
        "version",
        "partitions",
        "partitions_total",
        "files",
        "files_total",
        "bytes",
        "bytes_total",
        "pruned_on",
        "statements",
    ]
    assert table.scan().to_arrow().num_rows == 0
    assert table.scan().to_pandas().columns.tolist() == ["id", "amount", "day"]
    assert table.scan().to_batches().read_all().num_rows == 0
    collected = table.scan(engine="arrow").collect()
    assert isinstance(collected, lakectl.SnapshotResult) and collected.rows == []
    assert repr(collected).endswith("version=0, columns=['id', 'amount', 'day'], truncated=False)")
    feed = table.changes(from_version=0)
    assert repr(feed) == "Changes(from_version=0)"
    assert repr(feed.scd2()) == "SCD2(from_version=0)"
    assert table.changes(from_version=0).plan().versions == []


def test_listings_hold_datetimes_and_convert_to_pandas(table: lakectl.Table) -> None:
    table.set_properties({"clean.retain": "2d"})
    history = table.history()
    assert repr(history).endswith(", 2 commits)")
    first = history[0]
    assert isinstance(first.committed_at, dt.datetime)
    assert first.committed_at.tzinfo is not None
    assert history.to_dict()["commits"][0]["committed_at"].endswith("Z")  # JSON keeps ISO text
    assert repr(first).startswith("HistoryEntry(seq=0, operation='create', committed_at='")
    frame = history.to_pandas()
    assert frame.columns.tolist() == list(history.columns)
    assert frame["operation"].tolist() == ["create", "set-properties"]
    assert str(frame["committed_at"].dtype).startswith("datetime64")
    assert table.statements().to_pandas().empty
    assert table.compactions().to_pandas().columns.tolist() == list(lakectl.Compactions.columns)


def test_errors_name_python_arguments_and_the_cli_keeps_its_flags(
    table: lakectl.Table, lakectl_cli: Callable[..., CliRun]
) -> None:
    with pytest.raises(lakectl.UnknownColumnError) as unknown:
        table.scan(columns=["nope"]).to_arrow()
    assert unknown.value.message.startswith("columns=: unknown column(s) nope")
    assert "--" not in str(unknown.value)
    with pytest.raises(lakectl.UsageError, match=r"^version= and known_at= cannot be combined"):
        table.scan(version=0, known_at="2024-01-01").plan()
    with pytest.raises(lakectl.UsageError, match=r"^as_of=: "):
        table.scan(as_of="yesterday-ish")
    with pytest.raises(lakectl.UsageError, match=r"engine='duck': use 'spark' or 'arrow'"):
        table.scan(engine="duck")  # type: ignore[arg-type]
    with pytest.raises(lakectl.UsageError, match=r"use to_arrow\(\)"):
        table.scan(engine="arrow").to_spark()
    unkeyed = lakectl.create_table(str(Path(table.location[7:]).parent / "u"), schema="a int")
    with pytest.raises(lakectl.UsageError, match=r"^scd2\(\) needs a table with a primary key"):
        unkeyed.changes().scd2().to_arrow()
    cli = lakectl_cli(
        "snapshot", table.location, "--columns", "nope", "--engine", "arrow", "--json"
    )
    assert cli.code == 65 and cli.json["error"]["message"].startswith("--columns: unknown")


@pytest.mark.parametrize(
    ("text", "python"),
    [
        ("--as-of: bad time", "as_of=: bad time"),
        ("use --engine spark", "use engine='spark'"),
        (
            "--format orc is a file format: give --out PATH",
            "format='orc' is a file format: give write(path)",
        ),
        ("retry with --dry-run or --force", "retry with dry_run=True or force=True"),
        ("--version 3 and --known-at", "version=3 and known_at="),
        ("--scd2 needs a key", "scd2() needs a key"),
        ("lakectl history lists versions", "lakectl history lists versions"),
        (
            "add --evolve, or run `lakectl alter T --add-column c`",
            "add evolve=True, or run `lakectl alter T --add-column c`",
        ),
    ],
)
def test_flags_in_messages_become_python_arguments(text: str, python: str) -> None:
    assert python_text(text) == python


def test_show_counts_rows_exactly_without_data(table: lakectl.Table) -> None:
    shown = table.show()
    assert shown.totals == {"rows": 0, "bytes": 0}
    assert repr(shown) == (
        f"ShowResult({shown.table!r}, kind='lakectl', version=0, primary_key=['id'], "
        "partition_by=['day'])"
    )
