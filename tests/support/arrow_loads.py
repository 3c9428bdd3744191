"""Loads for a test's set-up whose subject is not Spark's writer: rows written to a Parquet file
beside the table and loaded by the Arrow engine (the same files and log records as Spark's load,
without a Spark job)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import lakectl
from lakectl.arrow.types import arrow_schema
from lakectl.table.schema import parse_schema


def load_rows(
    table: lakectl.Table, rows: Sequence[Sequence[Any]], schema: str, **options: Any
) -> lakectl.LoadResult:
    """Load ``rows`` (tuples in the order of ``schema``'s columns, a Spark DDL string) into
    ``table`` with the Arrow engine; ``options`` as :meth:`lakectl.Table.load` takes them."""
    types = arrow_schema(parse_schema(schema))
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(types)
    batch = pa.table(
        [pa.array(list(values), f.type) for values, f in zip(columns, types, strict=True)],
        schema=types,
    )
    folder = Path(table.location.removeprefix("file://")).parent / "_batches"
    folder.mkdir(exist_ok=True)
    source = folder / f"{uuid.uuid4().hex}.parquet"
    pq.write_table(batch, source)
    return table.load(str(source), engine="arrow", **options)
