"""``lakectl checkpoint``: write a log checkpoint now, whatever the table's interval says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.table.store import TableStore


@dataclass(frozen=True)
class CheckpointResult:
    """The checkpoint of the table's newest state, and whether this call wrote it."""

    table: str
    seq: int
    records: int
    url: str
    created: bool
    usable: bool = True
    """False when a damaged checkpoint holds the name: readers skip it, and the next commit's
    checkpoint takes its place."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "seq": self.seq,
            "records": self.records,
            "url": self.url,
            "created": self.created,
            "usable": self.usable,
        }


def write_checkpoint(store: TableStore) -> CheckpointResult:
    """Checkpoint the newest log entry; a usable checkpoint already there is kept as it is."""
    state = store.read_state()
    used = store.last_read is not None and store.last_read.checkpoint_seq == state.last_seq
    created = store.write_checkpoint(state)
    return CheckpointResult(
        table=store.name or store.url,
        seq=state.last_seq,
        records=len(state.records),
        url=store.checkpoint_url(state.last_seq),
        created=created,
        usable=created or used,
    )
