"""The Python API against the CLI: the same table operations through both give the same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import lakectl

REPO = Path(__file__).resolve().parents[2]
SALES = REPO / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, store_id string, create_date string"
)
CDC = {"mode": "cdc", "op_column": "op_code", "order_by": "change_ts"}
CDC_FLAGS = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
BATCHES = ("base.csv", "cdc_batch_1.csv", "cdc_batch_2.csv")


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["sell_id"])


def _frame_rows(df: Any) -> list[dict[str, Any]]:
    return _sorted([r.asDict() for r in df.collect()])


@pytest.fixture(scope="module")
def twins(tmp_path_factory, spark, lakectl_cli):
    """The sample sales table made twice: through the API and through the CLI."""
    root = tmp_path_factory.mktemp("api")
    api_table = lakectl.create_table(
        str(root / "api_sales"),
        schema=SCHEMA,
        primary_key=["sell_id"],
        partition_by="create_date",
    )
    cli_path = root / "cli_sales"
    created = lakectl_cli(
        "create",
        cli_path,
        "--schema",
        SCHEMA,
        "--primary-key",
        "sell_id",
        "--partition-by",
        "create_date",
        "--json",
    )
    assert created.code == 0, created.err
    api_results, cli_results = [], []
    for batch in BATCHES:
        flags = CDC_FLAGS if batch != "base.csv" else ("--mode", "cdc", "--op-column", "op_code")
        kwargs = CDC if batch != "base.csv" else {"mode": "cdc", "op_column": "op_code"}
        api_results.append(api_table.load(str(SALES / batch), **kwargs, engine="arrow"))
        run = lakectl_cli("load", cli_path, SALES / batch, *flags, "--engine", "arrow", "--json")
        assert run.code == 0, run.err
        cli_results.append(run.json)
    return api_table, cli_path, api_results, cli_results


def test_loads_report_what_the_cli_reports(twins) -> None:
    _, _, api_results, cli_results = twins
    for api, cli in zip(api_results, cli_results, strict=True):
        assert api.counts == cli["counts"]
        assert api.version == cli["version"]
        assert (api.inserted, api.updated, api.deleted, api.ignored) == (
            cli["counts"]["inserted"],
            cli["counts"]["updated"],
            cli["counts"]["deleted"],
            cli["counts"]["ignored"],
        )
    # The sample's second batch: 1 insert, 20 updates, 5 deletes, 4 late changes ignored.
    assert (api_results[2].inserted, api_results[2].updated) == (1, 20)
    assert (api_results[2].deleted, api_results[2].ignored) == (5, 4)


def test_to_spark_reads_what_snapshot_prints(twins, lakectl_cli) -> None:
    table, cli_path, _, _ = twins
    for version in (None, 1, 2):
        flags = () if version is None else ("--version", version)
        cli = lakectl_cli("snapshot", cli_path, *flags, "--json")
        assert cli.code == 0, cli.err
        assert _frame_rows(table.scan(version=version).to_spark()) == _sorted(cli.json["rows"])
    where = "store_id = 'S01' AND total_amt > 100"
    cli = lakectl_cli(
        "snapshot", cli_path, "--where", where, "--columns", "sell_id,total_amt", "--json"
    )
    df = table.scan(where=where, columns=["sell_id", "total_amt"]).to_spark()
    assert df.columns == ["sell_id", "total_amt"]
    assert _frame_rows(df) == _sorted(cli.json["rows"])
    assert df.count() > 0


def test_to_spark_is_lazy_and_composes(twins, spark) -> None:
    table = twins[0]
    df = table.scan().to_spark()
    assert df.sparkSession is spark
    per_store = {
        r["store_id"]: r["n"]
        for r in df.groupBy("store_id").count().withColumnRenamed("count", "n").collect()
    }
    assert sum(per_store.values()) == df.count()


def test_metadata_without_spark(twins, lakectl_cli) -> None:
    table, cli_path, _, _ = twins
    assert table.version == 3
    assert table.primary_key == ("sell_id",)
    assert table.partition_by == ("create_date",)
    assert table.schema.names[0] == "sell_id"
    history = [e.to_dict() for e in table.history()]
    cli_history = lakectl_cli("history", cli_path, "--json").json["commits"]
    assert [h["operation"] for h in history] == [h["operation"] for h in cli_history]
    assert [h["counts"] for h in history] == [h["counts"] for h in cli_history]
    assert [e.to_dict() for e in table.history(limit=1)] == history[-1:]
    show = lakectl_cli("show", cli_path, "--json").json
    assert [p.to_dict()["rows"] for p in table.partitions()] == [
        p["rows"] for p in show["partitions"]
    ]
    assert table.properties == show["properties"]


def test_compact_and_clean_match_the_cli(twins, lakectl_cli) -> None:
    table, cli_path, _, _ = twins
    before = _frame_rows(table.scan().to_spark())
    plan = table.compact("major", dry_run=True)
    cli_plan = lakectl_cli("compact", cli_path, "--major", "--dry-run", "--json").json
    assert plan.to_dict()["partitions"] == cli_plan["partitions"]
    done = table.compact("major")
    cli_done = lakectl_cli("compact", cli_path, "--major", "--json").json
    assert len(done.chosen) == len(cli_done["partitions"]) > 0
    assert table.version == 3  # a compaction adds no version of the data
    assert _frame_rows(table.scan().to_spark()) == before
    assert table.compactions()[-1].state == "ready for cleaning"
    dry = table.clean(dry_run=True).to_dict()["plan"]
    cli_dry = lakectl_cli("clean", cli_path, "--dry-run", "--json").json["plan"]
    assert [i["kind"] for i in dry["delete"]] == [i["kind"] for i in cli_dry["delete"]]

    def reasons(items: list[dict[str, Any]]) -> list[str]:
        return [i["reason"].split(" (until")[0] for i in items]

    assert reasons(dry["keep"]) == reasons(cli_dry["keep"])
    assert dry["keep"], "the compacted inputs stay inside the retention window"


def test_properties_and_statements(twins, tmp_path) -> None:
    table = twins[0]
    changed = table.set_properties({"compactor.delta.num.threshold": 20})
    assert changed.changed == {"compactor.delta.num.threshold": "20"}
    assert table.properties["compactor.delta.num.threshold"] == "20"
    statements = tmp_path / "fix.updates"
    statements.write_text(
        "-- time=2024-01-01\nUPDATE sales SET status_id = 'FIXED' WHERE sell_id = 3;\n"
    )
    installed = table.apply_updates(str(statements))
    assert installed.installed == 1
    assert [u.statement.sql for u in table.statements()][-1].startswith("UPDATE")
    now = _frame_rows(table.scan(where="sell_id = 3").to_spark())
    raw = _frame_rows(table.scan(where="sell_id = 3", as_of=-1).to_spark())
    assert [r["status_id"] for r in now] == ["FIXED"]
    assert len(raw) == 1 and raw[0]["status_id"] != "FIXED"


def test_load_a_dataframe(spark, tmp_path) -> None:
    table = lakectl.create_table(
        str(tmp_path / "people"), schema="id bigint, name string", primary_key="id"
    )
    first = table.load(spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string"))
    second = table.load(spark.createDataFrame([(2, "B"), (3, "c")], "id long, name string"))
    assert (first.inserted, second.inserted, second.updated) == (2, 1, 1)
    assert second.version == 2
    rows = sorted((r["id"], r["name"]) for r in table.scan().to_spark().collect())
    assert rows == [(1, "a"), (2, "B"), (3, "c")]
    assert table.history()[-1].info.get("source") == "DataFrame"


def test_stream_applies_landed_files_as_loads_do(twins, tmp_path) -> None:
    """Table.stream over a landing directory holding the three batches, one micro-batch each,
    ends with the rows of the table loaded batch by batch."""
    api_table, _, _, _ = twins
    landing = tmp_path / "landing"
    landing.mkdir()
    table = lakectl.create_table(
        str(tmp_path / "streamed"), schema=SCHEMA, primary_key="sell_id", partition_by="create_date"
    )
    for number, batch in enumerate(BATCHES):
        (landing / f"{number}_{batch}").write_bytes((SALES / batch).read_bytes())
    events: list[str] = []
    result = table.stream(
        str(landing),
        format="csv",
        max_files_per_batch=1,
        max_batches=3,
        trigger="200ms",
        compact=False,
        on_event=events.append,
        **CDC,
    )
    assert result.stopped_by == "max-batches" and result.status.batches == 3
    assert len(table.history()) == 1 + 3  # the creation, then one commit per micro-batch
    assert _frame_rows(table.scan().to_spark()) == _frame_rows(api_table.scan(version=3).to_spark())
    assert events  # progress reaches the caller


def test_errors_are_lakectl_errors(tmp_path) -> None:
    missing = lakectl.open_table(str(tmp_path / "nope"))
    with pytest.raises(lakectl.TableNotFoundError):
        missing.history()
    with pytest.raises(lakectl.TableExistsError):
        lakectl.create_table(str(tmp_path / "t"), schema="a int")
        lakectl.create_table(str(tmp_path / "t"), schema="a int")
    with pytest.raises(lakectl.UsageError, match="as_of"):
        lakectl.open_table(str(tmp_path / "t")).scan(as_of="yesterday-ish").to_spark()
    assert issubclass(lakectl.UsageError, lakectl.LakectlError)


def test_a_load_into_a_missing_table_or_from_a_missing_source_says_which(tmp_path) -> None:
    """Both before Spark starts: a missing table (with the close name of a table next to it)
    and a missing source (its own error, not the table's)."""
    lakectl.create_table(str(tmp_path / "orders"), schema="id bigint, v string")
    source = tmp_path / "batch.csv"
    source.write_text("id,v\n1,a\n")
    with pytest.raises(lakectl.TableNotFoundError, match=r"did you mean \S*/orders\?") as missing:
        lakectl.open_table(str(tmp_path / "ordrs")).load(str(source), mode="cdc")
    assert "add create=True (with primary_key=, partition_by=" in (missing.value.hint or "")
    assert not (tmp_path / "ordrs").exists()
    nothing = tmp_path / "nothing.csv"
    with pytest.raises(lakectl.SourceNotFoundError, match=f"source {nothing} does not exist"):
        lakectl.open_table(str(tmp_path / "orders")).load(str(nothing), create=True)
    empty = tmp_path / "empty.csv"
    empty.write_text("id,v\n")
    result = lakectl.open_table(str(tmp_path / "new")).load(str(empty), create=True)
    assert (result.status, result.skipped, result.version) == ("empty", True, 0)
    assert not (tmp_path / "new").exists()


def test_names_resolve_under_the_warehouse(tmp_path) -> None:
    table = lakectl.create_table("orders", schema="a int", warehouse=str(tmp_path))
    assert table.name == "orders"
    assert table.location.endswith("/orders")
    assert (tmp_path / "orders" / "_lakectl").is_dir()


def test_the_callers_own_session_is_reused(tmp_path, jvm_processes) -> None:
    """A PySpark application that made its own session: lakectl runs its jobs there and starts
    no second one. A new process, so that no session exists before the application's."""
    settings = (c.partition("=") for c in jvm_processes[1::2])  # each follows a "--conf"
    builder = "".join(f".config({key!r}, {value!r})" for key, _, value in settings)
    script = textwrap.dedent(
        f"""
        import json
        from pyspark.sql import SparkSession
        import lakectl
        from lakectl.spark import session as lakectl_session

        spark = SparkSession.builder.master("local[1]").appName("mine"){builder}.getOrCreate()
        t = lakectl.create_table({str(tmp_path / "t")!r}, schema="id bigint, v string",
                                 primary_key="id")
        t.load(spark.createDataFrame([(1, "x"), (2, "y")], "id long, v string"))
        df = t.scan(where="id = 2").to_spark()
        print(json.dumps({{
            "same": df.sparkSession is spark,
            "app": df.sparkSession.sparkContext.appName,
            "lakectl_started": lakectl_session._session is not None,
            "rows": [r.asDict() for r in df.collect()],
        }}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {
        "same": True,
        "app": "mine",
        "lakectl_started": False,
        "rows": [{"id": 2, "v": "y"}],
    }
