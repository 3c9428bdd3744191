"""The one exception hierarchy of lakectl, with the exit code each kind maps to.

Every error a user can meet is a :class:`LakectlError` subclass. The CLI maps them to exit codes in
one place (``lakectl.cli.main``); library code only raises.
"""

from __future__ import annotations

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


class BadInputError(LakectlError):
    """Input data or a statement file that cannot be applied (exit 65, EX_DATAERR)."""

    exit_code = 65
    kind = "bad_input"


class TableNotFoundError(LakectlError):
    """The table (or a source path) does not exist (exit 66, EX_NOINPUT)."""

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


_DAMAGED_ORC = re.compile(
    r"(?:FileFormatException|CorruptedFileException|ORC_CORRUPTED_FILE)\W+(?:Malformed ORC file )?"
    r"(?P<path>\S+)?"
)


_STORAGE_FAILURE = re.compile(
    r"No space left on device|Disk quota exceeded|Read-only file system|Permission denied"
)


def engine_error(exc: BaseException) -> LakectlError | None:
    """A known failure reported by Spark or a file reader, as the LakectlError it is (a damaged
    data file: :class:`FormatError`); ``None`` for anything else."""
    if isinstance(exc, OSError):  # permissions, a read-only or full disk, a vanished path
        reason = exc.strerror or type(exc).__name__
        where = f": {exc.filename}" if exc.filename else ""
        return StorageError(
            f"storage error ({reason}){where}; the command stopped before committing",
            hint="check the table directory's permissions and free space, then run it again",
        )
    text = _detail(exc) + "\n" + str(exc)
    storage = _STORAGE_FAILURE.search(text)
    if storage is not None:  # reported by Spark's writers (Java), not as a Python OSError
        return StorageError(
            f"storage error ({storage.group(0)}) while Spark wrote or read the table's files; "
            "the command stopped before committing",
            hint="check the table directory's permissions and free space, then run it again",
        )
    match = _DAMAGED_ORC.search(text)
    if match is None:
        return None
    where = match.group("path") or "a data file"
    return FormatError(
        f"{where.rstrip('.')} is damaged: not a readable ORC file",
        hint="restore the file from a backup; reads of the partition fail until then",
    )


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
