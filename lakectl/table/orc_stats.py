"""The stripe statistics of an ORC file: each stripe's per-column value count and min/max.

pyarrow reads ORC stripes but does not expose their statistics, so they are parsed here from
the file's metadata section, which sits just before the footer:
``... stripes | metadata | footer | postscript | postscript length (1 byte)``. The metadata is a
protobuf ``Metadata { repeated StripeStatistics stripeStats = 1; }``, each
``StripeStatistics { repeated ColumnStatistics colStats = 1; }`` indexed by ORC column id (the
type tree in pre-order: 0 is the root struct). It is stored in compression chunks like the
footer.

Only what a reader can use exactly is kept: the number of non-null values, and min/max of
integer, date, string and decimal columns. Anything else (other types, codecs this module does
not decode, truncated string bounds) comes back as unknown, and unknown never excludes a stripe.
Besides :func:`stripe_statistics` (which reads the section from an open file), everything here
is pure: bytes in, statistics out.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from lakectl.errors import FormatError
from lakectl.table.orc_tail import message_fields, read_varint

_NONE, _ZLIB, _SNAPPY, _ZSTD = 0, 1, 2, 5
_EPOCH = date(1970, 1, 1)


@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics in one stripe: its non-null values (None: unknown) and, when
    known exactly, the least and greatest of them (ints, dates, strings or Decimals)."""

    values: int | None = None
    minimum: Any = None
    maximum: Any = None

    @property
    def has_range(self) -> bool:
        return self.minimum is not None and self.maximum is not None


StripeStats = list[ColumnStats]  # by ORC column id


_CODECS = {"UNCOMPRESSED": _NONE, "NONE": _NONE, "ZLIB": _ZLIB, "SNAPPY": _SNAPPY, "ZSTD": _ZSTD}


def decompress(data: bytes, kind: int) -> bytes | None:
    """An ORC stream of compression ``kind`` decoded (None for a codec not decoded here)."""
    if kind == _NONE:
        return data
    out = bytearray()
    pos = 0
    while pos < len(data):
        if pos + 3 > len(data):
            raise FormatError("truncated ORC compression chunk header")
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        pos += 3
        chunk = data[pos : pos + (header >> 1)]
        pos += header >> 1
        if header & 1:  # stored as is
            out += chunk
            continue
        decoded = _decompress_chunk(chunk, kind)
        if decoded is None:
            return None
        out += decoded
    return bytes(out)


def _decompress_chunk(chunk: bytes, kind: int) -> bytes | None:
    if kind == _ZLIB:
        return zlib.decompress(chunk, -15)
    import pyarrow as pa

    if kind == _SNAPPY:
        size, _ = read_varint(chunk, 0)
        return bytes(pa.Codec("snappy").decompress(chunk, decompressed_size=size, asbytes=True))
    if kind == _ZSTD:
        declared = _zstd_content_size(chunk)
        if declared is None:
            return None
        codec = pa.Codec("zstd")
        return bytes(codec.decompress(chunk, decompressed_size=declared, asbytes=True))
    return None


def _zstd_content_size(frame: bytes) -> int | None:
    """The content size a zstd frame's header declares (None when it declares none)."""
    if len(frame) < 6 or frame[:4] != b"\x28\xb5\x2f\xfd":
        return None
    descriptor = frame[4]
    size_flag, single_segment, dict_flag = descriptor >> 6, descriptor >> 5 & 1, descriptor & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0 or pos + width > len(frame):
        return None
    size = int.from_bytes(frame[pos : pos + width], "little")
    return size + 256 if width == 2 else size


def parse_metadata(data: bytes, kinds: list[str]) -> list[StripeStats]:
    """Stripe statistics from a decompressed metadata section; ``kinds`` names each ORC column
    id's type: ``int``, ``date``, ``string``, ``decimal``, or anything else (no range kept)."""
    stripes = []
    for number, _, _, raw in message_fields(data):
        if number != 1:
            continue
        columns: list[ColumnStats] = []
        for col_number, _, _, col_raw in message_fields(_payload(raw)):
            if col_number == 1:
                kind = kinds[len(columns)] if len(columns) < len(kinds) else ""
                columns.append(_column_stats(_payload(col_raw), kind))
        stripes.append(columns)
    return stripes


def _payload(raw: bytes) -> bytes:
    """The payload of a length-delimited field given its raw bytes (tag, length, payload)."""
    _, pos = read_varint(raw, 0)
    _, pos = read_varint(raw, pos)
    return raw[pos:]


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _column_stats(data: bytes, kind: str) -> ColumnStats:
    values = None
    minimum = maximum = None
    for number, wire, value, raw in message_fields(data):
        if number == 1 and wire == 0:
            values = value
        elif number == 2 and kind == "int":  # IntegerStatistics: sint64 min 1, max 2
            minimum, maximum = _bounds(_payload(raw), _zigzag_field)
        elif number == 7 and kind == "date":  # DateStatistics: sint32 min 1, max 2
            minimum, maximum = _bounds(_payload(raw), _date_field)
        elif number == 4 and kind == "string":  # StringStatistics: string min 1, max 2
            minimum, maximum = _bounds(_payload(raw), _text_field)
        elif number == 6 and kind == "decimal":  # DecimalStatistics: string min 1, max 2
            minimum, maximum = _bounds(_payload(raw), _decimal_field)
    return ColumnStats(values, minimum, maximum)


def _bounds(data: bytes, decode: Any) -> tuple[Any, Any]:
    found: dict[int, Any] = {}
    for number, wire, value, raw in message_fields(data):
        if number in (1, 2):
            found[number] = decode(wire, value, raw)
    return found.get(1), found.get(2)


def _zigzag_field(wire: int, value: int, raw: bytes) -> int | None:
    return _zigzag(value) if wire == 0 else None


# Days since 1970-01-01 of 1582-10-15: ORC files count earlier days in the hybrid Julian
# calendar (lakectl.kernel.orc_dates), so a bound before it is left unknown, not compared.
_GREGORIAN_START = -141427


def _date_field(wire: int, value: int, raw: bytes) -> date | None:
    if wire != 0 or _zigzag(value) < _GREGORIAN_START:
        return None
    try:
        return _EPOCH + timedelta(days=_zigzag(value))
    except OverflowError:
        return None


def _text_field(wire: int, value: int, raw: bytes) -> str | None:
    if wire != 2:
        return None
    try:
        return _payload(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decimal_field(wire: int, value: int, raw: bytes) -> Decimal | None:
    text = _text_field(wire, value, raw)
    try:
        return Decimal(text) if text is not None else None
    except InvalidOperation:
        return None


def column_paths(fields: list[Any]) -> list[tuple[str, Any]]:
    """(dotted path, Arrow type) of every ORC column id of a file whose top-level Arrow fields
    are ``fields``: the type tree in pre-order, the root struct (path ``""``) first."""
    import pyarrow as pa

    out: list[tuple[str, Any]] = [("", pa.struct(fields))]

    def visit(path: str, t: Any) -> None:
        out.append((path, t))
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(f"{path}.{t.field(i).name}", t.field(i).type)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            visit(f"{path}._elem", t.value_type)
        elif pa.types.is_map(t):
            visit(f"{path}._key", t.key_type)
            visit(f"{path}._value", t.item_type)

    for field in fields:
        visit(field.name, field.type)
    return out


def _kind(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_decimal(t):
        return "decimal"
    return str(t)


def stripe_statistics(
    handle: Any, offset: int, length: int, compression: str, fields: list[Any]
) -> list[dict[str, ColumnStats]] | None:
    """Every stripe's statistics by column path (see :func:`column_paths`), read from the
    metadata section at ``offset`` (``length`` bytes) of the ORC file open as ``handle`` (seek,
    read), compressed with ``compression`` (pyarrow's name for it); ``fields`` are the file's
    top-level Arrow fields. None when they cannot be read exactly (a codec not decoded here,
    no metadata section)."""
    kind = _CODECS.get(compression.upper())
    if kind is None or length <= 0 or offset < 0:
        return None
    handle.seek(offset)
    data = decompress(handle.read(length), kind)
    if data is None:
        return None
    paths = column_paths(fields)
    stripes = parse_metadata(data, [_kind(t) for _, t in paths])
    return [
        {path: stats for (path, _), stats in zip(paths, columns, strict=False)}
        for columns in stripes
    ]


__all__ = [
    "ColumnStats",
    "StripeStats",
    "column_paths",
    "decompress",
    "parse_metadata",
    "stripe_statistics",
]
