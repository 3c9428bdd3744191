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
from collections.abc import Iterable, Sequence

from lakectl.table.log import CommitRecord

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
    """A checkpoint's bytes: the records, oldest first, and the seq they end at."""
    if not records:
        raise ValueError("a checkpoint needs at least one record")
    body = {
        "format": CHECKPOINT_FORMAT,
        "seq": records[-1].seq,
        "records": [r.to_json() for r in records],
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")


def decode_checkpoint(raw: bytes, seq: int) -> tuple[CommitRecord, ...] | None:
    """The records of the checkpoint at ``seq``; None when it is damaged or inconsistent.

    A checkpoint is accepted only when it parses completely (a truncated file, as a killed
    writer on a store without atomic creates could leave, does not), names ``seq``, and holds
    records in strictly increasing seq order ending at ``seq`` and starting at entry 0.
    """
    try:
        body = json.loads(raw.decode("utf-8"))
        if body.get("format") != CHECKPOINT_FORMAT or body.get("seq") != seq:
            return None
        records = tuple(CommitRecord.from_json(r) for r in body["records"])
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return None
    seqs = [r.seq for r in records]
    if not seqs or seqs[0] != 0 or seqs[-1] != seq or seqs != sorted(set(seqs)):
        return None
    return records


def usable_checkpoints(checkpoint_seqs: Iterable[int], log_seqs: Iterable[int]) -> list[int]:
    """Checkpoints a reader may start from, newest first.

    Only those at a seq whose log record exists count: a checkpoint never stands for a commit
    the log does not hold.
    """
    present = set(log_seqs)
    return sorted((s for s in set(checkpoint_seqs) if s in present), reverse=True)


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
