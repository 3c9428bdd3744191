"""Names on disk, as Hive 3 ACID writes them: base/delta directories, bucket files, partitions.

Pure functions only. Examples: ``delta_0000001_0000001_0000``, ``delete_delta_...``,
``base_0000003``, ``bucket_00000``, and the bucket field codec (536870912 = bucket 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from lakectl.errors import UsageError

ACID_VERSION_FILE = "_orc_acid_version"
ACID_VERSION = "2"
COMPACTOR_METADATA_FILE = "_metadata_acid"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
ACID_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")

OP_INSERT, OP_UPDATE, OP_DELETE = 0, 1, 2

_BUCKET_CODEC_V1 = 1 << 29
_BASE = re.compile(r"^base_(\d+)(?:_v(\d+))?$")
_DELTA = re.compile(r"^(delete_delta|delta)_(\d+)_(\d+)(?:_(\d+))?(?:_v(\d+))?$")
_BUCKET_FILE = re.compile(r"^bucket_(\d+)(?:_\d+)?$")
_ORIGINAL_FILE = re.compile(r"^(\d+)_(\d+)(?:_copy_(\d+))?$")


class DirKind(StrEnum):
    BASE = "base"
    DELTA = "delta"
    DELETE_DELTA = "delete_delta"


@dataclass(frozen=True, order=True)
class AcidDir:
    """One ACID directory inside a partition: its kind and write-id range."""

    kind: DirKind
    min_write_id: int
    max_write_id: int
    statement_id: int | None
    name: str
    visibility_txn: int | None = None

    @property
    def is_base(self) -> bool:
        return self.kind is DirKind.BASE

    @property
    def is_delete(self) -> bool:
        return self.kind is DirKind.DELETE_DELTA


def parse_acid_dir(name: str) -> AcidDir | None:
    """Parse an ACID directory name; ``None`` when the name is not one."""
    m = _BASE.match(name)
    if m:
        wid = int(m.group(1))
        vis = int(m.group(2)) if m.group(2) else None
        return AcidDir(DirKind.BASE, 0, wid, None, name, vis)
    m = _DELTA.match(name)
    if m:
        kind = DirKind.DELETE_DELTA if m.group(1) == "delete_delta" else DirKind.DELTA
        stmt = int(m.group(4)) if m.group(4) is not None else None
        vis = int(m.group(5)) if m.group(5) else None
        return AcidDir(kind, int(m.group(2)), int(m.group(3)), stmt, name, vis)
    return None


def delta_dir_name(write_id: int, statement_id: int | None = 0, *, delete: bool = False) -> str:
    """``delta_0000005_0000005_0000`` (or ``delete_delta_...``) for one transaction."""
    return delta_range_dir_name(write_id, write_id, statement_id, delete=delete)


def delta_range_dir_name(
    min_write_id: int, max_write_id: int, statement_id: int | None = None, *, delete: bool = False
) -> str:
    """A delta directory name for a range of write ids; minor compaction omits the statement."""
    prefix = "delete_delta" if delete else "delta"
    name = f"{prefix}_{min_write_id:07d}_{max_write_id:07d}"
    if statement_id is not None:
        name += f"_{statement_id:04d}"
    return name


def base_dir_name(write_id: int, visibility_txn: int | None = None) -> str:
    """``base_0000007`` (``_vNNNNNNN`` marks a compactor-written base, as Hive 3 does)."""
    name = f"base_{write_id:07d}"
    if visibility_txn is not None:
        name += f"_v{visibility_txn:07d}"
    return name


def bucket_file_name(bucket_id: int) -> str:
    return f"bucket_{bucket_id:05d}"


def parse_bucket_file(name: str) -> int | None:
    m = _BUCKET_FILE.match(name)
    return int(m.group(1)) if m else None


def parse_original_file(name: str) -> tuple[int, int] | None:
    """For a pre-ACID file ``000002_0_copy_1``: (bucket 2, copy 1); ``None`` if not one."""
    m = _ORIGINAL_FILE.match(name)
    if not m:
        return None
    return int(m.group(1)), int(m.group(3) or 0)


def encode_bucket(bucket_id: int, statement_id: int = 0) -> int:
    """Hive's BucketCodec V1: ``1 << 29 | bucket_id << 16 | statement_id``."""
    if not 0 <= bucket_id < (1 << 12):
        raise ValueError(f"bucket id {bucket_id} out of range 0..4095")
    return _BUCKET_CODEC_V1 | (bucket_id << 16) | (statement_id & 0xFFF)


def decode_bucket(value: int) -> int:
    """The bucket id inside an encoded bucket field (V1), or the value itself for V0."""
    if value & _BUCKET_CODEC_V1:
        return (value >> 16) & 0xFFF
    return value


# --- partitions -------------------------------------------------------------------------------

_ESCAPED = set("\"#%'*/:=?\\{[]^") | {chr(0x7F)} | {chr(c) for c in range(1, 0x20)}


def escape_partition_value(value: str | None) -> str:
    """Escape a partition value as Hive's ``FileUtils.escapePathName`` does."""
    if value is None or value == "":
        return DEFAULT_PARTITION
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def unescape_partition_value(text: str) -> str | None:
    """Inverse of :func:`escape_partition_value`; the default partition is ``None``."""
    if text == DEFAULT_PARTITION:
        return None
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def partition_path(columns: list[str], values: list[str | None]) -> str:
    """``store_id=7/create_date=2024-01-01`` for the given partition values."""
    return "/".join(
        f"{col}={escape_partition_value(val)}" for col, val in zip(columns, values, strict=True)
    )


def parse_partition_path(columns: list[str], relative: str) -> tuple[str | None, ...]:
    """Values of a ``col=value/...`` path; raises when it does not match the partition columns."""
    parts = [p for p in relative.split("/") if p]
    if len(parts) != len(columns):
        raise UsageError(f"partition path {relative!r} does not match columns {columns}")
    values: list[str | None] = []
    for col, part in zip(columns, parts, strict=True):
        key, sep, raw = part.partition("=")
        if not sep or key.lower() != col.lower():
            raise UsageError(f"partition path {relative!r}: expected {col}=...")
        values.append(unescape_partition_value(raw))
    return tuple(values)


def parse_partition_spec(specs: list[str], columns: list[str]) -> dict[str, str | None]:
    """``["create_date=2024-01-01"]`` from the command line -> {column: value}."""
    out: dict[str, str | None] = {}
    lowered = {c.lower(): c for c in columns}
    for spec in specs:
        for piece in spec.split("/"):
            key, sep, value = piece.partition("=")
            if not sep:
                raise UsageError(f"--partition {spec!r}: expected col=value")
            col = lowered.get(key.strip().lower())
            if col is None:
                raise UsageError(
                    f"--partition {spec!r}: {key!r} is not a partition column "
                    f"(partition columns: {', '.join(columns) or 'none'})"
                )
            out[col] = None if value == DEFAULT_PARTITION else value
    return out


# --- list bucketing -----------------------------------------------------------------------------

# Hive's name for the directory of every row whose skewed value(s) have no directory of their own;
# with several skewed columns it is repeated once per column, as Hive nests it.
LIST_BUCKETING_DEFAULT_DIR = "HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME"
# One list-bucketing path segment inside an ACID directory (``x=6`` or the default name), as a
# regular expression over paths (also URI-encoded ones: the value part may hold ``%XX`` codes).
LIST_BUCKETING_SEGMENT_PATTERN = rf"(?:[^/=]+=[^/]*|{LIST_BUCKETING_DEFAULT_DIR})"
_LIST_BUCKETING_SEGMENT = re.compile(rf"^{LIST_BUCKETING_SEGMENT_PATTERN}$")


def is_list_bucketing_segment(name: str) -> bool:
    """Is ``name`` a directory that list bucketing creates inside a base/delta directory?"""
    return bool(_LIST_BUCKETING_SEGMENT.match(name))


def list_bucketing_dir(columns: tuple[str, ...], values: tuple[str, ...] | None) -> str:
    """``x=6/y=a`` for skewed values (escaped as partition values), the default dir for ``None``."""
    if values is None:
        return "/".join(LIST_BUCKETING_DEFAULT_DIR for _ in columns)
    return "/".join(
        f"{col}={escape_partition_value(val)}" for col, val in zip(columns, values, strict=True)
    )
