"""A stream's micro-batches in the Arrow engine: each landing file read with pyarrow
(:func:`lakectl.arrow.source.read_source_arrow`, as ``load --engine arrow`` reads it), the files
of a micro-batch joined into one batch, and a refused batch's files checked one by one, without a
JVM. :mod:`lakectl.ops.stream` loads the joined batch with
:func:`lakectl.ops.load_arrow.load_table_arrow`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakectl.errors import BadInputError
from lakectl.ops.load import LoadOptions, parse_op_values
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa


def read_file_arrow(url: str, fmt: str, storage_options: dict[str, Any]) -> pa.Table:
    """One landing file as ``load --engine arrow`` reads it (CSV columns stay text)."""
    from lakectl.arrow.source import read_source_arrow

    return read_source_arrow(url, fmt, infer=False, storage_options=storage_options)


def union_arrow(meta: TableMetadata, tables: list[pa.Table], label: str) -> pa.Table:
    """The files of a micro-batch as one table. A file lacking a column another file has reads
    what a load of that file alone would: the column's default when the table allows it to be
    absent (:meth:`~lakectl.table.metadata.TableMetadata.may_be_absent`), else NULL. Files whose
    columns cannot be joined (one column of two different types) are a
    :class:`~lakectl.errors.BadInputError`: the stream then loads them one at a time."""
    import pyarrow as pa

    from lakectl.arrow.batch import absent_column
    from lakectl.arrow.casts import spark_cast
    from lakectl.arrow.source import spark_type_of

    if len(tables) == 1:
        return tables[0]
    fields = {f.name.lower(): f for t in tables for f in t.schema}
    filled = []
    for table in tables:
        have = {name.lower() for name in table.schema.names}
        for lowered, field in fields.items():
            column = meta.schema.find(field.name)
            if lowered in have or column is None or not meta.may_be_absent(field.name):
                continue
            values = absent_column(column, table.num_rows)
            typed = spark_cast(values, column.type, spark_type_of(field.type), label)
            table = table.append_column(field.name, typed)
        filled.append(table)
    try:
        return pa.concat_tables(filled, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise BadInputError(f"{label}: the files' columns differ in type: {exc}") from exc


def check_file_arrow(meta: TableMetadata, options: LoadOptions, raw: pa.Table, label: str) -> bool:
    """Check one file of a refused micro-batch alone: False when it has no rows (not an error:
    it adds nothing), True when it passes; raise :class:`~lakectl.errors.BadInputError` naming
    what is wrong with it."""
    from lakectl.arrow.batch import BatchOptions, shape_batch_arrow

    if not raw.num_rows:
        return False
    op_values = parse_op_values(options.op_values) if options.mode is LoadMode.CDC else None
    op_column = options.op_column or ("op_code" if options.mode is LoadMode.CDC else None)
    shape_batch_arrow(
        raw, meta, BatchOptions(options.mode, op_column, op_values, options.order_by), label
    )
    return True


__all__ = ["check_file_arrow", "read_file_arrow", "union_arrow"]
