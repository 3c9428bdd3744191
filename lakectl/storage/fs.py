"""Storage behind a small contract: read, write, list, delete, move, and put-if-absent.

Backends are fsspec filesystems chosen by URL scheme (``file``, ``s3``, ``hdfs``, ...), imported
lazily by fsspec. ``put_if_absent`` is the one primitive the transaction log needs: it must create a
file atomically and fail when the file exists, never overwrite. Locally that is a hard link of a
fully written temporary file (atomic and exclusive); on S3 a conditional PUT (``If-None-Match``).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import fsspec

from lakectl.errors import StorageError


class AlreadyExistsError(StorageError):
    """``put_if_absent`` found the path taken: another writer got there first."""


def split_url(url: str) -> tuple[str, str]:
    """Return (scheme, path) for a table URL; plain paths are local files, made absolute."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = parsed.path if parsed.scheme == "file" else url
        return "file", os.path.abspath(os.path.expanduser(path))
    return parsed.scheme, f"{parsed.netloc}{parsed.path}".rstrip("/")


@dataclass
class Storage:
    """One filesystem plus the URL scheme it serves. Paths passed in are scheme-less."""

    scheme: str
    options: dict[str, Any] = field(default_factory=dict)
    _fs: Any = field(default=None, repr=False)

    @property
    def fs(self) -> Any:
        if self._fs is None:
            protocol = "file" if self.scheme == "file" else self.scheme
            try:
                self._fs = fsspec.filesystem(protocol, **self.options)
            except (ImportError, ValueError) as exc:
                raise StorageError(f"no storage backend for {self.scheme}://: {exc}") from exc
        return self._fs

    def __getstate__(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "options": self.options, "_fs": None}

    # --- URLs -------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        """The URL Spark and users see for a storage path."""
        if self.scheme == "file":
            return "file://" + path
        return f"{self.scheme}://{path}"

    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*parts)

    # --- reads ------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(path))

    def isdir(self, path: str) -> bool:
        return bool(self.fs.isdir(path))

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open(path, "rb") as handle:
                return bytes(handle.read())
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url(path)} does not exist") from exc

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def list_entries(self, path: str) -> list[dict[str, Any]]:
        """Entries directly under ``path`` (name, type, size); empty when it does not exist."""
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name == path.rstrip("/"):
                continue
            out.append(
                {
                    "name": posixpath.basename(name),
                    "path": name,
                    "type": "directory" if entry["type"] == "directory" else "file",
                    "size": int(entry.get("size") or 0),
                }
            )
        return sorted(out, key=lambda e: e["name"])

    def list_names(self, path: str) -> list[str]:
        return [e["name"] for e in self.list_entries(path)]

    def du(self, path: str) -> int:
        """Total bytes of the files under ``path``."""
        try:
            return int(self.fs.du(path, total=True))
        except FileNotFoundError:
            return 0

    # --- writes -----------------------------------------------------------------------------
    def makedirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a file. Not for the log: use :meth:`put_if_absent` there."""
        self.makedirs(posixpath.dirname(path))
        with self.fs.open(path, "wb") as handle:
            handle.write(data)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` atomically; raise :class:`AlreadyExistsError` if taken."""
        if self.scheme == "file":
            self._put_if_absent_local(path, data)
        elif self.scheme in ("s3", "s3a"):
            self._put_if_absent_s3(path, data)
        else:
            self._put_if_absent_generic(path, data)

    def _put_if_absent_local(self, path: str, data: bytes) -> None:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)  # atomic, and fails if path exists: readers never see a partial file
        except FileExistsError as exc:
            raise AlreadyExistsError(f"{path} already exists") from exc
        finally:
            os.unlink(tmp)

    def _put_if_absent_s3(self, path: str, data: bytes) -> None:
        bucket, _, key = path.partition("/")
        try:
            self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except Exception as exc:  # botocore ClientError, wrapped by s3fs
            text = str(exc)
            if (
                "PreconditionFailed" in text
                or "412" in text
                or "ConditionalRequestConflict" in text
            ):
                raise AlreadyExistsError(f"s3://{path} already exists") from exc
            raise StorageError(f"conditional put of s3://{path} failed: {exc}") from exc

    def _put_if_absent_generic(self, path: str, data: bytes) -> None:
        # HDFS (pyarrow) has create-if-not-exists semantics through mode "xb" where supported.
        self.makedirs(posixpath.dirname(path))
        try:
            with self.fs.open(path, "xb") as handle:
                handle.write(data)
        except FileExistsError as exc:
            raise AlreadyExistsError(f"{self.url(path)} already exists") from exc
        except (NotImplementedError, ValueError) as exc:
            raise StorageError(
                f"{self.scheme}:// storage cannot create files exclusively; lakectl needs that "
                "for safe commits"
            ) from exc

    def move(self, source: str, target: str) -> None:
        """Move a file (rename locally, copy + delete on object stores)."""
        self.makedirs(posixpath.dirname(target))
        self.fs.mv(source, target)

    def delete(self, path: str, recursive: bool = False) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(path, recursive=recursive)


def storage_for(url: str, options: dict[str, Any] | None = None) -> tuple[Storage, str]:
    """Return the storage serving ``url`` and the scheme-less path inside it."""
    scheme, path = split_url(url)
    return Storage(scheme, dict(options or {})), path
