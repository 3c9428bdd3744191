"""The one exception hierarchy of lakectl, with the exit code each kind maps to.

Every error a user can meet is a :class:`LakectlError` subclass. The CLI maps them to exit codes in
one place (``lakectl.cli.main``); library code only raises.
"""

from __future__ import annotations

import errno
import os
import re


class LakectlError(Exception):
    """Base class: something the user can act on. ``exit_code`` is what the CLI returns."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(LakectlError):
    """Wrong options or arguments (exit 2, like click's own usage errors)."""

    exit_code = 2
    kind = "usage"


class ArrowEngineLimit(UsageError):
    """A job the Arrow engine cannot run exactly as Spark does (a value, type or input it does
    not handle), found while running it: exit 2 with ``--engine arrow``; with ``--engine auto``
    the job runs in Spark instead."""


class BadInputError(LakectlError):
    """Input data or a statement file that cannot be applied (exit 65, EX_DATAERR)."""

    exit_code = 65
    kind = "bad_input"


class SourceParseError(BadInputError):
    """A source file that its format's reader cannot parse (a malformed CSV record)."""


class UnknownColumnError(BadInputError):
    """A column the table does not have, wherever it is named (``--columns``, ``--where``,
    ``--order-by``, ``--column``, a statement): exit 65 like all input that cannot be applied."""


class TableNotFoundError(LakectlError):
    """The table (or a source path) does not exist (exit 66, EX_NOINPUT)."""

    exit_code = 66
    kind = "not_found"


class SourceNotFoundError(LakectlError):
    """A file or folder to read (a load's source, a landing directory) does not exist (exit 66,
    EX_NOINPUT, as a missing table)."""

    exit_code = 66
    kind = "not_found"


class TableExistsError(LakectlError):
    """``create`` on a table that already exists."""

    exit_code = 73
    kind = "exists"


class CommitConflictError(LakectlError):
    """Another writer committed a change this one conflicts with; nothing of this one is visible."""

    exit_code = 75
    kind = "conflict"


class AlreadyLoadedError(CommitConflictError):
    """A load found, at its commit, that another writer committed the same source (same
    location and content) since it read the table: ``load`` reports the source as skipped."""

    def __init__(self, message: str, *, version: int | None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.version = version


class StorageError(LakectlError):
    """The storage backend failed or lacks a needed capability (exit 74, EX_IOERR)."""

    exit_code = 74
    kind = "storage"


class FormatError(LakectlError):
    """Files on disk are not in the expected Hive ACID / lakectl format (exit 76)."""

    exit_code = 76
    kind = "format"


class SparkUnavailableError(LakectlError):
    """Spark could not start (no Java, bad master URL, unreachable Connect server)."""

    exit_code = 69
    kind = "spark"


class TimeTravelError(LakectlError):
    """A requested version or time is not available (before the table, or cleaned)."""

    exit_code = 67
    kind = "time_travel"


class InternalError(LakectlError):
    """An unexpected failure inside lakectl or Spark: a bug or an unmapped engine error (exit 70,
    EX_SOFTWARE). The CLI wraps any other exception in it; ``--debug`` shows the full stack."""

    exit_code = 70
    kind = "internal"

    @classmethod
    def wrapping(cls, exc: BaseException) -> InternalError:
        """The error shown for ``exc``: its type and the first line of its message."""
        kind = type(exc).__name__
        first = next((ln.strip() for ln in _detail(exc).splitlines() if ln.strip()), "")
        if len(first) > 300:
            first = first[:297] + "..."
        error = cls(
            f"internal error ({kind}){': ' + first if first else ''}",
            hint="run the command again with --debug (or LAKECTL_DEBUG=1) for the full stack "
            "and Spark's own output, and report it if it looks like a bug",
        )
        error.error_type = kind
        return error

    error_type: str = ""


DAMAGED_FILE_HINT = (
    "restore the file from a backup of the table; nothing was changed, and reads of the other "
    "partitions (--where on the partition columns) still work"
)


def damaged_file_error(url: str, reason: str) -> FormatError:
    """The error for a table's data file that is not a readable ORC file: empty, cut short or
    overwritten. ``reason`` says what the reader found (a size, or the ORC reader's message)."""
    reason = " ".join(reason.split())
    if len(reason) > 300:
        reason = reason[:297] + "..."
    return FormatError(f"ORC file {url} is damaged or truncated ({reason})", hint=DAMAGED_FILE_HINT)


_ERRNO_HINTS = {
    errno.EACCES: "check the permissions of the file and of the table's directories",
    errno.EPERM: "check the permissions of the file and of the table's directories",
    errno.EROFS: "the file system is read-only: mount it writable, or run a read-only command",
    errno.ENOSPC: "free space on the table's storage, then run the command again",
    errno.EDQUOT: "free space (or raise the quota) on the table's storage, then run it again",
    errno.ENOENT: "another process (such as `lakectl clean`) may have removed it while the "
    "command ran; run the command again",
}
_STORAGE_HINT = "check the storage (disk, mount or network) and run the command again"


def file_storage_error(action: str, url: str, exc: OSError) -> StorageError:
    """The error for a failure of the storage while ``action`` (``"reading"``, ...) the file at
    ``url``: what failed on which file, and a hint fitting the failure (permissions only when
    they are the cause)."""
    return StorageError(
        f"{action} {url} failed ({_reason(exc)})",
        hint=_ERRNO_HINTS.get(exc.errno or 0, _STORAGE_HINT),
    )


def _reason(exc: OSError) -> str:
    """What went wrong, in the system's words for its errno (pyarrow's messages repeat the
    path), else the exception's own message."""
    if exc.errno:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc) or type(exc).__name__


_STORAGE_FAILURE = re.compile(
    r"No space left on device|Disk quota exceeded|Read-only file system|Permission denied"
)
_STORAGE_FAILURE_HINTS = {
    "No space left on device": _ERRNO_HINTS[errno.ENOSPC],
    "Disk quota exceeded": _ERRNO_HINTS[errno.EDQUOT],
    "Read-only file system": _ERRNO_HINTS[errno.EROFS],
    "Permission denied": _ERRNO_HINTS[errno.EACCES],
}
# lakectl's data source (jvm/) reports a file it cannot decode in these words.
_DAMAGED_IN_JVM = re.compile(
    r"DamagedFileException: ORC file (?P<url>\S+) is damaged or truncated \((?P<reason>[^\n]*)\)"
)
# Spark's own file scan names the file it failed on; the cause says why.
_FAILED_READ = re.compile(
    r"\[(?:FAILED_READ_FILE\.(?P<kind>\w+)|CANNOT_READ_FILE_FOOTER)\][^\n]*?"
    r"(?:reading file|for file:?) (?P<url>\S+?)\.?(?:\s|$)"
)
# Causes that mean the bytes are not a readable ORC file (not that the storage failed).
_UNREADABLE_ORC = re.compile(
    r"InvalidProtocolBufferException|FileFormatException|CorruptedFileException|EOFException|"
    r"Malformed ORC file|ORC_CORRUPTED_FILE|BufferUnderflowException|IndexOutOfBoundsException|"
    r"NegativeArraySizeException|DataFormatException"
)
# Said by ORC's readers only of a file they cannot decode.
_DAMAGED_ORC = re.compile(
    r"InvalidProtocolBufferException|FileFormatException|CorruptedFileException|"
    r"ORC_CORRUPTED_FILE|Malformed ORC file"
)
# A lakectl error raised inside a Spark task (a Python worker) reaches the driver as text: the
# worker's traceback, ending with the error's type, message and hint.
_WORKER_ERROR = re.compile(
    r"^lakectl\.errors\.(?P<kind>\w+): (?P<message>[^\n]*)(?:\n  hint: (?P<hint>[^\n]*))?",
    re.MULTILINE,
)


# What an expression's integer arithmetic raises when its result does not fit (both engines).
OVERFLOW = "integer overflow in an expression"


def overflow_error() -> BadInputError:
    """The error of an integer result that does not fit its type, in every engine."""
    return BadInputError(
        f"{OVERFLOW}: a result does not fit its type (int or bigint)",
        hint="compute in a wider type: CAST(column AS decimal(38,0)) or CAST(column AS double)",
    )


def engine_error(exc: BaseException) -> LakectlError | None:
    """A known failure reported by Spark or a file reader, as the LakectlError it is (a damaged
    data file: :class:`FormatError` naming it; a failed storage: :class:`StorageError`);
    ``None`` for anything else."""
    if isinstance(exc, OSError):  # permissions, a read-only or full disk, a vanished path
        where = f" on {exc.filename}" if exc.filename else ""
        return StorageError(
            f"storage error ({_reason(exc)}){where}; the command stopped before committing",
            hint=_ERRNO_HINTS.get(exc.errno or 0, _STORAGE_HINT),
        )
    text = _detail(exc) + "\n" + str(exc)
    worker = _worker_error(text)
    if worker is not None:
        return worker
    if OVERFLOW in text:  # raised by an expression's integer arithmetic (lakectl.expr)
        return overflow_error()
    if "java.lang.StackOverflowError" in text:
        return BadInputError(
            "Spark ran out of stack (java.lang.StackOverflowError) planning or running the "
            "query: the table's installed statements make it too deep for this driver",
            hint="fold the statements into the data with `lakectl apply-updates TABLE "
            "--materialize --until TIME`, read with --raw or --engine arrow, or give Spark's "
            "driver a larger thread stack (-Xss in spark.driver.extraJavaOptions)",
        )
    damaged = _DAMAGED_IN_JVM.search(text)
    if damaged is not None:
        return damaged_file_error(damaged.group("url"), damaged.group("reason"))
    storage = _STORAGE_FAILURE.search(text)
    if storage is not None:  # reported by Spark's writers (Java), not as a Python OSError
        return StorageError(
            f"storage error ({storage.group(0)}) while Spark wrote or read the table's files; "
            "the command stopped before committing",
            hint=_STORAGE_FAILURE_HINTS[storage.group(0)],
        )
    failed = _FAILED_READ.search(text)
    if failed is not None:
        return _failed_read(failed.group("url"), failed.group("kind"), _causes(exc))
    match = _DAMAGED_ORC.search(text)
    if match is None:
        return None
    path = re.search(r"Malformed ORC file (\S+)", text)
    return damaged_file_error(
        path.group(1).rstrip(".") if path else "(a data file of the table)", match.group(0)
    )


def _worker_error(text: str) -> LakectlError | None:
    """The lakectl error a Spark task's Python worker raised, rebuilt from its traceback."""
    matches = list(_WORKER_ERROR.finditer(text))
    if not matches:
        return None
    found = matches[-1]  # the error the task ended with (after any it was raised from)
    kind = globals().get(found.group("kind"))
    if not isinstance(kind, type) or not issubclass(kind, LakectlError):
        return None
    if kind is InternalError:
        return None
    return kind(found.group("message"), hint=found.group("hint"))


def _failed_read(url: str, kind: str | None, causes: str) -> LakectlError:
    """Spark's scan failed on the file at ``url``: a damaged file, a vanished one, or a
    failure of the storage, as its causes say."""
    url = url.rstrip(".")
    if kind == "FILE_NOT_EXIST":
        return StorageError(
            f"reading {url} failed (the file does not exist)", hint=_ERRNO_HINTS[errno.ENOENT]
        )
    damage = _UNREADABLE_ORC.search(causes)
    innermost = next((ln.strip() for ln in reversed(causes.splitlines()) if ln.strip()), "")
    innermost = re.sub(r"^(?:[a-z]\w*\.)+", "", innermost)  # the class without its package
    if damage is not None or kind == "CANNOT_READ_FILE_FOOTER":
        return damaged_file_error(url, innermost or "its footer cannot be read")
    return StorageError(
        f"reading {url} failed ({innermost or 'no cause given'})", hint=_STORAGE_HINT
    )


def _causes(exc: BaseException) -> str:
    """The causes of a Java exception raised through Py4J, innermost last, one a line (empty
    when there is none or the JVM is gone)."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    lines: list[str] = []
    try:
        cause = java.getCause() if java is not None else None
        while cause is not None and len(lines) < 20:
            lines.append(str(cause.toString()))
            cause = cause.getCause()
    except Exception:  # the JVM may be gone
        pass
    return "\n".join(lines)


def _detail(exc: BaseException) -> str:
    """The message of ``exc``; for a Java exception raised through Py4J (whose own message
    starts "An error occurred while calling o123.method"), the Java exception's class and
    message."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java)
        except Exception:  # the JVM may be gone
            pass
    return str(exc)
