"""Adding user metadata to a finished ORC file by rewriting its last few hundred bytes only.

Hive's ACID writer stores ``hive.acid.key.index``, ``hive.acid.stats`` and ``hive.acid.version``
in each file's footer. Spark's native ORC writer has no option for user metadata, and rewriting
files would cost as much as writing them, so lakectl patches the tail instead:

- An ORC file ends with ``footer | postscript | one byte: postscript length``.
- The footer is a protobuf message, stored in compression chunks when the file is compressed.
  Concatenated protobuf encodings parse as one merged message, and repeated fields append, so
  one more *uncompressed* ("original") chunk holding extra ``metadata`` entries (footer field 5)
  extends the footer without touching the bytes before it.
- The postscript is re-encoded with the new footer length (field 1); its other fields are kept
  byte for byte.

Everything here is pure (bytes in, bytes out); :func:`metadata_patch` says what to write from
which offset, and the storage layer applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakectl.errors import FormatError

TAIL_BYTES = 256  # the postscript is at most 255 bytes, plus its length byte
_COMPRESSION_NONE = 0
_DEFAULT_BLOCK_SIZE = 256 * 1024
_VARINT = 0
_LENGTH_DELIMITED = 2
_FIXED_SIZES = {1: 8, 5: 4}  # wire types fixed64, fixed32
_FOOTER_LENGTH = 1
_COMPRESSION = 2
_BLOCK_SIZE = 3
_FOOTER_METADATA = 5
_ITEM_NAME = 1
_ITEM_VALUE = 2


@dataclass(frozen=True)
class TailPatch:
    """Replace everything from ``offset`` to the end of the file with ``data``."""

    offset: int
    data: bytes


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A protobuf varint at ``pos``: (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise FormatError("truncated varint in an ORC protobuf message")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def message_fields(buf: bytes) -> list[tuple[int, int, int, bytes]]:
    """The fields of a protobuf message: (number, wire type, varint value or 0, raw bytes of
    the whole field). Length-delimited payloads are ``raw[-length:]``."""
    out = []
    pos = 0
    while pos < len(buf):
        start = pos
        tag, pos = read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        value = 0
        if wire == _VARINT:
            value, pos = read_varint(buf, pos)
        elif wire == _LENGTH_DELIMITED:
            length, pos = read_varint(buf, pos)
            pos += length
        elif wire in _FIXED_SIZES:
            pos += _FIXED_SIZES[wire]
        else:
            raise FormatError(f"unexpected protobuf wire type {wire} in an ORC message")
        if pos > len(buf):
            raise FormatError("truncated ORC protobuf message")
        out.append((number, wire, value, buf[start:pos]))
    return out


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LENGTH_DELIMITED) + _varint(len(payload)) + payload


def _metadata_entries(items: Mapping[str, bytes]) -> bytes:
    return b"".join(
        _bytes_field(
            _FOOTER_METADATA,
            _bytes_field(_ITEM_NAME, name.encode()) + _bytes_field(_ITEM_VALUE, value),
        )
        for name, value in items.items()
    )


def metadata_patch(tail: bytes, file_size: int, items: Mapping[str, bytes]) -> TailPatch:
    """How to add ``items`` to the user metadata of the ORC file ending with ``tail``.

    ``tail`` is the file's last :data:`TAIL_BYTES` bytes (or the whole file when shorter).
    Names must not already be present: ORC keeps repeated names, and readers would see both.
    """
    if not tail or file_size < len(tail):
        raise FormatError("not an ORC file: empty")
    ps_len = tail[-1]
    if ps_len + 1 > len(tail):
        raise FormatError("not an ORC file: postscript longer than the file's tail")
    postscript = tail[-1 - ps_len : -1]
    fields = message_fields(postscript)
    values = {number: value for number, wire, value, _ in fields if wire == _VARINT}
    if _FOOTER_LENGTH not in values:
        raise FormatError("not an ORC file: postscript without a footer length")
    extra = _metadata_entries(items)
    if values.get(_COMPRESSION, _COMPRESSION_NONE) != _COMPRESSION_NONE:
        if len(extra) > values.get(_BLOCK_SIZE, _DEFAULT_BLOCK_SIZE):
            raise FormatError("ORC user metadata larger than one compression block")
        extra = (len(extra) << 1 | 1).to_bytes(3, "little") + extra  # an "original" chunk
    footer_length = values[_FOOTER_LENGTH] + len(extra)
    new_ps = b"".join(
        _varint(_FOOTER_LENGTH << 3 | _VARINT) + _varint(footer_length)
        if number == _FOOTER_LENGTH
        else raw
        for number, _, _, raw in fields
    )
    if len(new_ps) > 255:
        raise FormatError("ORC postscript would exceed 255 bytes")
    return TailPatch(file_size - 1 - ps_len, extra + new_ps + bytes([len(new_ps)]))


def acid_key_index(stripe_last_keys: list[tuple[int, int, int]]) -> bytes:
    """Hive's ``hive.acid.key.index``: ``originalTransaction,bucket,rowId;`` per stripe."""
    return "".join(f"{t},{b},{r};" for t, b, r in stripe_last_keys).encode()


def acid_stats(inserts: int, updates: int, deletes: int) -> bytes:
    """Hive's ``hive.acid.stats``: ``inserts,updates,deletes``."""
    return f"{inserts},{updates},{deletes}".encode()


def parse_acid_stats(value: bytes) -> tuple[int, int, int]:
    """(inserts, updates, deletes) from a ``hive.acid.stats`` value (see :func:`acid_stats`)."""
    try:
        inserts, updates, deletes = (int(n) for n in value.decode().strip().split(","))
    except ValueError as exc:
        raise ValueError(f"not a hive.acid.stats value: {value!r}") from exc
    return inserts, updates, deletes
