"""A minimal reading and shaping of a load's source in pyarrow, for tests of the Arrow engine's
load while ``lakectl.arrow.source`` / ``lakectl.arrow.batch`` are not there yet: CSV and
Parquet, the table's columns cast, the op, order and position columns. :func:`install` puts it
in their place only when they are missing."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakectl.errors import BadInputError
from lakectl.kernel.change_classify import ACTION_COL, ORDER_COL, POSITION_COL


@dataclass(frozen=True)
class BatchOptions:
    mode: str
    op_column: str | None = None
    op_values: dict[str, str] | None = None
    order_by: str | None = None


@dataclass(frozen=True)
class BatchStats:
    rows: int
    partitions: tuple[tuple[str | None, ...], ...]


def read_source_arrow(
    source: str, fmt: str, infer: bool = True, storage_options: dict[str, Any] | None = None
) -> pa.Table:
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        return pq.read_table(source)
    if fmt != "csv":
        raise NotImplementedError(fmt)
    if infer:
        return csv.read_csv(source, convert_options=csv.ConvertOptions(null_values=[""]))
    names = csv.read_csv(source).column_names
    convert = csv.ConvertOptions(
        column_types={n: pa.string() for n in names},
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    return csv.read_csv(source, convert_options=convert)


def shape_batch_arrow(
    raw: pa.Table, meta: Any, options: BatchOptions, source: str
) -> tuple[pa.Table, BatchStats]:
    from lakectl.arrow.types import arrow_type

    lowered = {c.lower(): c for c in raw.column_names}
    arrays, names = [], []
    for column in meta.schema.columns:
        name = lowered.get(column.name.lower())
        if name is None:
            raise BadInputError(f"{source}: missing column(s) {column.name}")
        values = raw.column(name)
        target = arrow_type(column.type)
        if pa.types.is_timestamp(target) and pa.types.is_string(values.type):
            values = pc.strptime(values, "%Y-%m-%d %H:%M:%S", "us").cast(target)
        arrays.append(values.cast(target))
        names.append(column.name)
    arrays.append(pa.array(range(raw.num_rows), pa.int64()))
    names.append(POSITION_COL)
    if options.op_column:
        codes = raw.column(lowered[options.op_column.lower()]).cast(pa.string())
        mapping = options.op_values or {}
        keys = pa.array(list(mapping))
        acts = pa.array([mapping[k] for k in mapping])
        action = pc.take(acts, pc.index_in(codes.combine_chunks(), keys))
        arrays.append(action)
        names.append(ACTION_COL)
    if options.order_by:
        arrays.append(arrays[names.index(meta.schema[options.order_by].name)])
        names.append(ORDER_COL)
    batch = pa.table(arrays, names=names)
    parts: tuple[tuple[str | None, ...], ...] = ()
    if meta.partition_by:
        seen = batch.select(list(meta.partition_by)).group_by(list(meta.partition_by))
        distinct = seen.aggregate([]).to_pylist()
        parts = tuple(
            tuple(None if r[c] is None else str(r[c]) for c in meta.partition_by) for r in distinct
        )
    return batch, BatchStats(batch.num_rows, parts)


def install() -> None:
    """Put the stand-in in place of the modules the Arrow engine's load reads through, when
    they are missing."""
    try:
        import lakectl.arrow.batch
        import lakectl.arrow.source  # noqa: F401
    except ImportError:
        source = types.ModuleType("lakectl.arrow.source")
        source.read_source_arrow = read_source_arrow  # type: ignore[attr-defined]
        batch = types.ModuleType("lakectl.arrow.batch")
        batch.BatchOptions = BatchOptions  # type: ignore[attr-defined]
        batch.BatchStats = BatchStats  # type: ignore[attr-defined]
        batch.shape_batch_arrow = shape_batch_arrow  # type: ignore[attr-defined]
        sys.modules["lakectl.arrow.source"] = source
        sys.modules["lakectl.arrow.batch"] = batch
