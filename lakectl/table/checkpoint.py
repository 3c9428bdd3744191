"""Log checkpoints as values: what a checkpoint file holds, when one is due, which one to use.

A checkpoint ``_lakectl/checkpoints/<seq>.json`` holds every commit record up to and including
log entry ``seq``, so a reader rebuilds the table state from one object plus the records
committed after it instead of reading every record. Checkpoints are written with put-if-absent,
never changed, and never required: a missing, unreadable or inconsistent checkpoint is skipped
(the next older one, or the records themselves, are used instead). Everything here is pure;
:mod:`lakectl.table.store` reads and writes the files.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lakectl.errors import FormatError
from lakectl.table.json_input import (
    REQUIRED,
    SizeLimit,
    field_int,
    field_list,
    field_str,
    parse_json,
)
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
    return int(stem) if stem.isascii() and stem.isdigit() else None


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
        "record_count": len(rows),
        "records_sha256": "",
    }
    return _sealed(json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8"))


_DIGEST_KEY = b'"records_sha256":'


def _sealed(raw: bytes) -> bytes:
    """``raw`` with its empty digest filled in: the SHA-256 of the file as it was."""
    at = raw.rindex(_DIGEST_KEY + b'""')  # the last key but "seq" in sorted order
    digest = hashlib.sha256(raw).hexdigest().encode("ascii")
    return raw[:at] + _DIGEST_KEY + b'"' + digest + b'"' + raw[at + len(_DIGEST_KEY) + 2 :]


# Decoded checkpoints by content digest: a process that commits or reads many times (a stream,
# an API user) parses each checkpoint once. Keyed by content, so a changed file is parsed anew.
_DECODED: OrderedDict[tuple[int, int, int], tuple[CommitRecord, ...]] = OrderedDict()
_DECODED_KEEP = 4


def decode_checkpoint(raw: bytes, seq: int) -> tuple[CommitRecord, ...] | None:
    """The records of the checkpoint at ``seq``; None when it is damaged or inconsistent (see
    :func:`load_checkpoint`)."""
    try:
        return load_checkpoint(raw, seq, f"checkpoint {seq}")
    except FormatError:
        return None


def load_checkpoint(raw: bytes, seq: int, where: str) -> tuple[CommitRecord, ...]:
    """The records of the checkpoint at ``seq`` (the file ``where``), or a :class:`FormatError`
    saying why it cannot be used.

    A checkpoint is accepted only when it parses completely within the size and depth limits (a
    truncated file, as a killed writer on a store without atomic creates could leave, does not),
    every field has its type, it names ``seq``, holds records in strictly increasing seq order
    from entry 0 to ``seq``, and its record count and SHA-256 match its records. Checkpoints
    written before they carried a count and digest have neither; the store then relies on its
    other check, that the last record equals the log entry at ``seq``.
    """
    digest = (seq, len(raw), zlib.crc32(raw))
    if digest in _DECODED:
        _DECODED.move_to_end(digest)
        return _DECODED[digest]
    records = _parse(raw, seq, where)
    _DECODED[digest] = records
    while len(_DECODED) > _DECODED_KEEP:
        _DECODED.popitem(last=False)
    return records


def remember_checkpoint(raw: bytes, seq: int, records: Sequence[CommitRecord]) -> None:
    """Note that ``raw`` decodes to ``records``: the writer of a checkpoint need not parse it."""
    _DECODED[(seq, len(raw), zlib.crc32(raw))] = tuple(records)
    while len(_DECODED) > _DECODED_KEEP:
        _DECODED.popitem(last=False)


def _parse(raw: bytes, seq: int, where: str) -> tuple[CommitRecord, ...]:
    body = parse_json(raw, where, limit=SizeLimit.CHECKPOINT)
    try:
        if not isinstance(body, dict):
            raise ValueError("it is not a JSON object")
        if body.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"format {str(body.get('format'))[:20]} is not {CHECKPOINT_FORMAT}")
        if field_int(body, "seq") != seq:
            raise ValueError(f"it names log entry {body['seq']}, not {seq}")
        metadata_rows = field_list(body, "metadata", _object, REQUIRED)
        rows = field_list(body, "records", _object, REQUIRED)
        _verify_digest(raw, body, rows)
        metadata = [TableMetadata.from_json(m) for m in metadata_rows]
        records = []
        for row in rows:
            ref = field_int(row, "metadata_ref", None, low=0, high=len(metadata) - 1)
            record = CommitRecord.from_json(row)
            records.append(record if ref is None else replace(record, metadata=metadata[ref]))
    except ValueError as exc:
        raise FormatError(
            f"{where} is damaged: {str(exc)[:300]}",
            hint="lakectl reads the log records instead; remove the file, or restore it",
        ) from exc
    seqs = [r.seq for r in records]
    if not seqs or seqs[0] != 0 or seqs[-1] != seq or seqs != sorted(set(seqs)):
        raise FormatError(
            f"{where} does not hold the records 0 to {seq} in order",
            hint="lakectl reads the log records instead; remove the file, or restore it",
        )
    return tuple(records)


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    return value


def _verify_digest(raw: bytes, body: dict[str, Any], rows: list[Any]) -> None:
    """Raise when the checkpoint's record count or digest does not match its contents. The
    digest is the SHA-256 of the file with the digest's own value empty."""
    if "records_sha256" not in body and "record_count" not in body:
        return  # written before checkpoints carried them
    count = field_int(body, "record_count", low=0)
    if count != len(rows):
        raise ValueError(f"it says it holds {count} records but holds {len(rows)}")
    expected = field_str(body, "records_sha256").encode("utf-8")
    sealed = _DIGEST_KEY + b'"' + expected + b'"'
    at = raw.rfind(sealed)
    if at < 0 or _sealed(raw[:at] + _DIGEST_KEY + b'""' + raw[at + len(sealed) :]) != raw:
        raise ValueError("its records do not match its SHA-256 digest (they were changed)")


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
