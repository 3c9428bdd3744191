"""``lakectl skew`` against an independent count: DuckDB's GROUP BY over the CSV that was loaded.

Also checks the recommendation against the stated threshold and limit, value combinations of two
columns, ``--partition``, the text rendering (a bar per value) and ``list-bucket --auto`` taking
the recommendation.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import duckdb
import pytest

DAYS = ["2024-03-01", "2024-03-02"]


def _write_csv(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["id", "x", "y", "ds"])
        for i in range(1, 4001):
            ds = DAYS[i % 2]
            # per day a different hot set: the mapping changes daily (seed 004)
            hot = [6, 20, 30] if ds == DAYS[0] else [30, 40, 50]
            roll = rng.random()
            x = rng.choice(hot) if roll < 0.5 else (None if roll < 0.53 else rng.randint(100, 400))
            out.writerow([i, "" if x is None else x, rng.choice("ab"), ds])


@pytest.fixture(scope="module")
def table(tmp_path_factory, spark, lakectl_cli):
    tmp = tmp_path_factory.mktemp("skew")
    source = tmp / "rows.csv"
    _write_csv(source, seed=11)
    path = tmp / "t"
    schema = "id bigint, x int, y string, ds string"
    assert lakectl_cli("create", path, "--schema", schema, "--partition-by", "ds").code == 0
    loaded = lakectl_cli("load", path, source, "--mode", "append", "--json")
    assert loaded.code == 0, loaded.err
    return path, source


def _oracle(source: Path, columns: list[str]) -> dict[str, list[tuple[tuple, int]]]:
    """Per day: (values, count), heaviest first, ties by value (NULL first), via DuckDB."""
    cols = ", ".join(f"CAST({c} AS VARCHAR)" for c in columns)
    rows = (
        duckdb.connect()
        .execute(
            f"SELECT ds, {cols}, count(*) AS n FROM read_csv(?, header=true, "
            "types={'id':'BIGINT','x':'INTEGER','y':'VARCHAR','ds':'VARCHAR'}) "
            f"GROUP BY ALL ORDER BY ds, n DESC, {', '.join(f'{i + 2} NULLS FIRST' for i in range(len(columns)))}",
            [str(source)],
        )
        .fetchall()
    )
    out: dict[str, list[tuple[tuple, int]]] = {}
    for row in rows:
        out.setdefault(f"ds={row[0]}", []).append((tuple(row[1:-1]), row[-1]))
    return out


def test_skew_equals_an_independent_count(table, lakectl_cli):
    path, source = table
    result = lakectl_cli("skew", path, "--column", "x", "--top", "5", "--json")
    assert result.code == 0, result.err
    expected = _oracle(source, ["x"])
    body = result.json
    assert [p["partition"] for p in body["partitions"]] == sorted(expected)
    for part in body["partitions"]:
        groups = expected[part["partition"]]
        total = sum(n for _, n in groups)
        assert part["rows"] == total
        assert part["distinct"] == len(groups)
        assert [(tuple(v["values"]), v["rows"]) for v in part["top"]] == groups[:5]
        assert part["others_share"] == pytest.approx(1 - sum(n for _, n in groups[:5]) / total)
        # The recommendation: non-NULL values with >= 1% of the rows, at most 10.
        wanted = [v for v, n in groups if n / total >= 0.01 and v[0] is not None][:10]
        assert [tuple(v) for v in part["recommended"]] == wanted
    hot = {p["partition"]: {v[0] for v in p["recommended"]} for p in body["partitions"]}
    assert hot == {"ds=2024-03-01": {"6", "20", "30"}, "ds=2024-03-02": {"30", "40", "50"}}


def test_two_columns_one_partition_and_limits(table, lakectl_cli):
    path, source = table
    result = lakectl_cli(
        "skew", path, "--column", "x", "--column", "y", "--partition", f"ds={DAYS[1]}",
        "--top", "3", "--min-share", "0.05", "--max-values", "4", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    (part,) = result.json["partitions"]
    groups = _oracle(source, ["x", "y"])[f"ds={DAYS[1]}"]
    total = sum(n for _, n in groups)
    assert [(tuple(v["values"]), v["rows"]) for v in part["top"]] == groups[:3]
    wanted = [v for v, n in groups if n / total >= 0.05 and None not in v][:4]
    assert [tuple(v) for v in part["recommended"]] == wanted
    assert len(wanted) == 4  # the limit, not the threshold, stopped it


def test_the_arrow_engine_counts_what_spark_counts(table, lakectl_cli):
    path, _ = table
    for columns in (("--column", "x"), ("--column", "x", "--column", "y")):
        done = {
            engine: lakectl_cli("skew", path, *columns, "--top", "50", "--engine", engine, "--json")
            for engine in ("spark", "arrow")
        }
        for engine, result in done.items():
            assert result.code == 0, result.err
            assert (result.json["engine"], result.json["engine_reason"]) == (engine, "asked for")
        assert done["arrow"].json["partitions"] == done["spark"].json["partitions"], columns
        assert [p["rows"] for p in done["arrow"].json["partitions"]] == [2000, 2000]


def test_text_output_and_auto(table, lakectl_cli):
    path, _ = table
    text = lakectl_cli("skew", path, "--column", "x", "--top", "3")
    assert text.code == 0, text.err
    assert "ds=2024-03-01: 2,000 rows" in text.out and "█" in text.out
    assert "(all others)" in text.out and "recommended: " in text.out

    auto = lakectl_cli(
        "list-bucket", path, "--column", "x", "--auto", "--min-share", "0.1", "--json"
    )
    assert auto.code == 0, auto.err
    after = {p["partition"]: p["after"]["values"] for p in auto.json["partitions"]}
    assert {k: sorted(v[0] for v in vs) for k, vs in after.items()} == {
        "ds=2024-03-01": ["20", "30", "6"],
        "ds=2024-03-02": ["30", "40", "50"],
    }
    shown = lakectl_cli("show", path)
    assert "ds=2024-03-02: list-bucketed by x:" in shown.out
    again = lakectl_cli("skew", path, "--column", "x", "--json")  # same figures after the split
    assert [p["rows"] for p in again.json["partitions"]] == [2000, 2000]


def test_skew_refusals(table, lakectl_cli):
    path, _ = table
    cases = [
        (("--column", "ds"), "--column 'ds' is a partition column"),
        (("--column", "x", "--top", "0"), "--top 0: must be at least 1"),
        (("--column", "x", "--min-share", "0"), "--min-share 0: must be in (0, 1]"),
        (("--column", "x", "--partition", "ds=1999-01-01"), "no such partition"),
    ]
    for args, message in cases:
        result = lakectl_cli("skew", path, *args, "--json")
        assert result.code == 2, (args, result.out)
        assert message in result.json["error"]["message"]
