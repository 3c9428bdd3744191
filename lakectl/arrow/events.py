"""ACID event files opened for pyarrow's ORC reader. Shared by the JVM-free reader
(:mod:`lakectl.arrow.read`) and the pyarrow paths that run inside Spark tasks
(:mod:`lakectl.spark.bucket_rewrite`, :mod:`lakectl.spark.key_lookup`,
:mod:`lakectl.spark.fsspec_orc`); the rules their events are read by are in
:mod:`lakectl.kernel`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lakectl.storage.fs import Storage
from lakectl.table.orc_files import reading_orc


@contextmanager
def orc_source(storage: Storage, path: str) -> Iterator[Any]:
    """What ``pyarrow.orc.ORCFile`` reads ``path`` from: the local file mapped into memory (read
    by Arrow itself, not through Python calls), or the object's bytes fetched with one GET
    (random reads on an object store cost a request each). A failure to read or decode the
    file inside the block names it (:func:`~lakectl.table.orc_files.reading_orc`)."""
    import pyarrow as pa

    with reading_orc(storage, path):
        if storage.scheme == "file":
            with pa.memory_map(path) as handle:
                yield handle
        else:
            yield pa.BufferReader(storage.cat(path))


__all__ = ["orc_source"]
