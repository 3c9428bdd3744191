"""Storage behind a small contract: read, write, list, delete, move, and put-if-absent.

Backends are fsspec filesystems chosen by URL scheme (``file``, ``s3``, ``hdfs``, ...), imported
lazily by fsspec. ``put_if_absent`` is the one primitive the transaction log needs: it must create a
file atomically and fail when the file exists, never overwrite. Locally that is a hard link of a
fully written temporary file (atomic and exclusive); on S3 a conditional PUT (``If-None-Match``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import fsspec

from lakectl.errors import LakectlError, StorageError
from lakectl.storage.hdfs import HDFS_SCHEMES, connect_error, hdfs_options, parse_hdfs_url
from lakectl.storage.s3 import (
    S3_SCHEMES,
    is_conditional_conflict,
    is_precondition_failed,
    redact,
    s3fs_options,
    scrub,
)

# How often a conditional PUT answered "409 ConditionalRequestConflict" is retried.
_CONFLICT_RETRIES = 8


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
    """One filesystem plus the URL scheme it serves. Paths passed in are scheme-less.

    ``options`` are the filesystem's keyword arguments (for S3, resolved by
    :func:`lakectl.storage.s3.s3fs_options`); they may hold credentials, so they are masked in
    ``repr`` and scrubbed from error messages. On remote stores every failure other than a missing
    file surfaces as :class:`StorageError`.
    """

    scheme: str
    options: dict[str, Any] = field(default_factory=dict)
    _fs: Any = field(default=None, repr=False)
    _libhdfs: Any = field(default=None, repr=False)

    @property
    def fs(self) -> Any:
        if self._fs is None:
            protocol = "file" if self.scheme == "file" else self.scheme
            try:
                self._fs = fsspec.filesystem(protocol, **self.options)
            except OSError as exc:
                if self.scheme not in HDFS_SCHEMES:
                    raise
                raise connect_error(self.url(""), exc) from exc
            except (ImportError, ValueError) as exc:
                raise StorageError(
                    f"no storage backend for {self.scheme}://: {scrub(str(exc), self.options)}"
                ) from exc
        return self._fs

    def __getstate__(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "options": self.options, "_fs": None, "_libhdfs": None}

    def __repr__(self) -> str:
        return f"Storage(scheme={self.scheme!r}, options={redact(self.options)!r})"

    @contextlib.contextmanager
    def _errors(self, action: str, path: str) -> Iterator[None]:
        """Turn a remote store's failures into :class:`StorageError`, secrets scrubbed.

        ``FileNotFoundError`` passes through (callers rely on it); local files keep their own
        ``OSError`` types.
        """
        if self.scheme == "file":
            yield
            return
        try:
            yield
        except (FileNotFoundError, LakectlError):
            raise
        except Exception as exc:
            detail = scrub(f"{type(exc).__name__}: {exc}", self.options)
            raise StorageError(
                f"{action} {self.url(path)} failed: {detail}",
                hint="check the storage endpoint, credentials and network, then retry",
            ) from exc

    # --- URLs -------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        """The URL Spark and users see for a storage path."""
        if self.scheme == "file":
            return "file://" + path
        if self.scheme in HDFS_SCHEMES:  # paths are absolute; the namenode is in the options
            host, port = self.options.get("host", "default"), self.options.get("port")
            authority = "" if host == "default" else f"{host}:{port}" if port else host
            return f"{self.scheme}://{authority}{path}"
        return f"{self.scheme}://{path}"

    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*parts)

    # --- reads ------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        with self._errors("checking", path):
            return bool(self.fs.exists(path))

    def isdir(self, path: str) -> bool:
        with self._errors("checking", path):
            return bool(self.fs.isdir(path))

    def is_link(self, path: str) -> bool:
        """Is ``path`` a symbolic link? (Only local files can be; one ``lstat``.)"""
        return self.scheme == "file" and os.path.islink(path)

    def read_bytes(self, path: str) -> bytes:
        try:
            with self._errors("reading", path), self.fs.open(path, "rb") as handle:
                return bytes(handle.read())
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url(path)} does not exist") from exc

    def cat(self, path: str) -> bytes:
        """A whole file's bytes in one request (an object store's GET, without the size
        lookup :meth:`read_bytes` makes first)."""
        try:
            with self._errors("reading", path):
                return bytes(self.fs.cat_file(path))
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                errno.ENOENT, "No such file or directory", self.url(path)
            ) from exc

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def list_entries(self, path: str, *, links: bool = False) -> list[dict[str, Any]]:
        """Entries directly under ``path`` (name, type, size); empty when it does not exist.

        Only files and directories: symbolic links (to files or to directories), FIFOs,
        sockets and devices are left out, from the listing's own details (no extra calls).
        A table's files are read and deleted from listings, so a link planted inside a table
        never leads a reader or ``clean`` to a file elsewhere. ``links=True`` keeps them (as
        files), for directories the user names, such as a load's source.
        """
        try:
            with self._errors("listing", path):
                entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name == path.rstrip("/") or not (links or _plain(entry)):
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

    def list_names_after(self, path: str, after: str = "") -> list[str]:
        """Sorted names directly under ``path`` that sort after ``after``; empty when ``path``
        does not exist.

        Cheaper than :meth:`list_names` for a directory that only grows, such as the log: no
        per-file details, and on S3 the listing starts at ``after`` (``StartAfter``) instead of
        paging through every earlier key.
        """
        if self.scheme == "file":
            try:
                with os.scandir(path) as entries:  # links and special files left out
                    names = [e.name for e in entries if e.name > after and _plain_local(e)]
            except (FileNotFoundError, NotADirectoryError):
                return []
            return sorted(names)
        if self.scheme in S3_SCHEMES:
            return self._list_names_after_s3(path, after)
        return [n for n in self.list_names(path) if n > after]

    def _list_names_after_s3(self, path: str, after: str) -> list[str]:
        bucket, _, key = path.rstrip("/").partition("/")
        prefix = f"{key}/" if key else ""
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
        if after:
            request["StartAfter"] = prefix + after
        names: list[str] = []
        with self._errors("listing", path):
            while True:
                page = self.fs.call_s3("list_objects_v2", **request)
                names += [o["Key"][len(prefix) :] for o in page.get("Contents", [])]
                names += [
                    p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", [])
                ]
                if not page.get("IsTruncated"):
                    break
                request["ContinuationToken"] = page["NextContinuationToken"]
        return sorted(n for n in names if n and n > after)

    def du(self, path: str) -> int:
        """Total bytes of the files under ``path``."""
        try:
            with self._errors("measuring", path):
                return int(self.fs.du(path, total=True))
        except FileNotFoundError:
            return 0

    # --- writes -----------------------------------------------------------------------------
    def makedirs(self, path: str) -> None:
        with self._errors("creating", path):
            self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a file. Not for the log: use :meth:`put_if_absent` there."""
        self.makedirs(posixpath.dirname(path))
        with self._errors("writing", path), self.fs.open(path, "wb") as handle:
            handle.write(data)

    def read_head(self, path: str, size: int) -> bytes:
        """The first ``size`` bytes of a file (fewer if it is shorter): a bounded read."""
        try:
            with self._errors("reading", path), self.fs.open(path, "rb") as handle:
                return bytes(handle.read(size))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url(path)} does not exist") from exc

    def read_chunks(self, path: str, size: int = 1 << 20) -> Iterator[bytes]:
        """A file's bytes from the start, ``size`` at a time: one sequential read."""
        try:
            with self._errors("reading", path), self.fs.open(path, "rb") as handle:
                while chunk := handle.read(size):
                    yield bytes(chunk)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url(path)} does not exist") from exc

    def read_tail(self, path: str, size: int) -> tuple[bytes, int]:
        """The last ``size`` bytes of a file (fewer if it is shorter) and the file's size."""
        with self._errors("reading", path), self.fs.open(path, "rb") as handle:
            total = int(handle.seek(0, os.SEEK_END))
            handle.seek(max(0, total - size))
            return bytes(handle.read()), total

    def replace_tail(self, path: str, offset: int, data: bytes) -> None:
        """Replace a file's bytes from ``offset`` to its end with ``data``.

        In place for local files; object stores rewrite the object (they cannot truncate).
        Only for files no reader can see yet (staged, uncommitted).
        """
        if self.scheme == "file":
            with open(path, "r+b") as handle:
                handle.seek(offset)
                handle.truncate()
                handle.write(data)
            return
        self.write_bytes(path, self.read_bytes(path)[:offset] + data)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` atomically; raise :class:`AlreadyExistsError` if taken."""
        if self.scheme == "file":
            self._put_if_absent_local(path, data)
        elif self.scheme in S3_SCHEMES:
            self._put_if_absent_s3(path, data)
        elif self.scheme in HDFS_SCHEMES:
            self._put_if_absent_hdfs(path, data)
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
        if self._conditional_put_s3(path, data):
            return
        # botocore retries a PUT whose answer was lost; if the first attempt had landed, the retry
        # meets our own object. Identical bytes mean this writer won (records carry a unique write
        # id and commit time, so two writers never produce the same bytes for a log entry).
        try:
            ours = self.read_bytes(path) == data
        except FileNotFoundError:
            ours = False
        if not ours:
            raise AlreadyExistsError(f"{self.url(path)} already exists")

    def _conditional_put_s3(self, path: str, data: bytes) -> bool:
        """PUT with ``If-None-Match: *``: True if created, False if the key was taken (412)."""
        bucket, _, key = path.partition("/")
        for attempt in range(_CONFLICT_RETRIES):
            with self._errors("conditional put of", path):
                try:
                    self.fs.call_s3(
                        "put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*"
                    )
                    return True
                except Exception as exc:  # botocore ClientError, wrapped by s3fs
                    if is_precondition_failed(exc):
                        return False
                    if not is_conditional_conflict(exc) or attempt + 1 == _CONFLICT_RETRIES:
                        raise
            time.sleep(0.05 * 2**attempt)  # 409: a concurrent conditional PUT; S3 asks to retry
        raise AssertionError("unreachable: the last attempt returns or raises")

    def require_conditional_create(self, directory: str) -> None:
        """Check that :meth:`put_if_absent` is exclusive on this store; raise StorageError if not.

        Local files (hard links) always are. On S3 a probe object under ``directory`` is PUT twice
        with ``If-None-Match: *``: a store that honours the header refuses the second PUT (412);
        one that ignores it overwrites, which would let two commits take the same log entry.
        """
        if self.scheme not in S3_SCHEMES:
            return
        probe = self.join(directory, f".probe-{uuid.uuid4().hex}")
        advice = (
            "use an S3 store that supports conditional writes (If-None-Match: *), such as AWS S3, "
            "SeaweedFS or a recent MinIO"
        )
        try:
            self._conditional_put_s3(probe, b"first")
            overwritten = self._conditional_put_s3(probe, b"second")
        except StorageError as exc:
            raise StorageError(
                f"{self.url(directory)}: the store rejected a conditional PUT "
                f"(If-None-Match: *), which lakectl needs for safe commits: {exc.message}",
                hint=advice,
            ) from exc
        finally:
            self.delete(probe)
        if overwritten:
            raise StorageError(
                f"{self.url(directory)}: the store ignores If-None-Match: * (a second conditional "
                "PUT overwrote the first), so concurrent commits could silently replace each "
                "other; lakectl will not create a table there",
                hint=advice,
            )

    def _put_if_absent_hdfs(self, path: str, data: bytes) -> None:
        """A fully written temporary file renamed into place by HDFS's ``rename``, which the
        namenode refuses onto an existing file (see :mod:`lakectl.storage.hdfs`; untested here)."""
        from lakectl.storage.hdfs import LibHdfs

        tmp = self.join(posixpath.dirname(path), f".tmp-{uuid.uuid4().hex}")
        self.write_bytes(tmp, data)
        try:
            with self._errors("committing", path):
                if self._libhdfs is None:
                    options = self.options
                    self._libhdfs = LibHdfs(
                        options["host"],
                        options["port"],
                        options.get("user"),
                        options.get("kerb_ticket"),
                    )
                renamed = self._libhdfs.rename(tmp, path)
            if not renamed:
                if self.exists(path):
                    raise AlreadyExistsError(f"{self.url(path)} already exists")
                raise StorageError(f"HDFS refused to rename {self.url(tmp)} to {self.url(path)}")
        finally:
            self.delete(tmp)

    def _put_if_absent_generic(self, path: str, data: bytes) -> None:
        # Other fsspec backends (memory://): mode "xb" where supported. fsspec checks existence
        # first, so this is exclusive within one writer only (tests/storage's contract suite).
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
        with self._errors("moving", source):
            self.fs.mv(source, target)

    def delete(self, path: str, recursive: bool = False) -> None:
        with contextlib.suppress(FileNotFoundError), self._errors("deleting", path):
            self.fs.rm(path, recursive=recursive)


def _plain(entry: dict[str, Any]) -> bool:
    """Is a listing entry a plain file or directory (not a link, FIFO, socket or device)?"""
    return entry.get("type") in ("file", "directory") and not entry.get("islink")


def _plain_local(entry: os.DirEntry[str]) -> bool:
    """:func:`_plain` for a local directory entry (its type comes with the listing)."""
    return entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)


def storage_for(url: str, options: dict[str, Any] | None = None) -> tuple[Storage, str]:
    """Return the storage serving ``url`` and the scheme-less path inside it."""
    scheme, path = split_url(url)
    if scheme in HDFS_SCHEMES:
        location = parse_hdfs_url(url)
        return Storage(scheme, hdfs_options(location, options or {})), location.path
    resolved = s3fs_options(options or {}) if scheme in S3_SCHEMES else dict(options or {})
    return Storage(scheme, resolved), path
