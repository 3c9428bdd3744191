"""Writing one transaction's changes as Hive ACID event files, with pyarrow (no JVM).

Every writer of change events (the Arrow engine's load, delete, update, restore; Spark's in its
tasks and on its driver, :mod:`lakectl.spark.event_write`) hands over, one partition at a time,
the new rows and the identities of the stored rows they delete or replace; this module turns
them into the files Spark's own ORC writer would produce (``timestamp_ntz`` columns as Spark
stores them: ORC bigints of microseconds, typed by the column's attribute):

- ``<partition>/<delta_dir>/bucket_N``: insert events, identity (write id, bucket N, rowId
  0, 1, ...), N = Spark's ``pmod(hash(key), buckets)`` in a bucketed table
  (:mod:`lakectl.kernel.spark_hash`), else 0;
- ``<partition>/<delete_dir>/bucket_N``: delete events, in the bucket file of the row each one
  deletes, ordered by (originalTransaction, bucket, rowId), as Hive's readers expect;
- Hive's ``hive.acid.*`` file metadata and an ``_orc_acid_version`` file in every directory.

Files go straight to their final place: they are invisible until the transaction commits (its
write id is not valid before), and its abort removes the directories it lists.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.arrow.orc_io import OrcFileWriter, unsliced
from lakectl.arrow.types import arrow_schema, arrow_type, event_schema
from lakectl.errors import ArrowEngineLimit
from lakectl.failpoints import is_crash
from lakectl.table.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    OP_DELETE,
    OP_INSERT,
    bucket_file_name,
    encode_bucket,
    escape_partition_value,
)
from lakectl.table.orc_files import add_acid_metadata
from lakectl.table.paths import Shape, table_path
from lakectl.table.properties import ORC_DICTIONARY_THRESHOLD, pyarrow_orc_codec

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from lakectl.storage.fs import Storage
    from lakectl.table.metadata import TableMetadata
    from lakectl.table.transaction import WriteTransaction

# Bytes per compression block: ORC C++'s default, and pyarrow's; Spark's writer is told the same.
# A reader allocates one block per column stream of a file: with ORC Java's 256 KiB, opening a
# load's small delta file (tens of KB) allocated and zeroed about 7 MB.
ORC_COMPRESSION_BLOCK = 64 * 1024
IDENTITY_TYPES = (("originalTransaction", "int64"), ("bucket", "int32"), ("rowId", "int64"))
"""The columns (and Arrow types) of :attr:`PartitionChanges.deletes`."""
_CODEC_V1 = 1 << 29


@dataclass(frozen=True)
class PartitionChanges:
    """What one transaction changes in one partition.

    Attributes:
        values: the partition column values (Python values of the table's types), ``()`` for
            an unpartitioned table.
        inserts: new rows: the table's data columns in order, typed as
            :func:`lakectl.arrow.types.arrow_schema` gives them.
        deletes: the identities of stored rows to delete (:data:`IDENTITY_TYPES`: the
            ``bucket`` as stored, encoded).
        bucket: the bucket file the new rows of a table without buckets go to (several
            writers of one partition each write their own); a bucketed table's rows go to
            their key's bucket.
    """

    values: tuple[Any, ...]
    inserts: pa.Table | None = None
    deletes: pa.Table | None = None
    bucket: int = 0


@dataclass(frozen=True)
class WrittenChanges:
    """What a writer created: ACID directories (relative to the table) and how many insert and
    delete events their files hold."""

    directories: list[str]
    inserts: int
    deletes: int


def partition_dir(meta: TableMetadata, values: tuple[Any, ...]) -> str:
    """``col=value/...`` as Spark's writer names the partition (``""`` when unpartitioned)."""
    return "/".join(
        f"{c}={escape_partition_value(partition_text(v))}"
        for c, v in zip(meta.partition_by, values, strict=True)
    )


def partition_text(value: Any) -> str | None:
    """A partition value as Spark casts it to a string (``None`` for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        from lakectl.expr.spark_values import java_float_text

        return java_float_text(value, single=False)
    if isinstance(value, datetime.datetime):  # Spark's session time zone is UTC
        from lakectl.expr.spark_values import timestamp_text

        return timestamp_text(value)
    return str(value)


def unsupported_reason(meta: TableMetadata) -> str | None:
    """Why this writer cannot write the table's files as Spark's writer would, or ``None``."""
    from lakectl.errors import FormatError

    if meta.buckets:
        from lakectl.kernel.spark_hash import bucket_key_names, unsupported_key_type

        keys = bucket_key_names(meta)
        problem = unsupported_key_type(arrow_type(meta.schema[k].type) for k in keys)
        if problem is not None:
            return problem
    for column in meta.data_schema.columns:
        kind = column.type.strip().lower()
        if "timestamp" in kind and kind not in ("timestamp", "timestamp_ntz"):
            return f"column {column.name} of type {column.type}"
        try:
            arrow_schema(type(meta.data_schema)((column,)))
        except FormatError:
            return f"column {column.name} of type {column.type}"
    return None


def write_changes(
    storage: Storage,
    root: str,
    meta: TableMetadata,
    write_id: int,
    changes: Iterable[PartitionChanges],
    *,
    delta_dir: str,
    delete_dir: str,
) -> WrittenChanges:
    """Write the changes of transaction ``write_id``, one partition at a time.

    Args:
        storage: the table's storage.
        root: the table's root path.
        meta: the table's metadata (schema, partitioning, ``orc.compress``).
        write_id: the transaction's write id.
        changes: per partition, the new rows and the deleted identities; a partition appears
            at most once.
        delta_dir: the name of the insert events' directory in each partition.
        delete_dir: the name of the delete events' directory.

    Returns:
        The directories created and the events written.

    An error while writing (the Arrow engine's limit met in a value, a storage failure) first
    removes the directories this call created: the table's files are as they were.
    """
    reason = unsupported_reason(meta)
    if reason is not None:
        raise ArrowEngineLimit(f"the Arrow engine cannot write {reason}", hint="use --engine spark")
    schema = event_schema(meta.data_schema)
    directories: list[str] = []
    inserts = deletes = 0
    seen: set[str] = set()
    try:
        for change in changes:
            partition = partition_dir(meta, change.values)
            if partition in seen:
                raise ValueError(f"partition {partition!r} given twice")
            seen.add(partition)
            if change.inserts is not None and change.inserts.num_rows:
                rel = _join(partition, delta_dir)
                directories.append(rel)  # before its first file: removed if a write fails
                for bucket, events in _insert_events(change, schema, write_id, meta):
                    _write_file(storage, root, rel, bucket, events, meta)
                    inserts += events.num_rows
            if change.deletes is not None and change.deletes.num_rows:
                rel = _join(partition, delete_dir)
                directories.append(rel)
                for bucket, events in _delete_events(change.deletes, schema, write_id):
                    _write_file(storage, root, rel, bucket, events, meta)
                    deletes += events.num_rows
    except BaseException as exc:
        if not is_crash(exc):  # a simulated crash leaves what a killed writer leaves
            _remove_directories(storage, root, directories)
        raise
    return WrittenChanges(sorted(directories), inserts, deletes)


def write_transaction_changes(
    txn: WriteTransaction, meta: TableMetadata, changes: Iterable[PartitionChanges]
) -> WrittenChanges:
    """:func:`write_changes` for the transaction ``txn``: its write id, the directories named
    after its version, and what it wrote recorded in ``txn.added`` (removed if it aborts)."""
    from lakectl.table.layout import delta_dir_name

    store = txn.store
    written = write_changes(
        store.storage,
        store.root,
        meta,
        txn.version,
        changes,
        delta_dir=delta_dir_name(txn.version),
        delete_dir=delta_dir_name(txn.version, delete=True),
    )
    txn.added += written.directories
    return written


def _remove_directories(storage: Storage, root: str, written: list[str]) -> None:
    """Delete the directories ``written`` (relative to the table) of a write that failed."""
    for rel in written:
        path = table_path(
            storage, root, rel, Shape.DATA_DIR, source="the directories written", deleting=True
        )
        storage.delete(path, recursive=True)


def _join(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def _insert_events(
    change: PartitionChanges, schema: pa.Schema, write_id: int, meta: TableMetadata
) -> Iterator[tuple[int, pa.Table]]:
    """Insert events of ``change``'s new rows per bucket: identities (write id, bucket N,
    0..n-1); N is Spark's bucket of the row's key in a bucketed table, else the change's
    ``bucket``."""
    import pyarrow as pa

    assert change.inserts is not None
    row_type = schema.field("row").type
    rows = pa.table(
        [_column(change.inserts, field) for field in row_type], schema=pa.schema(row_type)
    )
    buckets = _new_buckets(meta, change.values, rows)
    if buckets is None:
        yield change.bucket, _insert_table(rows, schema, write_id, change.bucket)
        return
    import numpy as np

    order = np.argsort(buckets, kind="stable")
    numbers, starts = np.unique(buckets[order], return_index=True)
    for number, indices in zip(numbers.tolist(), np.split(order, starts[1:]), strict=True):
        yield number, _insert_table(rows.take(indices), schema, write_id, number)


def _new_buckets(meta: TableMetadata, values: tuple[Any, ...], rows: pa.Table) -> np.ndarray | None:
    """Spark's bucket of each new row of a bucketed table (its key may hold partition columns:
    the partition's value), or ``None`` when the table is not bucketed."""
    if not meta.buckets:
        return None
    import pyarrow as pa

    from lakectl.kernel.spark_hash import bucket_ids, bucket_key_names

    data = {name.lower() for name in rows.column_names}
    keyed = rows
    for column, value in zip(meta.partition_by, values, strict=True):
        if column.lower() not in data:
            typed = pa.scalar(value, arrow_type(meta.schema[column].type))
            keyed = keyed.append_column(column, pa.repeat(typed, rows.num_rows))
    return bucket_ids(keyed, bucket_key_names(meta), meta.buckets)


def _insert_table(rows: pa.Table, schema: pa.Schema, write_id: int, bucket: int) -> pa.Table:
    """Insert events of ``rows`` (the ``row`` struct's columns) in bucket ``bucket``."""
    import pyarrow as pa

    n = rows.num_rows
    row_type = schema.field("row").type
    struct = pa.StructArray.from_arrays(
        [rows.column(i).combine_chunks() for i in range(rows.num_columns)],
        fields=list(row_type),
    )
    return pa.table(
        [
            _repeat(OP_INSERT, n, pa.int32()),
            _repeat(write_id, n, pa.int64()),
            _repeat(encode_bucket(bucket), n, pa.int32()),
            pa.array(range(n), pa.int64()),
            _repeat(write_id, n, pa.int64()),
            struct,
        ],
        schema=schema,
    )


def _column(rows: pa.Table, field: pa.Field) -> pa.Array:
    """Column ``field.name`` of ``rows`` (matched without case) as one array of the field's
    type."""

    names = {n.lower(): n for n in rows.column_names}
    name = names.get(field.name.lower())
    if name is None:
        raise ValueError(f"the new rows lack column {field.name!r}")
    column = rows.column(name)
    if column.type != field.type:
        column = column.cast(field.type)
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _repeat(value: int, n: int, type_: pa.DataType) -> pa.Array:
    import numpy as np
    import pyarrow as pa

    return pa.array(np.full(n, value, dtype=type_.to_pandas_dtype()), type_)


def _delete_events(
    deleted: pa.Table, schema: pa.Schema, write_id: int
) -> Iterator[tuple[int, pa.Table]]:
    """Delete events of ``deleted`` per bucket they name, each sorted by identity."""
    import numpy as np
    import pyarrow as pa

    ids = deleted.select([name for name, _ in IDENTITY_TYPES]).cast(
        pa.schema([(name, getattr(pa, t)()) for name, t in IDENTITY_TYPES])
    )
    ordered = ids.sort_by([(name, "ascending") for name, _ in IDENTITY_TYPES])
    buckets = _decoded_buckets(ordered.column("bucket").to_numpy())
    row_type = schema.field("row").type
    for bucket in np.unique(buckets):
        part = ordered.filter(pa.array(buckets == bucket))
        n = part.num_rows
        yield (
            int(bucket),
            pa.table(
                [
                    _repeat(OP_DELETE, n, pa.int32()),
                    part.column("originalTransaction"),
                    part.column("bucket"),
                    part.column("rowId"),
                    _repeat(write_id, n, pa.int64()),
                    pa.nulls(n, row_type),
                ],
                schema=schema,
            ),
        )


def _decoded_buckets(encoded: np.ndarray) -> np.ndarray:
    """Bucket numbers of stored ``bucket`` fields (Hive's codec, or the plain number)."""
    import numpy as np

    values = encoded.astype(np.int64)
    return np.where(values & _CODEC_V1, (values >> 16) & 0xFFF, values)


def _write_file(
    storage: Storage, root: str, rel_dir: str, bucket: int, events: pa.Table, meta: TableMetadata
) -> None:
    """``events`` as ``<rel_dir>/bucket_N`` with Hive's ACID metadata; the directory gets its
    ``_orc_acid_version`` with its first file."""
    final_dir = table_path(storage, root, rel_dir, Shape.DATA_DIR, source="the directories written")
    storage.makedirs(final_dir)
    path = storage.join(final_dir, bucket_file_name(bucket))
    write_event_file(storage, path, events, meta)
    add_acid_metadata(storage, path)
    version = storage.join(final_dir, ACID_VERSION_FILE)
    if not storage.exists(version):
        storage.write_bytes(version, ACID_VERSION.encode())


def write_event_file(
    storage: Storage, path: str, events: pa.Table | Iterable[pa.RecordBatch], meta: TableMetadata
) -> int:
    """Write ACID events to the ORC file ``path`` as lakectl's writers do (the table's codec,
    ORC's dictionary rule for strings, a bloom filter on the first key column). Returns the
    number of events written."""
    import pyarrow as pa

    batches = events.to_batches() if isinstance(events, pa.Table) else events
    schema = event_schema(meta.data_schema)
    if any(_is_ntz(f.type) for f in schema.field("row").type):
        batches = (_ntz_as_spark_stores(b) for b in batches)
    rows = 0
    with OrcFileWriter(
        storage,
        path,
        compression=pyarrow_orc_codec(meta.property("orc.compress").lower() or "snappy"),
        compression_block_size=ORC_COMPRESSION_BLOCK,
        bloom_filter_columns=bloom_filter_ids(schema, meta.data_key),
        dictionary_key_size_threshold=ORC_DICTIONARY_THRESHOLD,
    ) as writer:
        for batch in batches:
            writer.write(batch)
            rows += batch.num_rows
    return rows


# The ORC type attribute Spark reads a column's type from (its ``timestamp_ntz`` columns are
# ORC bigints of microseconds, typed so by it).
SPARK_TYPE_ATTRIBUTE = b"spark.sql.catalyst.type"


def _is_ntz(type_: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(type_) and type_.tz is None


def _ntz_as_spark_stores(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (events) with the ``timestamp_ntz`` columns of its ``row`` (Arrow timestamps
    without a zone) as Spark's ORC writer stores them: bigints of microseconds with the type
    attribute ``timestamp_ntz``."""
    import pyarrow as pa

    at = batch.schema.get_field_index("row")
    row = batch.column(at)
    fields, children = [], []
    for field, child in zip(row.type, row.flatten(), strict=True):
        if _is_ntz(field.type):
            metadata = {**(field.metadata or {}), SPARK_TYPE_ATTRIBUTE: b"timestamp_ntz"}
            field = pa.field(field.name, pa.int64(), field.nullable, metadata)
            child = child.cast(pa.timestamp("us")).cast(pa.int64())
        fields.append(field)
        children.append(child)
    mask = row.is_null() if row.null_count else None
    stored = pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    schema = batch.schema.set(at, pa.field("row", stored.type, batch.schema.field(at).nullable))
    return pa.RecordBatch.from_arrays(
        [*batch.columns[:at], stored, *batch.columns[at + 1 :]], schema=schema
    )


def bloom_filter_ids(events: pa.Schema, key: str | None) -> list[int] | None:
    """ORC column id of ``row.<key>`` in an event file's schema (ids number the type tree in
    pre-order, root 0), or ``None``."""
    if key is None:
        return None
    column = 1 + events.get_field_index("row")  # the five event columns are primitives
    row_type = events.field("row").type
    column += 1
    for i in range(row_type.num_fields):
        field = row_type.field(i)
        if field.name.lower() == key.lower():
            return [column]
        column += _subtree_size(field.type)
    return None


def _subtree_size(t: pa.DataType) -> int:
    return 1 + sum(_subtree_size(t.field(i).type) for i in range(t.num_fields))


__all__ = [
    "IDENTITY_TYPES",
    "PartitionChanges",
    "WrittenChanges",
    "bloom_filter_ids",
    "partition_dir",
    "partition_text",
    "unsliced",
    "unsupported_reason",
    "write_changes",
    "write_event_file",
    "write_transaction_changes",
]
