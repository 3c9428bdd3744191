"""Which landing files a stream still has to apply: a pure function of the log and a listing.

``lakectl stream`` records, in each micro-batch's commit record, the landing directory and the
names of the files the batch applied (``info.stream``). The log is the truth: a file is applied
exactly when a committed record names it, whatever Spark's own checkpoint says. On restart (or when
Spark hands over a batch again) the files the log already names are skipped.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from lakectl.errors import UsageError
from lakectl.table.log import CommitRecord

STREAM_INFO = "stream"
BAD_DIR = "_bad"


@dataclass(frozen=True)
class LandingFile:
    """A file in the landing directory: its name relative to the directory, size, arrival time."""

    name: str
    size: int = 0
    mtime_ms: int = 0


def is_landing_name(name: str) -> bool:
    """Files Spark's file source also ignores: hidden (``.x``) and underscore (``_x``) names.

    Producers write ``.name.tmp`` (or ``_name``) and rename when done, so half-written files are
    never picked up; ``_bad/`` (bad files moved aside) is skipped too.
    """
    base = posixpath.basename(name)
    return bool(base) and not base.startswith((".", "_"))


def applied_files(records: Iterable[CommitRecord], source_url: str) -> set[str]:
    """Names of the files of ``source_url`` that committed stream batches applied."""
    out: set[str] = set()
    for record in records:
        info = record.info.get(STREAM_INFO)
        if isinstance(info, dict) and info.get("source") == source_url:
            out.update(str(n) for n in info.get("files", ()))
    return out


def pending(files: Iterable[LandingFile], done: set[str]) -> list[LandingFile]:
    """Landing files not yet applied (nor skipped), in arrival order (time, then name)."""
    chosen = {f.name: f for f in files if is_landing_name(f.name) and f.name not in done}
    return sorted(chosen.values(), key=lambda f: (f.mtime_ms, f.name))


def stream_info(source_url: str, fmt: str, files: list[str], skipped: list[str]) -> dict[str, Any]:
    """The ``info`` of a micro-batch's commit record (``source``/``format`` as ``load`` has)."""
    body: dict[str, Any] = {"source": source_url, "files": list(files)}
    if skipped:
        body["skipped"] = list(skipped)
    return {"source": source_url, "format": fmt, STREAM_INFO: body}


def relative_name(file_url: str, source_path: str) -> str | None:
    """``file:///land/a.csv`` (as Spark reports it) -> ``a.csv`` for landing path ``/land``.

    ``None`` when the file is not under the landing directory.
    """
    parsed = urlparse(file_url)
    if parsed.scheme in ("", "file"):
        path = unquote(parsed.path)
    else:
        path = unquote(f"{parsed.netloc}{parsed.path}")
    root = source_path.rstrip("/")
    if not path.startswith(root + "/"):
        return None
    return path[len(root) + 1 :]


_TRIGGER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?|m|min|minutes?)?\s*$")


def parse_trigger(text: str) -> float:
    """``5s``, ``500ms``, ``1m`` or plain seconds -> seconds (at least 0.1)."""
    match = _TRIGGER.match(text.lower())
    if not match:
        raise UsageError(f"--trigger {text!r}: use e.g. 5s, 500ms or 1m")
    value = float(match.group(1))
    unit = match.group(2) or "s"
    seconds = value / 1000 if unit == "ms" else value * 60 if unit.startswith("m") else value
    if seconds < 0.1:
        raise UsageError(f"--trigger {text!r}: at least 100ms")
    return seconds
