"""``stream`` into a table whose schema changes between micro-batches: added columns with
defaults, a rename, a widening, and ``evolve=True`` for a file that brings a new column."""

from __future__ import annotations

from pathlib import Path

import pytest

import lakectl


def _land(land: Path, name: str, text: str) -> None:
    (land / name).write_text(text)


def _rows(table: lakectl.Table, columns: list[str]) -> list[tuple[object, ...]]:
    spark_rows = sorted(tuple(r[c] for c in columns) for r in table.scan().to_spark().collect())
    arrow_rows = sorted(tuple(r[c] for c in columns) for r in table.scan().to_arrow().to_pylist())
    assert spark_rows == arrow_rows
    return spark_rows


def test_a_stream_follows_the_tables_schema_changes(tmp_path, spark):
    land = tmp_path / "landing"
    land.mkdir()
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, v string, qty int", primary_key="id"
    )
    _land(land, "a.csv", "id,v,qty\n1,a,10\n2,b,20\n")
    first = table.stream(str(land), max_batches=1, trigger="200ms", compact=False)
    assert first.status.files == 1

    table.alter("score int default 5", widen="qty bigint", rename="v=label")
    # one micro-batch of two files: one without the added column (it reads the default),
    # one with it; both name the renamed column by its new name
    _land(land, "b.csv", "id,label,qty\n3,c,30\n1,a2,11\n")
    _land(land, "c.csv", "id,label,qty,score\n4,d,40000000000,9\n")
    second = table.stream(str(land), max_batches=1, trigger="200ms", compact=False)
    assert second.status.batches == 1 and second.status.files == 2
    columns = ["id", "label", "qty", "score"]
    assert _rows(table, columns) == [
        (1, "a2", 11, 5),
        (2, "b", 20, 5),
        (3, "c", 30, 5),
        (4, "d", 40000000000, 9),
    ]

    # a new column: refused without evolve (the stream stops, nothing committed) ...
    _land(land, "d.csv", "id,label,qty,channel\n5,e,50,web\n")
    version = table.version
    with pytest.raises(lakectl.LakectlError) as refused:
        table.stream(str(land), max_batches=1, trigger="200ms", compact=False)
    assert "channel" in str(refused.value)
    assert table.version == version
    # ... and added by a schema commit before the micro-batch with it
    third = table.stream(str(land), max_batches=1, trigger="200ms", compact=False, evolve=True)
    assert third.status.files == 1
    assert [c.name for c in table.schema.columns] == ["id", "label", "qty", "score", "channel"]
    assert _rows(table, ["id", "channel", "score"]) == [
        (1, None, 5),
        (2, None, 5),
        (3, None, 5),
        (4, None, 9),
        (5, "web", 5),
    ]
