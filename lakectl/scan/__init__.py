"""What a read reads, decided once for every back end (pure Python: no Spark, no pyarrow).

- :mod:`.request`: the read's arguments (:class:`SnapshotRequest`) and their checks;
- :mod:`.target`: the table state a read resolves to (version, ``known_at``, ``as_of``, or a
  valid-write-id list for Hive-written tables) and its per-partition plans;
- :mod:`.statements`: the Type 7 statements a read applies;
- :mod:`.pruning`: partitions and list-bucketing directories a ``where`` cannot match;
- :mod:`.plan`: the :class:`Scan` value and its planner :func:`plan_scan`;
- :mod:`.changes`: the change feed's :class:`ChangeScan` and its per-commit rule.

The back ends (:mod:`lakectl.spark`, :mod:`lakectl.arrow`) read a :class:`Scan` or a
:class:`ChangeScan`; the commands (:mod:`lakectl.ops`) plan them.
"""

from __future__ import annotations

from lakectl.scan.changes import ChangeScan, ChangesRequest, plan_change_scan
from lakectl.scan.plan import Scan, ScanPartition, plan_scan, scan_of
from lakectl.scan.pruning import ScanStats
from lakectl.scan.request import SnapshotRequest
from lakectl.scan.target import ReadTarget, open_for_read

__all__ = [
    "ChangeScan",
    "ChangesRequest",
    "ReadTarget",
    "Scan",
    "ScanPartition",
    "ScanStats",
    "SnapshotRequest",
    "open_for_read",
    "plan_change_scan",
    "plan_scan",
    "scan_of",
]
