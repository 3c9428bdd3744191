"""Choosing the engine of a job: what is asked for, what the Arrow engine can do, the size."""

from __future__ import annotations

import pytest

from lakectl.config import load_config
from lakectl.engine import Engine, choose_engine
from lakectl.errors import UsageError
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema

META = TableMetadata(parse_schema("id bigint, v string"), primary_key=("id",))


def test_spark_and_arrow_are_taken_as_asked():
    assert choose_engine("spark", work_bytes=1, meta=META).engine is Engine.SPARK
    assert choose_engine(Engine.ARROW, work_bytes=10**12, meta=META).arrow


def test_arrow_for_a_job_it_cannot_run_is_refused_naming_why():
    with pytest.raises(UsageError, match="cannot run this: a bucketed table") as err:
        choose_engine("arrow", work_bytes=1, meta=META, arrow_unsupported="a bucketed table")
    assert "--engine spark" in (err.value.hint or "")


def test_auto_picks_arrow_up_to_the_table_property_and_says_why():
    small = choose_engine("auto", work_bytes=10 * 1024**2, meta=META)
    assert small.engine is Engine.ARROW and "engine.auto.max-bytes=256.0 MB" in small.reason
    big = choose_engine("auto", work_bytes=300 * 1024**2, meta=META)
    assert big.engine is Engine.SPARK and "more than" in big.reason
    lowered = META.with_properties({"engine.auto.max-bytes": "1MB"})
    assert choose_engine("auto", work_bytes=2 * 1024**2, meta=lowered).engine is Engine.SPARK
    refused = choose_engine("auto", work_bytes=1, meta=META, arrow_unsupported="a map key")
    assert refused.engine is Engine.SPARK and "a map key" in refused.reason


def test_a_table_cannot_raise_auto_past_the_readers_ceiling():
    huge = META.with_properties({"engine.auto.max-bytes": "1TB"})
    with pytest.warns(UserWarning, match="ceiling"):
        choice = choose_engine("auto", work_bytes=100 * 1024**3, meta=huge)
    assert choice.engine is Engine.SPARK


def test_the_configured_engine(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config().engine == "spark"
    monkeypatch.setenv("LAKECTL_ENGINE", "Arrow")
    assert load_config().engine == "arrow"
    monkeypatch.setenv("LAKECTL_ENGINE", "duckdb")
    with pytest.raises(UsageError, match="engine in LAKECTL_ENGINE 'duckdb': unknown engine"):
        load_config()
