"""SCD2 validity from ``load --effective-from``: a load that names when its rows took effect
opens and closes versions at that time; other loads at their commit time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import lakectl

UTC = dt.UTC


def _csv(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(["id,note", *lines]) + "\n")
    return str(path)


def _utc(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (r["id"], r["note"], _utc(r["valid_from"]), _utc(r["valid_to"]), r["is_current"])
        for r in rows
    )


def test_scd2_validity_follows_effective_from(tmp_path: Path, spark: Any) -> None:
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, note string", primary_key="id"
    )
    table.load(_csv(tmp_path / "1.csv", ["1,one", "2,two"]), effective_from="2020-01-01")
    table.load(_csv(tmp_path / "2.csv", ["1,uno"]), effective_from="2020-06-01")
    third = table.load(_csv(tmp_path / "3.csv", ["2,dos"]))
    committed = {h.version: h.committed_at for h in table.history() if h.version is not None}
    jan, jun = dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 6, 1, tzinfo=UTC)
    now = committed[third.version]
    expected = [
        (1, "one", jan, jun, False),
        (1, "uno", jun, None, True),
        (2, "dos", now, None, True),
        (2, "two", jan, now, False),
    ]
    assert _rows([r.asDict() for r in table.changes().scd2().to_spark().collect()]) == expected
    assert _rows(table.changes().scd2().to_arrow().to_pylist()) == expected
    # The change feed itself keeps the commit times (transaction time).
    feed = table.changes(from_version=0).to_arrow().to_pylist()
    assert {_utc(r["_commit_time"]).year for r in feed} == {now.year}
