"""Differential test: ``apply_statements`` on Spark equals DuckDB running the same statements.

Random tables (every supported type, NULLs included) and random UPDATE/DELETE sequences with
random effective times are written as a ``.updates`` text, parsed, and read at random ``--as-of``
times. The statements effective by then are applied with Spark and, transpiled by sqlglot, executed
in order by DuckDB on the same rows; the results must match.

The generator keeps to what both engines define the same way: fractional values are multiples of
1/4 (exact in float, double and decimal), integer values stay far from overflow (SET values are
reduced modulo a bound), divisors are non-zero literals, no fractional value is stored into an
integer column (Spark truncates, DuckDB rounds).
"""

from __future__ import annotations

import random

import pytest

from lakectl.updates import parse_updates_text, statements_effective_at
from tests.support.statement_fuzz import (
    SCHEMA,
    SEEDS,
    assert_same,
    duckdb_result,
    random_rows,
    spark_result,
    updates_text,
)


@pytest.mark.parametrize("seed", SEEDS)
def test_spark_matches_duckdb(spark, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    rows = random_rows(rng)
    text = updates_text(rng, rng.randint(8, 22))
    statements = parse_updates_text(text, f"seed{seed}.updates", schema=SCHEMA).statements
    as_of_times = {-1, 10**15, *rng.sample([0, 50, 100, 150, 200, 250, 300, 350], 2)}
    for as_of in sorted(as_of_times):
        effective = statements_effective_at(statements, as_of)
        context = f"seed {seed}, as of {as_of}, statements:\n" + "\n".join(s.sql for s in effective)
        assert_same(spark_result(spark, rows, effective), duckdb_result(rows, effective), context)


def test_generator_covers_the_statement_kinds() -> None:
    """Guard the differential test itself: the random files use every construct it targets."""
    text = "".join(updates_text(random.Random(seed), 22) for seed in SEEDS)
    for needle in ("DELETE", "UPDATE", "CASE WHEN", " IN (", "NOT IN", "BETWEEN", "LIKE", "IS NULL",
                   "IS NOT NULL", "<=>", "coalesce", "concat_ws", "date_add", "date_sub", "round(",
                   "NULL)", "-- time=", " OR ", "NOT ("):  # fmt: skip
        assert needle in text, needle
