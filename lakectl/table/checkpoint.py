"""Log checkpoints as values: what a checkpoint file holds, when one is due, which one to use.

A checkpoint ``_lakectl/checkpoints/<seq>.json`` holds every commit record up to and including
log entry ``seq``, so a reader rebuilds the table state from one object plus the records
committed after it instead of reading every record. Checkpoints are written with put-if-absent,
never changed, and never required: a missing, unreadable or inconsistent checkpoint is skipped
(the next older one, or the records themselves, are used instead). Everything here is pure;
:mod:`lakectl.table.store` reads and writes the files.
"""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lakectl.table.log import CommitRecord
from lakectl.table.metadata import TableMetadata

CHECKPOINT_FORMAT = 1
INTERVAL_PROPERTY = "log.checkpoint.interval"
_SUFFIX = ".json"


def checkpoint_name(seq: int, width: int = 20) -> str:
    """The file name of the checkpoint at log entry ``seq`` (zero-padded, sorts by seq)."""
    return f"{seq:0{width}d}{_SUFFIX}"


def parse_checkpoint_name(name: str) -> int | None:
    """The seq a checkpoint file name stands for; None for anything else (temporary files)."""
    stem = name[: -len(_SUFFIX)] if name.endswith(_SUFFIX) else ""
    return int(stem) if stem.isdigit() else None


def encode_checkpoint(records: Sequence[CommitRecord]) -> bytes:
    """A checkpoint's bytes: the records, oldest first, and the seq they end at.

    Table metadata is stored once per distinct value (records refer to it by index): property
    changes repeat the whole schema in every record, which would dominate the file otherwise.
    """
    if not records:
        raise ValueError("a checkpoint needs at least one record")
    metadata: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    by_object: dict[int, int] = {}  # records read from one checkpoint share metadata objects
    rows = []
    for record in records:
        row = record.to_json()
        meta = row.pop("metadata", None)
        if meta is not None:
            ref = by_object.get(id(record.metadata))
            if ref is None:
                key = json.dumps(meta, sort_keys=True)
                if key not in index:
                    index[key] = len(metadata)
                    metadata.append(meta)
                ref = by_object[id(record.metadata)] = index[key]
            row["metadata_ref"] = ref
        rows.append(row)
    body = {
        "format": CHECKPOINT_FORMAT,
        "seq": records[-1].seq,
        "metadata": metadata,
        "records": rows,
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")


# Decoded checkpoints by content digest: a process that commits or reads many times (a stream,
# an API user) parses each checkpoint once. Keyed by content, so a changed file is parsed anew.
_DECODED: OrderedDict[tuple[int, int, int], tuple[CommitRecord, ...]] = OrderedDict()
_DECODED_KEEP = 4


def decode_checkpoint(raw: bytes, seq: int) -> tuple[CommitRecord, ...] | None:
    """The records of the checkpoint at ``seq``; None when it is damaged or inconsistent.

    A checkpoint is accepted only when it parses completely (a truncated file, as a killed
    writer on a store without atomic creates could leave, does not), names ``seq``, and holds
    records in strictly increasing seq order from entry 0 to ``seq``.
    """
    digest = (seq, len(raw), zlib.crc32(raw))
    if digest in _DECODED:
        _DECODED.move_to_end(digest)
        return _DECODED[digest]
    records = _parse(raw, seq)
    if records is not None:
        _DECODED[digest] = records
        while len(_DECODED) > _DECODED_KEEP:
            _DECODED.popitem(last=False)
    return records


def remember_checkpoint(raw: bytes, seq: int, records: Sequence[CommitRecord]) -> None:
    """Note that ``raw`` decodes to ``records``: the writer of a checkpoint need not parse it."""
    _DECODED[(seq, len(raw), zlib.crc32(raw))] = tuple(records)
    while len(_DECODED) > _DECODED_KEEP:
        _DECODED.popitem(last=False)


def _parse(raw: bytes, seq: int) -> tuple[CommitRecord, ...] | None:
    try:
        body = json.loads(raw.decode("utf-8"))
        if body.get("format") != CHECKPOINT_FORMAT or body.get("seq") != seq:
            return None
        metadata = [TableMetadata.from_json(m) for m in body["metadata"]]
        records = []
        for row in body["records"]:
            ref = row.pop("metadata_ref", None)
            record = CommitRecord.from_json(row)
            records.append(record if ref is None else replace(record, metadata=metadata[ref]))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, UnicodeDecodeError):
        return None
    seqs = [r.seq for r in records]
    if not seqs or seqs[0] != 0 or seqs[-1] != seq or seqs != sorted(set(seqs)):
        return None
    return tuple(records)


def checkpoint_due(seq: int, last_checkpoint_seq: int | None, interval: int) -> bool:
    """Whether the writer that committed ``seq`` should also write a checkpoint.

    Every ``interval`` commits counted from the newest checkpoint the writer started from
    (``-1``: none, as in tables written before checkpoints existed, which so get one on their
    next commit); at multiples of ``interval`` when the writer does not know (it read no state).
    An interval of 0 turns automatic checkpoints off.
    """
    if interval <= 0 or seq <= 0:
        return False
    if last_checkpoint_seq is None:
        return seq % interval == 0
    return seq - max(last_checkpoint_seq, 0) >= interval
