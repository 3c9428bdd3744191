"""What a load's source holds, found without Spark: its content hash and whether it has rows.

A source is a file or a folder of files (the names Spark's readers skip, ``_*`` and ``.*``, are
skipped here too), on any storage lakectl reads (local, ``s3://`` and the other fsspec schemes).
Each file is read once, sequentially, on this machine: the hash covers every byte, so the cost
grows with the source's size, never with the table's or its log's.

A batch is *empty* when no file of it can hold a row: zero-byte files, CSV files with a header
line and nothing else (blank lines aside), JSON-lines files of blank lines only, and a folder of
such files (or of none). Parquet, ORC and Avro files are empty only when they have zero bytes.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from lakectl.errors import BadInputError
from lakectl.storage.fs import Storage

FORMATS = ("csv", "json", "parquet", "orc", "avro")
"""The formats a load reads."""
TEXT_FORMATS = ("csv", "json")


@dataclass(frozen=True)
class SourceDigest:
    """A source's location (URL), content hash (``sha256:...``), files, bytes and emptiness."""

    url: str
    digest: str
    files: int
    size: int
    empty: bool


def source_files(storage: Storage, path: str) -> list[tuple[str, int]]:
    """(relative name, size) of the files a reader of ``path`` reads, sorted by name."""
    if not storage.isdir(path):
        return [("", int(storage.fs.info(path).get("size") or 0))]
    found = storage.fs.find(path, detail=True)
    prefix = path.rstrip("/") + "/"
    files = []
    for name, info in found.items():
        relative = name[len(prefix) :] if name.startswith(prefix) else posixpath.basename(name)
        if any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        if info.get("type", "file") == "file":
            files.append((relative, int(info.get("size") or 0)))
    return sorted(files)


def digest_source(storage: Storage, path: str, fmt: str) -> SourceDigest:
    """Hash every file of the source at ``path`` (in ``fmt``) and tell whether it has rows."""
    total = hashlib.sha256()
    empty = True
    files = source_files(storage, path)
    for relative, size in files:
        total.update(f"{relative}\0{size}\0".encode())
        full = storage.join(path, relative) if relative else path
        has_rows = _RowWatch(fmt) if size else None
        for chunk in storage.read_chunks(full) if size else ():
            total.update(chunk)
            if has_rows is not None:
                has_rows.feed(chunk)
        if has_rows is not None and has_rows.found:
            empty = False
    return SourceDigest(
        url=storage.url(path),
        digest="sha256:" + total.hexdigest(),
        files=len(files),
        size=sum(size for _, size in files),
        empty=empty,
    )


class _RowWatch:
    """Watches a file's bytes go by for a row: in CSV any non-blank text after the header line,
    in JSON lines any non-blank text; a binary format's non-empty file always has one."""

    def __init__(self, fmt: str) -> None:
        self.found = fmt not in TEXT_FORMATS
        self._in_header = fmt == "csv"

    def feed(self, chunk: bytes) -> None:
        if self.found:
            return
        if self._in_header:
            end = chunk.find(b"\n")
            if end < 0:
                return
            self._in_header = False
            chunk = chunk[end + 1 :]
        self.found = bool(chunk.strip())


@dataclass(frozen=True)
class MalformedLine:
    """A CSV record whose number of fields differs from its file's header."""

    file: str
    line: int
    fields: int
    expected: int

    def describe(self) -> str:
        return (
            f"{self.file}, line {self.line}: {self.fields} field(s) where the header has "
            f"{self.expected}"
        )


def malformed_csv_error(found: MalformedLine) -> BadInputError:
    """The error for a CSV source with the record ``found`` of the wrong width."""
    return BadInputError(
        f"malformed CSV: {found.describe()}; nothing was loaded",
        hint="fix or remove that line (a field with a comma or a line break needs double "
        "quotes), then load the file again",
    )


def first_malformed_csv_line(storage: Storage, path: str, shown: str) -> MalformedLine | None:
    """The first record of the CSV source at ``path`` (a file or folder, ``shown`` as the user
    named it) with more or fewer fields than its file's header (blank lines aside, as Spark
    skips them); ``None`` when every record has the header's width. Reads the files on this
    machine, one after the other."""
    import csv
    import io

    for relative, size in source_files(storage, path):
        if not size:
            continue
        full = storage.join(path, relative) if relative else path
        text = io.TextIOWrapper(
            io.BytesIO(b"".join(storage.read_chunks(full))), encoding="utf-8-sig", newline=""
        )
        reader = csv.reader(text, doublequote=True)
        header = next(reader, None)
        if header is None:
            continue
        start = reader.line_num + 1
        for record in reader:
            if record and len(record) != len(header):
                name = posixpath.join(shown, relative) if relative else shown
                return MalformedLine(name, start, len(record), len(header))
            start = reader.line_num + 1
    return None
