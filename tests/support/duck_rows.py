"""Rows held in Python put into a DuckDB table in one statement.

``executemany`` inserts row by row (about a millisecond each), which made oracles over a few
thousand rows cost seconds per query; one Arrow table handed to DuckDB costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
import pyarrow as pa


def insert_rows(
    db: duckdb.DuckDBPyConnection,
    table: str,
    rows: Iterable[Sequence[Any]],
    columns: Sequence[str] | None = None,
) -> None:
    """``INSERT INTO table [(columns)] VALUES ...`` for every row, as one statement.

    Values are matched to the table's columns by position (or to ``columns``), and cast to their
    declared types by DuckDB, as ``executemany`` with ``?`` parameters would.
    """
    rows = [tuple(r) for r in rows]
    if not rows:
        return
    width = len(rows[0])
    source = pa.table({f"c{i}": pa.array([r[i] for r in rows]) for i in range(width)})
    target = f"{table} ({', '.join(columns)})" if columns else table
    name = f"__rows_{id(source)}"
    db.register(name, source)
    try:
        db.execute(f"INSERT INTO {target} SELECT * FROM {name}")
    finally:
        db.unregister(name)
