"""How failures that Spark or a file reader reports become lakectl errors (``engine_error``):
a damaged data file is a format error naming it, a failed storage says what failed on which
file, and a hint suggests permissions or free space only when they are the cause. The texts are
the ones Spark 4 and lakectl's data source give (see tests/ops/test_damaged_data_files.py for
the same through real reads)."""

from __future__ import annotations

import errno

import pytest

from lakectl.errors import BadInputError, FormatError, StorageError, engine_error

URL = "file:///w/sales/create_date=2024-01-02/delta_0000001_0000001_0000/bucket_00001"


def test_the_data_source_names_the_damaged_file() -> None:
    text = (
        "An error occurred while calling o92.collectToPython.\n: org.apache.spark.SparkException: "
        "Job aborted due to stage failure: Task 1 in stage 0.0 failed 1 times, most recent "
        "failure: Lost task 1.0 (TID 1) (localhost executor driver): "
        f"io.lakectl.spark.DamagedFileException: ORC file {URL} is damaged or truncated "
        "(InvalidWireTypeException: Protocol message tag had invalid wire type.)\n\tat x"
    )
    error = engine_error(RuntimeError(text))
    assert isinstance(error, FormatError) and error.exit_code == 76
    assert error.message == (
        f"ORC file {URL} is damaged or truncated "
        "(InvalidWireTypeException: Protocol message tag had invalid wire type.)"
    )


def test_a_lakectl_error_raised_in_a_python_worker_comes_back_as_itself() -> None:
    text = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in read\nOSError: Failed to parse the postscript\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        f"lakectl.errors.FormatError: ORC file {URL} is damaged or truncated (Failed to parse "
        "the postscript)\n  hint: restore the file from a backup of the table\n"
    )
    error = engine_error(RuntimeError(text))
    assert isinstance(error, FormatError)
    assert (
        error.message == f"ORC file {URL} is damaged or truncated (Failed to parse the postscript)"
    )
    assert error.hint == "restore the file from a backup of the table"


def test_an_internal_error_in_a_worker_is_not_rebuilt() -> None:
    text = "Traceback (most recent call last):\nlakectl.errors.InternalError: internal error (X)\n"
    assert engine_error(RuntimeError(text)) is None


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("NO_HINT", StorageError), ("FILE_NOT_EXIST", StorageError)],
)
def test_spark_scan_failures_name_the_file(kind: str, expected: type) -> None:
    text = (
        f"org.apache.spark.SparkException: [FAILED_READ_FILE.{kind}] Encountered error while "
        f"reading file {URL}.  SQLSTATE: KD001"
    )
    error = engine_error(RuntimeError(text))  # no Java cause to look at: not called damaged
    assert isinstance(error, expected) and not isinstance(error, FormatError)
    assert error.message.startswith(f"reading {URL} failed (")
    if kind == "FILE_NOT_EXIST":
        assert "does not exist" in error.message and "clean" in (error.hint or "")


@pytest.mark.parametrize(
    ("code", "hint_word"),
    [
        (errno.EACCES, "permissions"),
        (errno.ENOSPC, "free space"),
        (errno.EROFS, "read-only"),
        (errno.EIO, "storage"),
    ],
)
def test_storage_hints_fit_the_failure(code: int, hint_word: str) -> None:
    error = engine_error(OSError(code, "ignored", "/w/sales/_lakectl/log/1.json"))
    assert isinstance(error, StorageError) and error.exit_code == 74
    assert "/w/sales/_lakectl/log/1.json" in error.message
    assert hint_word in (error.hint or "")
    if code not in (errno.EACCES, errno.EPERM):
        assert "permissions" not in (error.hint or "")
    if code not in (errno.ENOSPC, errno.EDQUOT):
        assert "free space" not in (error.hint or "")


def test_a_stack_overflow_in_spark_names_the_statements_and_the_way_out() -> None:
    text = (
        "An error occurred while calling o132.collectToPython.\n: java.lang.StackOverflowError"
        "\n\tat org.apache.spark.sql.catalyst.trees.TreeNode.mapProductIterator(TreeNode.scala:334)"
    )
    error = engine_error(RuntimeError(text))
    assert isinstance(error, BadInputError) and error.exit_code == 65
    assert "StackOverflowError" in error.message and "installed statements" in error.message
    assert error.hint is not None and "apply-updates TABLE --materialize" in error.hint
