"""Which columns of an ORC file carry a bloom filter or a dictionary: its stripe footers.

Neither pyorc nor pyarrow exposes bloom filters, so this reads the file tail itself (protobuf
wire format, ORC's compression chunks; NONE, ZLIB and SNAPPY) to check what writers produced.
"""

from __future__ import annotations

import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyorc

from lakectl.table.orc_tail import message_fields, read_varint

BLOOM_FILTER_KINDS = {7, 8}  # Stream.Kind BLOOM_FILTER, BLOOM_FILTER_UTF8
DICTIONARY_KINDS = {1, 3}  # ColumnEncoding.Kind DICTIONARY, DICTIONARY_V2


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint value or payload bytes) of a protobuf message."""
    out: list[tuple[int, int | bytes]] = []
    for number, wire, value, raw in message_fields(buf):
        if wire == 2:
            _, pos = read_varint(raw, 0)  # the tag
            _, pos = read_varint(raw, pos)  # the length
            out.append((number, raw[pos:]))
        else:
            out.append((number, value))
    return out


def _decompress(buf: bytes, codec: int) -> bytes:
    if codec == 0:
        return buf
    out, i = b"", 0
    while i < len(buf):
        header = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16
        chunk, i = buf[i + 3 : i + 3 + (header >> 1)], i + 3 + (header >> 1)
        if header & 1:
            out += chunk
        elif codec == 1:
            out += zlib.decompress(chunk, -15)
        elif codec == 2:
            size, _ = read_varint(chunk, 0)
            out += pa.Codec("snappy").decompress(chunk, decompressed_size=size).to_pybytes()
        else:
            raise ValueError(f"compression kind {codec} not supported here")
    return out


def _stripe_footers(path: Path) -> list[list[tuple[int, int | bytes]]]:
    """The fields of each stripe footer of an ORC file."""
    data = path.read_bytes()
    ps_len = data[-1]
    postscript = dict(_fields(data[-1 - ps_len : -1]))
    footer_len, codec = int(postscript[1]), int(postscript.get(2, 0))
    end = len(data) - 1 - ps_len
    footer = _fields(_decompress(data[end - footer_len : end], codec))
    out = []
    for field, raw in footer:
        if field != 3:
            continue
        stripe = dict(_fields(raw))  # type: ignore[arg-type]
        start = int(stripe[1]) + int(stripe.get(2, 0)) + int(stripe.get(3, 0))
        out.append(_fields(_decompress(data[start : start + int(stripe[4])], codec)))
    return out


def _names(path: Path) -> dict[int, str]:
    with path.open("rb") as handle:
        return dict(_column_names(pyorc.Reader(handle).schema, ""))


def bloom_filter_columns(path: Path) -> set[str] | None:
    """Dotted names (``row.id``) of the columns with a bloom filter in every stripe; ``None``
    for a file without stripes (no rows)."""
    per_stripe = []
    for stripe_footer in _stripe_footers(path):
        streams = [dict(_fields(s)) for f, s in stripe_footer if f == 1]  # type: ignore[arg-type]
        per_stripe.append({int(s.get(2, 0)) for s in streams if s.get(1, 0) in BLOOM_FILTER_KINDS})
    if not per_stripe:
        return None
    names = _names(path)
    common = set.intersection(*per_stripe)
    return {names[c] for c in common if c in names}


def dictionary_columns(path: Path) -> set[str]:
    """Dotted names of the columns that use dictionary encoding in some stripe."""
    names = _names(path)
    found = set()
    for stripe_footer in _stripe_footers(path):
        encodings = [dict(_fields(e)) for f, e in stripe_footer if f == 2]  # type: ignore[arg-type]
        for column, encoding in enumerate(encodings):
            if encoding.get(1, 0) in DICTIONARY_KINDS and column in names:
                found.add(names[column])
    return found


def _column_names(schema: pyorc.TypeDescription, prefix: str):
    for name, child in getattr(schema, "fields", {}).items():
        full = f"{prefix}{name}"
        yield child.column_id, full
        yield from _column_names(child, full + ".")


def acid_metadata_mismatch(path: Path) -> str | None:
    """How a file's ``hive.acid.*`` user metadata differs from what its rows say (Hive's
    format: stats ``inserts,updates,deletes``, key index ``txn,bucket,rowId;`` for the last
    event of each stripe, version 2); ``None`` when they agree. Reads every row with pyorc."""
    ops: Counter[int] = Counter()
    keys = []
    with path.open("rb") as handle:
        reader = pyorc.Reader(handle)
        meta = dict(reader.user_metadata)
        for number in range(reader.num_of_stripes):
            rows = list(reader.read_stripe(number))
            ops.update(r[0] for r in rows)
            if rows:
                keys.append("{},{},{};".format(*rows[-1][1:4]))
    expected = {
        "hive.acid.key.index": "".join(keys).encode(),
        "hive.acid.stats": f"{ops[0]},{ops[1]},{ops[2]}".encode(),
        "hive.acid.version": b"2",
    }
    got = {name: meta.get(name) for name in expected}
    return None if got == expected else f"{path}: {got} != {expected}"
