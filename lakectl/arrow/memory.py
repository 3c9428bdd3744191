"""Handing memory pyarrow has freed back to the system, so that a long step's peak resident
memory is what it holds at a time, not all it has allocated (pyarrow's allocators keep freed
pages for reuse; a step that allocates blocks of many sizes otherwise grows)."""

from __future__ import annotations


def release_unused_memory() -> None:
    """Return the freed memory of pyarrow's default pool to the system (as far as its
    allocator can: mimalloc, jemalloc or the system's)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


__all__ = ["release_unused_memory"]
