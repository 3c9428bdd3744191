"""Valid write-id lists (Hive's ValidWriteIdList): which write ids a reader may see.

A write id ``w`` is valid when ``w <= high_watermark`` and ``w`` is not an exception (open or
aborted). Hive serializes the list as ``table:hwm:minOpen:open,ids:aborted,ids``; lakectl accepts
that form on the command line for tables Hive wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakectl.errors import UsageError

_NO_OPEN = 9223372036854775807


@dataclass(frozen=True)
class ValidWriteIds:
    """A reader's view: the high watermark and the write ids below it that are not visible."""

    high_watermark: int
    exceptions: frozenset[int] = frozenset()

    def is_valid(self, write_id: int) -> bool:
        return write_id <= self.high_watermark and write_id not in self.exceptions

    def is_range_valid(self, low: int, high: int) -> bool:
        """True when every write id in ``low..high`` is valid (a delta can be used whole)."""
        return high <= self.high_watermark and not any(low <= w <= high for w in self.exceptions)

    def is_range_partly_valid(self, low: int, high: int) -> bool:
        if low > self.high_watermark:
            return False
        return any(w not in self.exceptions for w in range(low, min(high, self.high_watermark) + 1))

    @staticmethod
    def from_committed(committed: set[int]) -> ValidWriteIds:
        if not committed:
            return ValidWriteIds(0, frozenset())
        hwm = max(committed)
        return ValidWriteIds(hwm, frozenset(w for w in range(1, hwm + 1) if w not in committed))

    def to_hive_string(self, table: str = "default.table") -> str:
        ordered = sorted(self.exceptions)
        min_open = ordered[0] if ordered else _NO_OPEN
        return f"{table}:{self.high_watermark}:{min_open}::{','.join(map(str, ordered))}"


def parse_valid_write_ids(text: str) -> ValidWriteIds:
    """Parse Hive's ``table:hwm:minOpen:open:aborted`` form (table optional), or a bare ``hwm``."""
    parts = text.strip().split(":")
    try:
        if len(parts) == 1:
            return ValidWriteIds(int(parts[0]))
        if not parts[0].lstrip("-").isdigit():
            parts = parts[1:]
        hwm = int(parts[0])
        exceptions: set[int] = set()
        for field in parts[2:4]:
            exceptions.update(int(x) for x in field.split(",") if x.strip())
        return ValidWriteIds(hwm, frozenset(exceptions))
    except (ValueError, IndexError) as exc:
        raise UsageError(
            f"--valid-write-ids {text!r} is not a valid write-id list",
            hint="Hive's form is table:highWatermark:minOpenWriteId:openIds:abortedIds, "
            "e.g. default.nation:3:9223372036854775807::",
        ) from exc
