"""HDFS for lakectl's own files (the log): fsspec's HDFS filesystem, which is pyarrow's libhdfs.

Spark reads and writes the data files with its own HDFS client (pyspark's Hadoop jars include
it); only the client-side log goes through here. What a user installs (none of it is on PyPI):

- a Hadoop distribution (``HADOOP_HOME``): ``$HADOOP_HOME/lib/native/libhdfs.so`` (or set
  ``ARROW_LIBHDFS_DIR`` to the directory holding ``libhdfs.so``), and its jars on the
  ``CLASSPATH``: ``export CLASSPATH=$(hadoop classpath --glob)``;
- a JDK (``JAVA_HOME``; libhdfs starts a JVM inside the lakectl process);
- the cluster's ``core-site.xml``/``hdfs-site.xml`` in ``$HADOOP_CONF_DIR`` (a directory on the
  ``CLASSPATH``) for ``hdfs:///path`` URLs that name no namenode, HA nameservices, Kerberos.

**Put-if-absent.** libhdfs always creates files with overwrite on (it warns that it "does not
truly support O_CREATE && O_EXCL") and pyarrow's ``move`` deletes an existing target first, so
neither is exclusive. HDFS's own ``rename`` *is*: the namenode refuses to rename onto an existing
file. A commit therefore writes a temporary file through pyarrow and renames it with libhdfs's
``hdfsRename`` (through ctypes, on the same libhdfs pyarrow loaded), as Delta Lake's HDFS log
store relies on rename. None of this could be run here: no HDFS, no libhdfs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from lakectl.errors import StorageError

HDFS_SCHEMES = frozenset({"hdfs"})
DEFAULT_PORT = 8020
# Where JDKs keep libjvm.so (the places libhdfs and pyarrow look under JAVA_HOME).
_LIBJVM_PLACES = ("lib/server/libjvm.so", "jre/lib/*/server/libjvm.so", "lib/*/server/libjvm.so")
SETUP_HINT = (
    "install a Hadoop client and a JDK, then: export HADOOP_HOME=/opt/hadoop "
    "JAVA_HOME=/usr/lib/jvm/java-17 CLASSPATH=$(hadoop classpath --glob) "
    "(and ARROW_LIBHDFS_DIR=<dir of libhdfs.so> if it is not in $HADOOP_HOME/lib/native)"
)


@dataclass(frozen=True)
class HdfsLocation:
    """Where an ``hdfs://`` URL points: the namenode (host, port) and the absolute path.

    ``hdfs:///path`` (no authority) means the cluster's default filesystem (``fs.defaultFS``
    of ``core-site.xml``), which libhdfs calls host ``default``.
    """

    scheme: str
    host: str
    port: int
    path: str

    @property
    def authority(self) -> str:
        if self.host == "default":
            return ""
        return f"{self.host}:{self.port}" if self.port else self.host

    def url(self, path: str | None = None) -> str:
        return f"{self.scheme}://{self.authority}{self.path if path is None else path}"


def parse_hdfs_url(url: str) -> HdfsLocation:
    """Split an ``hdfs://namenode:port/path`` URL; a missing port is HDFS's default 8020."""
    parsed = urlparse(url)
    if parsed.scheme not in HDFS_SCHEMES:
        raise ValueError(f"not an HDFS URL: {url}")
    path = "/" + parsed.path.strip("/") if parsed.path.strip("/") else "/"
    if not parsed.hostname:
        return HdfsLocation(parsed.scheme, "default", 0, path)
    try:
        port = parsed.port
    except ValueError as exc:
        raise StorageError(f"{url}: the namenode port is not a number") from exc
    return HdfsLocation(parsed.scheme, parsed.hostname, port or DEFAULT_PORT, path)


def hdfs_options(location: HdfsLocation, options: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of fsspec's ``HadoopFileSystem`` for ``location``: the namenode from the
    URL, then ``[storage]`` options (``user``, ``kerb_ticket``, ``replication``, ``extra_conf``)."""
    out: dict[str, Any] = {"host": location.host, "port": location.port}
    out.update(options)
    return out


def _libhdfs_candidates(environ: Mapping[str, str]) -> list[str]:
    dirs = [environ.get("ARROW_LIBHDFS_DIR", "")]
    if environ.get("HADOOP_HOME"):
        dirs += [os.path.join(environ["HADOOP_HOME"], "lib", "native")]
    return [os.path.join(d, "libhdfs.so") for d in dirs if d]


def environment_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """What is missing for libhdfs, in the user's words (empty when everything looks in place)."""
    env = os.environ if environ is None else environ
    problems = []
    if not any(os.path.isfile(p) for p in _libhdfs_candidates(env)) and not (
        ctypes.util.find_library("hdfs")
    ):
        where = ", ".join(_libhdfs_candidates(env)) or "HADOOP_HOME and ARROW_LIBHDFS_DIR unset"
        problems.append(f"libhdfs.so not found ({where})")
    java_home = env.get("JAVA_HOME")
    if not java_home:
        problems.append("JAVA_HOME is not set")
    elif not any(glob.glob(os.path.join(java_home, p)) for p in _LIBJVM_PLACES):
        problems.append(f"no libjvm.so under JAVA_HOME={java_home}")
    classpath = env.get("CLASSPATH", "")
    if "hadoop" not in classpath.lower():
        problems.append(
            "CLASSPATH holds no Hadoop jars (set it to the output of `hadoop classpath --glob`)"
        )
    return problems


def connect_error(
    url: str, exc: BaseException, environ: Mapping[str, str] | None = None
) -> StorageError:
    """A :class:`StorageError` for a failed libhdfs connection: the first line of pyarrow's
    error (its full text lists every path it tried) and what the environment lacks."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    problems = environment_problems(environ)
    missing = f"; missing: {'; '.join(problems)}" if problems else ""
    return StorageError(
        f"cannot reach {url} through libhdfs (pyarrow): {first}{missing}", hint=SETUP_HINT
    )


# --- exclusive create through hdfsRename --------------------------------------------------------


class LibHdfs:
    """The few libhdfs calls pyarrow does not expose, through ctypes: connect and rename."""

    def __init__(
        self, host: str, port: int, user: str | None = None, kerb_ticket: str | None = None
    ) -> None:
        self._lib = _load_libhdfs()
        lib = self._lib
        lib.hdfsNewBuilder.restype = ctypes.c_void_p
        lib.hdfsBuilderSetNameNode.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.hdfsBuilderSetNameNodePort.argtypes = [ctypes.c_void_p, ctypes.c_uint16]
        lib.hdfsBuilderSetUserName.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.hdfsBuilderSetKerbTicketCachePath.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.hdfsBuilderConnect.argtypes = [ctypes.c_void_p]
        lib.hdfsBuilderConnect.restype = ctypes.c_void_p
        lib.hdfsRename.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.hdfsRename.restype = ctypes.c_int
        builder = lib.hdfsNewBuilder()
        lib.hdfsBuilderSetNameNode(builder, host.encode())
        if port:
            lib.hdfsBuilderSetNameNodePort(builder, port)
        if user:
            lib.hdfsBuilderSetUserName(builder, user.encode())
        if kerb_ticket:  # as pyarrow's HadoopFileSystem does with its kerb_ticket
            lib.hdfsBuilderSetKerbTicketCachePath(builder, kerb_ticket.encode())
        self._fs = lib.hdfsBuilderConnect(builder)  # frees the builder
        if not self._fs:
            raise OSError(ctypes.get_errno(), f"hdfsBuilderConnect({host}:{port}) failed")

    def rename(self, source: str, target: str) -> bool:
        """HDFS ``rename``: True if done, False if refused (the target exists, among others)."""
        return self._lib.hdfsRename(self._fs, source.encode(), target.encode()) == 0


def _load_libhdfs() -> ctypes.CDLL:
    for candidate in [*_libhdfs_candidates(os.environ), ctypes.util.find_library("hdfs")]:
        if candidate and (os.path.isfile(candidate) or not os.path.dirname(candidate)):
            return ctypes.CDLL(candidate, use_errno=True)
    raise OSError("Unable to load libhdfs: libhdfs.so not found")


__all__ = [
    "HDFS_SCHEMES",
    "HdfsLocation",
    "LibHdfs",
    "connect_error",
    "environment_problems",
    "hdfs_options",
    "parse_hdfs_url",
]
