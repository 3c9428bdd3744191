"""The change feed (``lakectl changes``, ``Table.changes``), checked differentially.

Random CDC histories are loaded through lakectl; for pairs of versions, the feed applied in
version order to the older snapshot must give the newer snapshot, and its net effect per key
must equal DuckDB's diff of the two snapshots (rows only in the older one deleted, only in the
newer one inserted, changed ones updated with their old values as pre-images).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

import lakectl
from lakectl.ops.results import millis
from tests.support.change_batches import CDC_ARGS, COLUMNS, SCHEMA, write_change_batch
from tests.support.cli import CliRun

Row = tuple[Any, ...]


def _rows(frame: Any) -> list[dict[str, Any]]:
    """A Spark DataFrame's rows, or a pyarrow table's."""
    if hasattr(frame, "to_pylist"):
        return list(frame.to_pylist())
    return [r.asDict() for r in frame.collect()]


def _by_key(rows: list[dict[str, Any]]) -> dict[int, Row]:
    out = {r["id"]: tuple(r[c] for c in COLUMNS) for r in rows}
    assert len(out) == len(rows), "a key appears twice in a snapshot"
    return out


def _apply(older: dict[int, Row], changes: list[dict[str, Any]]) -> dict[int, Row]:
    """The feed applied in version order; every pre-image must be the row it replaces."""
    state = dict(older)
    rank = {"delete": 0, "update_preimage": 1, "update_postimage": 2, "insert": 3}
    for change in sorted(changes, key=lambda c: (c["_commit_version"], rank[c["_change_type"]])):
        row = tuple(change[c] for c in COLUMNS)
        if change["_change_type"] in ("delete", "update_preimage"):
            assert state.pop(row[0]) == row
        else:
            assert row[0] not in state
            state[row[0]] = row
    return state


def _net(changes: list[dict[str, Any]]) -> set[tuple[str, Row]]:
    """Per key, the first pre-image and the last post-image of the range, as a diff would
    show them (a key changed back to its old values shows no change)."""
    first: dict[int, Row | None] = {}
    last: dict[int, Row | None] = {}
    rank = {"delete": 0, "update_preimage": 1, "update_postimage": 2, "insert": 3}
    for change in sorted(changes, key=lambda c: (c["_commit_version"], rank[c["_change_type"]])):
        row = tuple(change[c] for c in COLUMNS)
        key = row[0]
        if change["_change_type"] in ("delete", "update_preimage"):
            first.setdefault(key, row)
            last[key] = None
        else:
            first.setdefault(key, None)
            last[key] = row
    return _diff_kinds({k: (first[k], last[k]) for k in first})


def _diff_kinds(pairs: dict[int, tuple[Row | None, Row | None]]) -> set[tuple[str, Row]]:
    out: set[tuple[str, Row]] = set()
    for old, new in pairs.values():
        if old == new:
            continue
        if old is not None and new is not None:
            out |= {("update_preimage", old), ("update_postimage", new)}
        elif old is not None:
            out.add(("delete", old))
        elif new is not None:
            out.add(("insert", new))
    return out


def _duckdb_diff(older: dict[int, Row], newer: dict[int, Row]) -> set[tuple[str, Row]]:
    """The independent engine: a full outer join of the two snapshots on the key."""
    db = duckdb.connect()
    ddl = "id BIGINT, change_ts BIGINT, note VARCHAR, qty INTEGER, region VARCHAR"
    for name, rows in (("a", older), ("b", newer)):
        db.execute(f"CREATE TABLE {name} ({ddl})")
        if rows:
            db.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?)", list(rows.values()))
    cols = ", ".join(f"{{t}}.{c}" for c in COLUMNS)
    query = f"""
        SELECT 'delete', {cols.format(t="a")} FROM a ANTI JOIN b USING (id)
        UNION ALL SELECT 'insert', {cols.format(t="b")} FROM b ANTI JOIN a USING (id)
        UNION ALL SELECT 'update_preimage', {cols.format(t="a")} FROM a JOIN b USING (id)
            WHERE (a.change_ts, a.note, a.qty, a.region)
                IS DISTINCT FROM (b.change_ts, b.note, b.qty, b.region)
        UNION ALL SELECT 'update_postimage', {cols.format(t="b")} FROM a JOIN b USING (id)
            WHERE (a.change_ts, a.note, a.qty, a.region)
                IS DISTINCT FROM (b.change_ts, b.note, b.qty, b.region)
    """
    return {(kind, tuple(rest)) for kind, *rest in db.execute(query).fetchall()}


def test_feed_between_versions_matches_the_snapshots(
    tmp_path: Path, spark: Any, lakectl_cli: Callable[..., CliRun]
) -> None:
    rng = random.Random(1)
    root = tmp_path / "t"
    table = lakectl.create_table(
        str(root), schema=SCHEMA, primary_key="id", partition_by="region", spark=spark
    )
    for batch_no in range(1, 6):
        batch = tmp_path / f"b{batch_no}.csv"
        write_change_batch(batch, rng, batch_no, keys=30)
        done = lakectl_cli("load", root, batch, *CDC_ARGS, "--engine", "arrow", "--json")
        assert done.code == 0, done.out
    done = lakectl_cli("delete", root, "--where", "qty = 3", "--json")
    assert done.code == 0, done.out
    newest = table.version
    # The snapshots are read with pyarrow (no Spark job per version); the newest also with Spark.
    snapshots = {
        v: _by_key(table.scan(version=v).to_arrow().to_pylist()) for v in range(1, newest + 1)
    }
    assert _by_key(_rows(table.scan().to_spark())) == snapshots[newest]
    snapshots[0] = {}
    # Every range's feed is read with pyarrow; the whole history's also with Spark (the two
    # engines' feeds are equal for every range: tests/arrow/test_arrow_change_feed.py).
    pairs = [(0, newest), (newest - 1, newest), *[(a, a + 1) for a in range(0, newest - 1)]]
    pairs.append((1, newest - 1))
    feeds = [table.changes(from_version=a, to_version=b).to_arrow().to_pylist() for a, b in pairs]
    pairs.append((0, newest))
    feeds.append(_rows(table.changes(from_version=0, to_version=newest).to_spark()))
    kinds = set()
    for (a, b), changes in zip(pairs, feeds, strict=True):
        kinds |= {c["_change_type"] for c in changes}
        assert {c["_commit_version"] for c in changes} <= set(range(a + 1, b + 1))
        assert _apply(snapshots[a], changes) == snapshots[b], (a, b)
        assert _net(changes) == _duckdb_diff(snapshots[a], snapshots[b]), (a, b)
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
    times = {e.version: millis(e.committed_at) for e in table.history() if e.version is not None}
    expected = _scd2_oracle(snapshots, times)
    assert _scd2_of(table.changes().scd2().to_spark()) == expected
    assert _scd2_of(table.changes().scd2().to_arrow()) == expected
    assert any(to is not None for _, _, to in expected)  # some versions were replaced
    older = _scd2_oracle({v: snapshots[v] for v in range(newest)}, times)
    assert _scd2_of(table.changes(to_version=newest - 1).scd2().to_arrow()) == older


def _scd2_oracle(
    snapshots: dict[int, dict[int, Row]], times: dict[int, int]
) -> set[tuple[Row, int, int | None]]:
    """Type 2 rows from the snapshot after each version: a key's row opens when it appears or
    changes and closes when it changes or goes, at that version's commit time."""
    current: dict[int, tuple[Row, int]] = {}
    out: set[tuple[Row, int, int | None]] = set()
    for version in sorted(v for v in snapshots if v > 0):
        rows, at = snapshots[version], times[version]
        for key in sorted(set(current) | set(rows)):
            before, after = current.get(key), rows.get(key)
            if before is not None and before[0] == after:
                continue
            if before is not None:
                out.add((before[0], before[1], at))
                del current[key]
            if after is not None:
                current[key] = (after, at)
    return out | {(row, start, None) for row, start in current.values()}


def _millis(value: Any) -> int | None:
    """Spark's timestamps come back as naive local date-times."""
    return None if value is None else round(value.timestamp() * 1000)


def _scd2_of(frame: Any) -> set[tuple[Row, int, int | None]]:
    out = set()
    for row in _rows(frame):
        assert row["is_current"] is (row["valid_to"] is None)
        valid_from = _millis(row["valid_from"])
        assert valid_from is not None
        out.add((tuple(row[c] for c in COLUMNS), valid_from, _millis(row["valid_to"])))
    return out


def _load(lakectl_cli: Callable[..., CliRun], root: Path, path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(["op_code,id,change_ts,note,qty,region", *lines]) + "\n")
    done = lakectl_cli("load", root, path, *CDC_ARGS, "--engine", "arrow", "--json")
    assert done.code == 0, done.out


def test_changes_command(tmp_path: Path, spark: Any, lakectl_cli: Callable[..., CliRun]) -> None:
    root = tmp_path / "t"
    assert lakectl_cli("create", root, "--schema", SCHEMA, "--primary-key", "id").code == 0
    _load(lakectl_cli, root, tmp_path / "1.csv", ["I,1,1,one,1,a", "I,2,1,two,2,a"])
    _load(lakectl_cli, root, tmp_path / "2.csv", ["U,1,2,uno,1,b", "D,2,2,,,"])
    result = lakectl_cli("changes", root, "--from-version", 1, "--json")
    assert result.code == 0, result.out
    body = result.json
    assert (body["from_version"], body["to_version"], body["versions"]) == (1, 2, [2])
    assert body["columns"] == [*COLUMNS, "_change_type", "_commit_version", "_commit_time"]
    rows = [
        (r["_change_type"], r["id"], r["note"], r["region"], r["_commit_version"])
        for r in body["rows"]
    ]
    assert rows == [
        ("update_preimage", 1, "one", "a", 2),
        ("update_postimage", 1, "uno", "b", 2),
        ("delete", 2, "two", "a", 2),
    ]
    text = lakectl_cli("changes", root, "--from-version", 0, "--to-version", 1, "--format", "csv")
    assert text.code == 0
    assert text.out.splitlines()[0] == ",".join(
        [*COLUMNS, "_change_type", "_commit_version", "_commit_time"]
    )
    assert sorted(line.split(",")[5] for line in text.out.splitlines()[1:]) == ["insert"] * 2
    out = tmp_path / "feed"
    written = lakectl_cli("changes", root, "--from-version", 0, "--out", out, "--json")
    assert written.json["rows_written"] == 5
    assert spark.read.parquet(str(out)).count() == 5

    scd2 = lakectl_cli("changes", root, "--scd2", "--json")
    assert scd2.json["columns"] == [*COLUMNS, "valid_from", "valid_to", "is_current"]
    assert [(r["id"], r["note"], r["is_current"]) for r in scd2.json["rows"]] == [
        (1, "one", False),
        (1, "uno", True),
        (2, "two", False),
    ]
    missing = lakectl_cli("changes", root, "--json")
    assert missing.code == 2
    assert missing.json["error"]["message"] == (
        "give exactly one of --from-version and --from-time"
    )
    # After a major compaction and a clean, the first versions' files are gone.
    assert lakectl_cli("compact", root, "--major", "--engine", "arrow", "--json").code == 0
    assert lakectl_cli("clean", root, "--retain", "0s", "--force", "--json").code == 0
    gone = lakectl_cli("changes", root, "--from-version", 0, "--json")
    assert gone.code == 67, gone.out
    assert gone.json["error"]["message"] == (
        "the changes of version(s) 1, 2 are no longer available: a compaction merged their "
        "files and clean removed them"
    )
    assert lakectl_cli("changes", root, "--from-version", 2, "--json").json["rows"] == []
    # SCD2 starts at the oldest version kept, its live rows valid from its time
    for engine in ("spark", "arrow"):
        kept = lakectl_cli("changes", root, "--scd2", "--engine", engine, "--json")
        assert kept.code == 0, kept.out
        assert kept.json["from_version"] == 2
        assert [
            (r["id"], r["note"], r["valid_to"], r["is_current"]) for r in kept.json["rows"]
        ] == [(1, "uno", None, True)]
        assert kept.json["rows"][0]["valid_from"] == scd2.json["rows"][1]["valid_from"]
    human = lakectl_cli("changes", root, "--scd2")
    assert "starts at version 2, the oldest one clean kept" in human.err
    both = lakectl_cli("changes", root, "--scd2", "--from-version", 1, "--json")
    assert both.code == 2
    assert both.json["error"]["message"] == (
        "--scd2 covers the whole history: give no --from-version or --from-time"
    )
