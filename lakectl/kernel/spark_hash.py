"""Spark's ``hash()`` of Arrow columns, and the bucket a new row of a bucketed table goes to.

Spark puts a new row of a bucketed table into bucket ``pmod(hash(key columns), buckets)`` (its
bucketed tables, and lakectl's compactions Spark writes); lakectl's event writer must choose
the same bucket, or a key would live in two bucket files. ``hash`` is Spark's ``Murmur3Hash`` with
42 as its starting value: the columns are hashed in order, each starting from the previous
column's result, and a NULL leaves the running value unchanged. Per type:

- boolean (1 or 0), tinyint, smallint, int and date (days): Murmur3 of one 32-bit int;
- bigint, timestamp and timestamp_ntz (microseconds): of one 64-bit long (low word first);
- float and double: of their IEEE bits, with -0.0 hashed as 0.0 and every NaN as Java's
  canonical NaN (``floatToIntBits``/``doubleToLongBits``);
- decimal of precision up to 18: the unscaled value as a long; above: the bytes of the unscaled
  value as Java's ``BigInteger.toByteArray`` gives them (big-endian two's complement, shortest);
- string (UTF-8 bytes) and binary: Spark's ``hashUnsafeBytes``, which mixes each byte after the
  last whole 4-byte word on its own, sign-extended, unlike the reference Murmur3.

Everything is computed on whole columns with numpy in uint32 arithmetic (wrapping on overflow);
strings and binaries one 4-byte word position at a time over all values that long.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from lakectl.errors import ArrowEngineLimit

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from lakectl.table.metadata import TableMetadata

    Column: TypeAlias = pa.Array | pa.ChunkedArray

SPARK_HASH_SEED = 42
# Spark's Decimal.MAX_LONG_DIGITS: decimals of up to this precision are hashed as a long.
_MAX_LONG_DIGITS = 18

# Murmur3's constants; numpy keeps uint32 arithmetic in uint32 with Python int operands.
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_N = 0xE6546B64
_F1 = 0x85EBCA6B
_F2 = 0xC2B2AE35
# Java's canonical NaN bits (floatToIntBits, doubleToLongBits)
_FLOAT_NAN_BITS = 0x7FC00000
_DOUBLE_NAN_BITS = 0x7FF8000000000000


def spark_hash(columns: Sequence[Column], seed: int = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``hash(c1, c2, ...)`` of each row of ``columns`` (equal lengths) as int32.

    Raises :class:`UsageError` for a column type Spark hashes but this does not (nested types,
    intervals, unsigned integers): :func:`unsupported_key_type` tells it beforehand.
    """
    import numpy as np

    if not columns:
        raise ValueError("spark_hash needs at least one column")
    arrays = [_one_array(c) for c in columns]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"columns of different lengths: {[len(a) for a in arrays]}")
    problem = unsupported_key_type(a.type for a in arrays)
    if problem is not None:
        raise unsupported_key_error(problem)
    h = np.full(n, seed & 0xFFFFFFFF, dtype=np.uint32)
    for array in arrays:
        h = _hash_column(array, h)
    return h.view(np.int32)


def bucket_ids(table: pa.Table, key_columns: Sequence[str], buckets: int) -> np.ndarray:
    """The bucket of each row of ``table``: ``pmod(hash(key columns), buckets)`` as Spark's
    writer computes it (int32, 0..buckets-1). Column names match case-insensitively."""
    import numpy as np

    if buckets <= 0:
        raise ValueError(f"buckets must be positive, not {buckets}")
    hashes = spark_hash([_column(table, name) for name in key_columns])
    return np.mod(hashes.astype(np.int64), buckets).astype(np.int32)


def bucket_key_names(meta: TableMetadata) -> list[str]:
    """The columns whose hash picks a new row's bucket: the primary key, else the first data
    column (Spark's writer and the Arrow writer both ask here)."""
    return list(meta.primary_key or meta.data_schema.names[:1])


def unsupported_key_type(types: Iterable[pa.DataType]) -> str | None:
    """A phrase naming the first of ``types`` whose Spark hash is not computed here (for
    :func:`lakectl.engine.choose_engine`'s ``arrow_unsupported``), or None when all are."""
    import pyarrow as pa

    for t in types:
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not _supported(t):
            return f"a bucketed table's key of type {t}"
    return None


def unsupported_key_error(problem: str) -> ArrowEngineLimit:
    """The error for a key :func:`unsupported_key_type` names."""
    return ArrowEngineLimit(
        f"the Arrow engine cannot compute the bucket of {problem}", hint="use --engine spark"
    )


def _supported(t: pa.DataType) -> bool:
    import pyarrow as pa

    return (
        pa.types.is_null(t)
        or pa.types.is_boolean(t)
        or pa.types.is_signed_integer(t)
        or pa.types.is_date32(t)
        or (pa.types.is_timestamp(t) and t.unit != "ns")
        or pa.types.is_float32(t)
        or pa.types.is_float64(t)
        or pa.types.is_decimal128(t)
        or pa.types.is_decimal256(t)
        or _is_bytes(t)
    )


def _is_bytes(t: pa.DataType) -> bool:
    import pyarrow as pa

    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    )


def _one_array(column: Column) -> pa.Array:
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name in table.column_names:
        return table.column(name)
    lowered = [c.lower() for c in table.column_names]
    if lowered.count(name.lower()) == 1:
        return table.column(lowered.index(name.lower()))
    raise ValueError(f"bucket key column {name!r} not in {table.column_names}")


# --- Murmur3 x86_32 on uint32 arrays ------------------------------------------------------------


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << r) | (x >> (32 - r))


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    return _rotl(k1 * _C1, 15) * _C2


def _mix_h1(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    return _rotl(h1 ^ k1, 13) * 5 + _N


def _fmix(h1: np.ndarray, length: np.ndarray | int) -> np.ndarray:
    """The finalisation mix of a value of ``length`` bytes (uint32 array, or an int)."""
    h1 = h1 ^ length
    h1 = (h1 ^ (h1 >> 16)) * _F1
    h1 = (h1 ^ (h1 >> 13)) * _F2
    return h1 ^ (h1 >> 16)


def _hash_int(values: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """``hashInt`` of int32 values (any integer dtype of at most 32 bits, sign-extended)."""
    import numpy as np

    return _fmix(_mix_h1(seed, _mix_k1(values.astype(np.int32).view(np.uint32))), 4)


def _hash_long(values: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """``hashLong`` of int64 (or uint64 bit patterns): the low word, then the high word."""
    import numpy as np

    bits = values.astype(np.int64).view(np.uint64)
    low = bits.astype(np.uint32)
    high = (bits >> np.uint64(32)).astype(np.uint32)
    return _fmix(_mix_h1(_mix_h1(seed, _mix_k1(low)), _mix_k1(high)), 8)


def _hash_bytes(data: np.ndarray, offsets: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``hashUnsafeBytes`` of each value ``data[offsets[i]:offsets[i+1]]``.

    Whole 4-byte words (little-endian) are mixed one word position at a time over the values
    that have it (values sorted by length, so they are a prefix); then each remaining byte,
    sign-extended to an int, is mixed as a word of its own; the length finalises.
    """
    import numpy as np

    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    words = lengths // 4
    padded = np.concatenate([data, np.zeros(4, dtype=np.uint8)])
    # every byte offset read as a little-endian uint32 (an unaligned, overlapping view)
    at = np.ndarray(shape=(len(padded) - 3,), dtype="<u4", buffer=padded, strides=(1,))
    h = seed.copy()
    if len(words) and words.max() > 0:
        order = np.argsort(-words, kind="stable")
        longest_first = words[order]
        # how many values have more than j words, for each j
        have = np.searchsorted(-longest_first, -np.arange(longest_first[0]), side="left")
        hs = h[order]
        ss = starts[order]
        for j, m in enumerate(have.tolist()):
            hs[:m] = _mix_h1(hs[:m], _mix_k1(at[ss[:m] + 4 * j].astype(np.uint32)))
        h[order] = hs
    tail_at = starts + 4 * words
    tail = lengths - 4 * words
    for i in range(3):
        rows = np.flatnonzero(tail > i)
        if len(rows) == 0:
            break
        byte = padded[tail_at[rows] + i].view(np.int8).astype(np.int32).view(np.uint32)
        h[rows] = _mix_h1(h[rows], _mix_k1(byte))
    return _fmix(h, lengths.astype(np.uint32))


# --- per type -----------------------------------------------------------------------------------


def _hash_column(array: pa.Array, seed: np.ndarray) -> np.ndarray:
    """The next seed after hashing ``array``: its hash where a value is set, ``seed`` where NULL."""
    import numpy as np
    import pyarrow as pa

    t = array.type
    if pa.types.is_null(t) or array.null_count == len(array):
        return seed
    if pa.types.is_boolean(t):
        hashed = _hash_int(_filled(array, False).astype(np.int32), seed)
    elif pa.types.is_signed_integer(t) and t.bit_width <= 32:
        hashed = _hash_int(_filled(array, 0), seed)
    elif pa.types.is_date32(t):
        hashed = _hash_int(_filled(array.cast(pa.int32()), 0), seed)
    elif pa.types.is_int64(t):
        hashed = _hash_long(_filled(array, 0), seed)
    elif pa.types.is_timestamp(t):
        micros = array.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
        hashed = _hash_long(_filled(micros, 0), seed)
    elif pa.types.is_float32(t):
        hashed = _hash_int(_float_bits(_filled(array, 0.0), np.uint32, _FLOAT_NAN_BITS), seed)
    elif pa.types.is_float64(t):
        hashed = _hash_long(_float_bits(_filled(array, 0.0), np.uint64, _DOUBLE_NAN_BITS), seed)
    elif pa.types.is_decimal(t):
        hashed = _hash_decimal(array, seed)
    else:  # strings and binaries (spark_hash checked the type)
        data, offsets = _bytes_of(array)
        hashed = _hash_bytes(data, offsets, seed)
    if array.null_count == 0:
        return hashed
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    return np.where(valid, hashed, seed)


def _filled(array: pa.Array, fill: object) -> np.ndarray:
    import numpy as np

    filled = array.fill_null(fill) if array.null_count else array
    return np.asarray(filled.to_numpy(zero_copy_only=False))


def _float_bits(values: np.ndarray, bits_type: type, nan_bits: int) -> np.ndarray:
    """Java's ``floatToIntBits``/``doubleToLongBits`` with -0.0 as 0.0 (as Spark hashes)."""
    import numpy as np

    bits: np.ndarray = values.view(bits_type)
    zero_or_nan = np.where(values == 0, bits_type(0), bits)
    return np.where(np.isnan(values), bits_type(nan_bits), zero_or_nan)


def _bytes_of(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The value bytes and the int64 offsets of a string or binary array."""
    import numpy as np
    import pyarrow as pa

    t = array.type
    if not (pa.types.is_large_binary(t) or pa.types.is_large_string(t)):
        array = array.cast(pa.large_string() if _is_text(t) else pa.large_binary())
    _, offset_buffer, data_buffer = array.buffers()
    assert offset_buffer is not None
    offsets = np.frombuffer(offset_buffer, dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return data, offsets


def _is_text(t: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _hash_decimal(array: pa.Array, seed: np.ndarray) -> np.ndarray:
    """A decimal by its type's precision: the unscaled value as a long, or its bytes."""
    import numpy as np

    t = array.type
    width = t.byte_width
    raw = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    little = raw[array.offset * width : (array.offset + len(array)) * width].reshape(-1, width)
    if t.precision <= _MAX_LONG_DIGITS:
        unscaled = np.ascontiguousarray(little[:, :8]).view("<i8").reshape(-1)
        return _hash_long(unscaled, seed)
    data, offsets = _big_integer_bytes(little[:, ::-1])
    return _hash_bytes(data, offsets, seed)


def _big_integer_bytes(big: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Java's ``BigInteger.toByteArray`` of each row of big-endian two's complement bytes: the
    shortest form that keeps the sign (a leading 0x00 or 0xFF byte is dropped while the next
    byte's top bit equals the sign), at least one byte. Returned as bytes and offsets."""
    import numpy as np

    n, width = big.shape
    sign = np.where(big[:, 0] >= 0x80, np.uint8(0xFF), np.uint8(0))[:, None]
    redundant = (big[:, :-1] == sign) & ((big[:, 1:] & 0x80) == (sign & 0x80))
    dropped = np.cumprod(redundant, axis=1).sum(axis=1)
    keep = np.arange(width)[None, :] >= dropped[:, None]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(width - dropped, out=offsets[1:])
    return np.ascontiguousarray(big)[keep], offsets
