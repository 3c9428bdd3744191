"""What a table holds on disk, in forms tests compare: every path with its content's hash, data
files as their events, log records without the fields that differ between runs."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow.orc as orc

RUN_FIELDS = ("committed_at", "started_at", "run_id", "merge_task_cpu_ms")
"""Log record fields that differ between two runs of the same commits (times, run ids)."""


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root``: a file's SHA-256, a directory's ``dir``."""
    return {
        str(p.relative_to(root)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        )
        for p in sorted(root.rglob("*"))
    }


def data_files(root: Path) -> dict[str, Any]:
    """Every data file and marker under the table (the log aside): ORC files as their events in
    file order, the others as their bytes."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_dir() or rel.startswith("_lakectl"):
            continue
        if path.name.startswith("bucket_"):
            out[rel] = orc.ORCFile(str(path)).read().to_pylist()
        else:
            out[rel] = path.read_bytes()
    return out


def without_run_fields(value: Any) -> Any:
    """``value`` (log records as JSON) without the :data:`RUN_FIELDS`, at any depth."""
    if isinstance(value, dict):
        return {k: without_run_fields(v) for k, v in value.items() if k not in RUN_FIELDS}
    if isinstance(value, list):
        return [without_run_fields(v) for v in value]
    return value
