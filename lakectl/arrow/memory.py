"""Handing memory freed back to the system, so that a long step's peak resident memory is what
it holds at a time, not all it has allocated: pyarrow's allocator keeps freed pages for reuse,
and the C library's keeps those freed by the libraries that allocate through it (the ORC
writer's buffers and dictionaries, by the partition); a step that allocates blocks of many sizes
otherwise grows."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


def release_unused_memory() -> None:
    """Return the freed memory of pyarrow's default pool to the system (as far as its
    allocator can: mimalloc, jemalloc or the system's), and the C library's free memory
    (glibc's ``malloc_trim``; nothing elsewhere)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None on a C library without it."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


__all__ = ["release_unused_memory"]
