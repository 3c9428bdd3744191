"""Type 7 statements installed on a real table loaded with no valid time, read ``--as-of`` random
times, against DuckDB applying the statements effective then to the same rows."""

from __future__ import annotations

import random

import pytest

import lakectl
from lakectl.updates import parse_updates_text, statements_effective_at
from tests.support.statement_fuzz import (
    SCHEMA,
    assert_same,
    by_id,
    duckdb_result,
    random_rows,
    rows_frame,
    updates_text,
)


@pytest.mark.parametrize("seed", [101, 202, 303])
def test_as_of_reads_of_a_table_equal_duckdb(spark, tmp_path, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    rows = random_rows(rng)
    table = lakectl.create_table(str(tmp_path / "t"), schema=SCHEMA.to_ddl())
    table.load(rows_frame(spark, rows), mode="append")  # no effective_from
    text = updates_text(rng, rng.randint(8, 16))
    (tmp_path / "t.updates").write_text(text)
    table.apply_updates(str(tmp_path / "t.updates"))
    statements = parse_updates_text(text, "t.updates", schema=SCHEMA).statements
    for as_of in sorted({10**15, *rng.sample([0, 50, 100, 150, 200, 250, 300, 350, 450], 3)}):
        effective = statements_effective_at(statements, as_of)
        context = f"seed {seed}, as of {as_of}:\n" + "\n".join(s.sql for s in effective)
        ours = by_id(table.scan(as_of=as_of).to_spark())
        assert ours, f"an --as-of {as_of} read of a table loaded with no valid time is empty"
        assert_same(ours, duckdb_result(rows, effective), context)
