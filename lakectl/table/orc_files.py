"""Reading ORC file footers (schema, row count, ACID metadata) without Spark."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakectl.errors import FormatError, LakectlError, damaged_file_error, file_storage_error
from lakectl.storage.fs import Storage
from lakectl.table.layout import ACID_COLUMNS

if TYPE_CHECKING:
    import pyorc

_ORC_TO_SPARK = {
    "tinyint": "tinyint",
    "smallint": "smallint",
    "int": "int",
    "bigint": "bigint",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "date": "date",
    "timestamp": "timestamp",
    "binary": "binary",
}


@dataclass(frozen=True)
class OrcFooter:
    rows: int
    columns: tuple[tuple[str, str], ...]  # top-level (name, orc type string)
    row_columns: tuple[tuple[str, str], ...] | None  # fields of `row` for ACID files
    user_metadata: dict[str, bytes]

    @property
    def is_acid(self) -> bool:
        names = tuple(n.lower() for n, _ in self.columns)
        return names == tuple(c.lower() for c in ACID_COLUMNS)

    @property
    def acid_version(self) -> int | None:
        raw = self.user_metadata.get("hive.acid.version")
        return int(raw.decode()) if raw else None


def _fields(schema: pyorc.Struct) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(sub)) for name, sub in schema.fields.items())


ORC_MAGIC = b"ORC"


def starts_like_orc(storage: Storage, path: str) -> bool:
    """Whether the file begins with ORC's magic bytes (a cheap check before reading a footer)."""
    try:
        with storage.fs.open(path, "rb") as handle:
            return bool(handle.read(len(ORC_MAGIC)) == ORC_MAGIC)
    except OSError:
        return False


@contextlib.contextmanager
def reading_orc(storage: Storage, path: str) -> Iterator[None]:
    """Say which file failed, and how, when reading the ORC file at ``path`` fails inside the
    block: a failure of the storage (an ``OSError`` with an errno: permissions, a vanished
    file, a broken mount) is a :class:`~lakectl.errors.StorageError` naming the file; bytes
    the ORC reader cannot decode (pyarrow reports them as an ``OSError`` without an errno) are
    a :class:`~lakectl.errors.FormatError` saying the file is damaged. Other errors pass."""
    try:
        yield
    except LakectlError:
        raise
    except OSError as exc:
        url = storage.url(path)
        if exc.errno is None:
            raise damaged_file_error(url, str(exc) or type(exc).__name__) from exc
        raise file_storage_error("reading", url, exc) from exc


def read_footer(storage: Storage, path: str) -> OrcFooter:
    """Schema, row count and user metadata of one ORC file (reads only its tail)."""
    import pyorc

    try:
        with reading_orc(storage, path), storage.fs.open(path, "rb") as handle:
            reader = pyorc.Reader(handle)
            schema = reader.schema
            if not isinstance(schema, pyorc.Struct):
                raise FormatError(
                    f"{storage.url(path)}: the ORC file's top-level type is {schema}, not a struct"
                )
            columns = _fields(schema)
            row_columns = None
            for name, sub in schema.fields.items():
                if name.lower() == "row" and isinstance(sub, pyorc.Struct):
                    row_columns = _fields(sub)
            return OrcFooter(len(reader), columns, row_columns, dict(reader.user_metadata))
    except (pyorc.ParseError, ValueError) as exc:
        raise damaged_file_error(storage.url(path), f"not a readable ORC file: {exc}") from exc


def require_acid_file(storage: Storage, path: str) -> OrcFooter:
    """The footer of a Hive 3 ACID file; a clear error for anything else (never a guess)."""
    footer = read_footer(storage, path)
    if not footer.is_acid:
        raise FormatError(
            f"{storage.url(path)} is not a Hive ACID file: its schema is "
            f"struct<{','.join(n for n, _ in footer.columns)}>, not the ACID event struct "
            f"<{','.join(ACID_COLUMNS)}>, and it has no hive.acid.version metadata",
        )
    version = footer.acid_version
    if version is not None and version != 2:
        raise FormatError(
            f"{storage.url(path)} has hive.acid.version={version}; lakectl reads Hive 3 ACID "
            "(version 2) files only"
        )
    return footer


def spark_type(orc_type: str) -> str:
    """Spark SQL type name of an ORC type string (primitive types and decimals)."""
    t = orc_type.lower()
    if t in _ORC_TO_SPARK:
        return _ORC_TO_SPARK[t]
    if t.startswith("decimal"):
        return t.replace(" ", "")
    if t.startswith(("varchar", "char")):
        return "string"
    raise FormatError(f"ORC type {orc_type} is not supported")


def add_acid_metadata(storage: Storage, path: str) -> dict[str, bytes]:
    """Write Hive's ``hive.acid.*`` user metadata into a finished ACID file (see orc_tail).

    The key index is the last (originalTransaction, bucket, rowId) of every stripe, as Hive's
    merge reader uses it to seek: one row per stripe is decoded, through the row index. The
    stats count the events by operation, from the file's column statistics when the file holds
    one operation (always, for files lakectl writes). A file that already has the items is
    left alone. Returns the items (written or found).
    """
    import pyorc

    from lakectl.table.layout import ACID_VERSION, OP_DELETE, OP_INSERT, OP_UPDATE
    from lakectl.table.orc_tail import TAIL_BYTES, acid_key_index, acid_stats, metadata_patch

    identity = ("operation", "originalTransaction", "bucket", "rowId")
    with storage.fs.open(path, "rb") as handle:
        reader = pyorc.Reader(handle, column_names=identity)
        present = dict(reader.user_metadata)
        if "hive.acid.key.index" in present:
            return {k: v for k, v in present.items() if k.startswith("hive.acid.")}
        last_keys: list[tuple[int, int, int]] = []
        for number in range(reader.num_of_stripes):
            stripe = reader.read_stripe(number)
            if len(stripe):
                reader.seek(stripe.row_offset + len(stripe) - 1)
                _, transaction, bucket, row_id = next(reader)
                last_keys.append((transaction, bucket, row_id))
        by_op = {OP_INSERT: 0, OP_UPDATE: 0, OP_DELETE: 0}
        stats = reader[1].statistics  # column 1: operation
        if len(reader) and stats["minimum"] == stats["maximum"]:
            by_op[stats["minimum"]] = len(reader)
        elif len(reader):
            reader.seek(0)
            for row in reader:
                by_op[row[0]] = by_op.get(row[0], 0) + 1
    items = {
        "hive.acid.key.index": acid_key_index(last_keys),
        "hive.acid.stats": acid_stats(by_op[OP_INSERT], by_op[OP_UPDATE], by_op[OP_DELETE]),
        "hive.acid.version": ACID_VERSION.encode(),
    }
    tail, size = storage.read_tail(path, TAIL_BYTES)
    patch = metadata_patch(tail, size, items)
    storage.replace_tail(path, patch.offset, patch.data)
    return items
