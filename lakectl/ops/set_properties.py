"""``lakectl set``: change table properties (thresholds, retention, file size) as one commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakectl.errors import UsageError
from lakectl.table.log import Operation
from lakectl.table.metadata import DEFAULT_PROPERTIES
from lakectl.table.properties import validate
from lakectl.table.store import TableStore

OPERATION = Operation.SET_PROPERTIES


@dataclass
class SetResult:
    table: str
    log_seq: int | None
    changed: dict[str, str | None]
    properties: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "log_seq": self.log_seq,
            "changed": self.changed,
            "properties": self.properties,
        }


def parse_assignments(
    assignments: tuple[str, ...], unset: tuple[str, ...] = ()
) -> dict[str, str | None]:
    """``("k=v", ...)`` and keys to reset -> {key: value or None}, every one validated."""
    if not assignments and not unset:
        raise UsageError("nothing to set: give KEY=VALUE (or --unset KEY)")
    out: dict[str, str | None] = {}
    for text in assignments:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{text!r}: expected KEY=VALUE, e.g. clean.retain=3d")
        out[key.strip()] = validate(key.strip(), value.strip())
    for key in unset:
        validate(key, DEFAULT_PROPERTIES.get(key, ""))
        out[key] = None
    return out


def set_properties(
    store: TableStore, assignments: tuple[str, ...], unset: tuple[str, ...] = ()
) -> SetResult:
    """Validate and commit; a key set to its current value changes nothing (no commit)."""
    updates = parse_assignments(assignments, unset)
    state = store.read_state()
    meta = state.metadata
    changed = {k: v for k, v in updates.items() if meta.properties.get(k) != v}
    seq = None
    if changed:
        new_meta = meta.with_properties(changed)
        with store.transaction(OPERATION, read=state) as txn:
            seq = txn.commit(metadata=new_meta, info={"changed": changed}).seq
        meta = new_meta
    return SetResult(store.name or store.url, seq, changed, meta.effective_properties())
