"""Differential test of materializing: random tables, random statements, a random ``--until``.

Each seed builds a real table from two loads (effective at 0 and at 250), installs random
statements with random effective times (the generator of :mod:`test_differential_duckdb`), reads
it at several times, materializes at a random T, and reads again. Every read, before and after,
must equal DuckDB running the statements effective by then, in order, on the rows of the loads
effective by then (``--raw``: every load, no statement).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from lakectl.updates import parse_updates_text, statements_effective_at
from lakectl.updates.statements import Statement
from tests.support.statement_fuzz import (
    ROWS,
    SCHEMA,
    TIMES,
    assert_same,
    duckdb_result,
    random_rows,
    updates_text,
)

SEEDS = list(range(int(os.environ.get("LAKECTL_MATERIALIZE_SEEDS", "3"))))
LATE_LOAD_AT = 250
RAW = "raw"
NOT_IDEMPOTENT = "UPDATE t SET i = (coalesce(i, 0) + 7) % 1000 WHERE id % 3 <> 0;\n"
Row = dict[str, object]


class Table:
    """One lakectl table driven through the operations' Python API (typed values back)."""

    def __init__(self, spark, root: Path) -> None:
        from lakectl.config import load_config
        from lakectl.ops.context import Context
        from lakectl.ops.create import create_table

        self.spark, self.root = spark, root
        self.ctx = Context(config=load_config(warehouse=str(root)))
        self.ctx._spark = spark
        self.path = str(root / "t")
        create_table(self.ctx.table(self.path), SCHEMA.to_ddl())

    def load(self, rows: list[Row], effective_at: int, name: str) -> None:
        from pyspark.sql import functions as F

        from lakectl.ops.load import LoadOptions, load

        data = [
            tuple(str(v) if k == "ts" and v is not None else v for k, v in r.items()) for r in rows
        ]
        ddl = SCHEMA.to_ddl().replace("`ts` timestamp", "`ts` string")
        source = str(self.root / name)
        frame = self.spark.createDataFrame(data, ddl)
        frame.withColumn("ts", F.col("ts").cast("timestamp")).write.parquet(source)
        load(
            self.ctx, self.path, LoadOptions(source, "parquet", "append", effective_at=effective_at)
        )

    def read(self, as_of: int | str | None) -> dict[int, tuple[object, ...]]:
        from lakectl.ops.snapshot import SnapshotRequest, snapshot

        request = (
            SnapshotRequest(raw=True) if as_of == RAW else SnapshotRequest(as_of=as_of)  # type: ignore[arg-type]
        )
        result = snapshot(self.ctx, self.path, request)
        return {r[0]: tuple(str(v) if i == 9 and v is not None else v for i, v in enumerate(r))
                for r in result.rows}  # fmt: skip


def expected(
    loads: list[tuple[int, list[Row]]], statements: list[Statement], as_of: int | str | None
) -> dict[int, tuple[object, ...]]:
    """DuckDB's answer: the loads and statements effective at ``as_of`` (None: now)."""
    if as_of == RAW:
        return duckdb_result([r for _, rows in loads for r in rows], [])
    moment = 10**15 if as_of is None else int(as_of)
    rows = [r for at, batch in loads if at <= moment for r in batch]
    return duckdb_result(rows, statements_effective_at(statements, moment))


@pytest.mark.parametrize("seed", SEEDS)
def test_materialize_keeps_every_read(spark, tmp_path, seed: int) -> None:
    from lakectl.ops.materialize import materialize
    from lakectl.ops.updates import install

    rng = random.Random(1000 + seed)
    rows = random_rows(rng)
    split = ROWS * 3 // 4
    loads = [(0, rows[:split]), (LATE_LOAD_AT, rows[split:])]
    table = Table(spark, tmp_path)
    for index, (at, batch) in enumerate(loads):
        table.load(batch, at, f"load{index}")
    # led by a statement that changes rows again each time it is applied: a fold that is also
    # still applied on read (or not applied at all) cannot go unnoticed
    text = NOT_IDEMPOTENT + updates_text(rng, rng.randint(8, 16))
    (tmp_path / "s.updates").write_text(text)
    install(table.ctx, table.path, str(tmp_path / "s.updates"))
    statements = list(parse_updates_text(text, "s.updates", schema=SCHEMA).statements)
    until = rng.choice(TIMES)
    times: list[int | str | None] = [RAW, None, *rng.sample([0, 100, 200, 300, 400], 2)]

    def check(stage: str) -> None:
        for as_of in times:
            context = f"seed {seed}, {stage}, as of {as_of}, until {until}:\n{text}"
            assert_same(table.read(as_of), expected(loads, statements, as_of), context)

    check("before")
    result = materialize(table.ctx, table.path, until)
    leading = 0
    while leading < len(statements) and statements[leading].effective_ms <= until:
        leading += 1
    assert result.retired_statements == leading > 0
    assert result.active_statements == len(statements) - leading
    check("after")
