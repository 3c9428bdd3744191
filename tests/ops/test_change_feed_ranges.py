"""The change feed is a fact about each commit: a commit's rows are the same in every range that
contains it, restore, compaction, alter and materialize commits included, and applying a range's
feed to the older snapshot gives the newer one. Type 7 statements change stored rows only when
materialized: installing one adds no change rows, so the snapshots compared are those with no
active statement.

Random small histories (CDC loads, a delete, a restore to an earlier version, a major
compaction, an added and a widened column, statements folded into the data) are written with
Spark; the feeds and snapshots are read with the Arrow engine, and a few ranges with Spark's feed
as well, which must equal the Arrow feed commit for commit (the same rule, run in Spark's tasks).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lakectl
from tests.support.change_batches import CDC_ARGS, COLUMNS, SCHEMA, write_change_batch
from tests.support.cli import CliRun

Row = tuple[Any, ...]
REMOVES = ("delete", "update_preimage")


def _rows(table: Any) -> list[dict[str, Any]]:
    return table.to_pylist() if hasattr(table, "to_pylist") else [r.asDict() for r in table]


def _snapshot(table: lakectl.Table, version: int) -> Counter[Row]:
    if version == 0:
        return Counter()
    rows = table.scan(version=version).to_arrow().select(list(COLUMNS))
    return Counter(tuple(r[c] for c in COLUMNS) for r in rows.to_pylist())


def _per_commit(feed: list[dict[str, Any]]) -> dict[int, Counter[tuple[str, Row]]]:
    out: dict[int, Counter[tuple[str, Row]]] = {}
    for change in feed:
        row = tuple(change[c] for c in COLUMNS)
        out.setdefault(change["_commit_version"], Counter())[(change["_change_type"], row)] += 1
    return out


def _applied(older: Counter[Row], feed: list[dict[str, Any]]) -> Counter[Row]:
    """The feed applied commit by commit; each removed row must be live when it is removed."""
    state = Counter(older)
    commits = _per_commit(feed)
    for version in sorted(commits):
        for (kind, row), n in commits[version].items():
            if kind in REMOVES:
                assert state[row] >= n, (version, kind, row)
                state[row] -= n
        for (kind, row), n in commits[version].items():
            if kind not in REMOVES:
                state[row] += n
    return +state


def _history(
    tmp_path: Path, spark: Any, lakectl_cli: Callable[..., CliRun], seed: int
) -> lakectl.Table:
    """A small random history: loads, a delete, a restore, a load, a major compaction, an
    alter (a column added, one widened), a statement installed and folded into the data, a load."""
    rng = random.Random(seed)
    root = tmp_path / f"t{seed}"
    table = lakectl.create_table(
        str(root), schema=SCHEMA, primary_key="id", partition_by="region", spark=spark
    )

    def load(n: int) -> None:
        batch = tmp_path / f"b{seed}-{n}.csv"
        write_change_batch(batch, rng, n, keys=12)
        done = lakectl_cli("load", root, batch, *CDC_ARGS, "--engine", "arrow", "--json")
        assert done.code == 0, done.out

    for n in range(1, 4):
        load(n)
    assert lakectl_cli("delete", root, "--where", f"qty < {rng.randint(2, 5)}").code == 0
    table.restore(rng.choice([1, 2]))
    load(4)
    table.compact("major", engine="arrow")
    table.alter("bonus int default 7", widen="qty bigint")
    statements = tmp_path / f"s{seed}.updates"
    statements.write_text(
        f"-- time=2020-01-01\nUPDATE t SET note = 'fixed' WHERE qty > {rng.randint(3, 6)};\n"
    )
    table.apply_updates(str(statements))
    table.materialize(until="2021-01-01")
    load(5)
    return table


@pytest.mark.parametrize("seed", [3])
def test_each_commit_has_the_same_rows_in_every_range(
    tmp_path: Path, spark: Any, lakectl_cli: Callable[..., CliRun], seed: int
) -> None:
    table = _history(tmp_path, spark, lakectl_cli, seed)
    history = table.history()
    operations = {e.version: e.operation for e in history if e.version is not None}
    done = {e.operation for e in history}
    assert {"restore", "compact", "alter", "materialize"} <= done, operations
    versions = [0, *sorted(operations)]
    snapshots = {v: _snapshot(table, v) for v in versions}
    # Versions read with a statement active (installed, not yet materialized).
    overlaid = {v for v, op in operations.items() if op == "apply-updates"}
    seen: dict[int, tuple[tuple[int, int], Counter[tuple[str, Row]]]] = {}
    for i, start in enumerate(versions):
        for end in versions[i + 1 :]:
            feed = _rows(table.changes(from_version=start, to_version=end).to_arrow())
            if not {start, end} & overlaid:
                assert _applied(snapshots[start], feed) == snapshots[end], (start, end)
            commits = _per_commit(feed)
            for version in (v for v in versions if start < v <= end):
                rows = commits.get(version, Counter())
                first = seen.setdefault(version, ((start, end), rows))
                assert rows == first[1], (version, operations[version], first[0], (start, end))
    restored = next(v for v, op in operations.items() if op == "restore")
    assert seen[restored][1], "the restore commit changed no row"
    folded = next(v for v, op in operations.items() if op == "materialize")
    assert {kind for kind, _ in seen[folded][1]} == {"update_preimage", "update_postimage"}
    # Spark's feed is the Arrow feed, computed by the same code in Spark tasks (no join over
    # events): every commit's rows, from the oldest start, one before the restore and the
    # newest but one.
    for start in (0, restored - 1, versions[-2]):
        frame = table.changes(from_version=start).to_spark()
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert "MapInArrow" in plan and "Join" not in plan, plan
        feed = _per_commit(_rows(frame.collect()))
        assert feed == {v: seen[v][1] for v in versions if v > start and seen[v][1]}, start


def test_a_restored_update_is_one_pair_from_any_start(
    tmp_path: Path, spark: Any, lakectl_cli: Callable[..., CliRun]
) -> None:
    """A key updated after version 1 and a key deleted after it, then the table restored to
    version 1: the restore puts back the key's old row (one update pair) and re-inserts the
    deleted key (one insert), whether the range starts before the update or after it."""
    root = tmp_path / "t"
    table = lakectl.create_table(str(root), schema=SCHEMA, primary_key="id", spark=spark)

    def load(name: str, lines: list[str]) -> None:
        path = tmp_path / name
        path.write_text("\n".join(["op_code,id,change_ts,note,qty,region", *lines]) + "\n")
        assert lakectl_cli("load", root, path, *CDC_ARGS, "--engine", "arrow", "--json").code == 0

    load("1.csv", ["I,17,1,old,1,a", "I,18,1,kept,1,a", "I,19,1,gone,1,a"])
    load("2.csv", ["U,17,2,new,2,a", "D,19,2,,,"])
    table.restore(1)
    restore = table.version
    expected = Counter(
        {
            ("update_preimage", (17, 2, "new", 2, "a")): 1,
            ("update_postimage", (17, 1, "old", 1, "a")): 1,
            ("insert", (19, 1, "gone", 1, "a")): 1,
        }
    )
    for start in (0, 1, 2):
        feed = _rows(table.changes(from_version=start).to_arrow())
        assert _per_commit(feed)[restore] == expected, start
    spark_feed = _rows(table.changes(from_version=0).to_spark().collect())
    assert _per_commit(spark_feed)[restore] == expected
