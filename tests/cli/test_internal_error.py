"""An unexpected exception inside a command ends in the one catch-all of ``lakectl.cli.main``:
exit 70, a short message naming the error type, a JSON error with ``--json``, and a stack on
stderr only with ``--debug``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakectl.errors import InternalError
from tests.support.cli import CliRun, run_lakectl


@pytest.fixture
def broken_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """``history`` whose operation fails the way a bug would (no Spark needed)."""

    def explode(*_: object, **__: object) -> None:
        raise KeyError("boom-marker")

    import lakectl.ops.inspect

    monkeypatch.setattr(lakectl.ops.inspect, "history", explode)
    monkeypatch.delenv("LAKECTL_DEBUG", raising=False)
    assert run_lakectl("create", tmp_path / "t", "--schema", "a int").code == 0
    return tmp_path / "t"


def _assert_internal(run: CliRun) -> None:
    assert run.code == InternalError.exit_code == 70
    assert "KeyError" in run.err
    assert "--debug" in run.err


@pytest.mark.parametrize("before", [True, False], ids=["json-before", "json-after"])
def test_unexpected_error_is_exit_70_with_one_json_object(
    broken_history: Path, before: bool
) -> None:
    args = (
        ["--json", "history", broken_history] if before else ["history", broken_history, "--json"]
    )
    run = run_lakectl(*args)
    _assert_internal(run)
    error = run.json["error"]
    assert error["type"] == "internal"
    assert error["error_type"] == "KeyError"
    assert "boom-marker" in error["message"]
    assert "--debug" in error["hint"]
    assert "Traceback" not in run.err and "Traceback" not in run.out


def test_no_stack_without_debug(broken_history: Path) -> None:
    run = run_lakectl("history", broken_history)
    _assert_internal(run)
    assert run.out == ""
    assert "Traceback" not in run.err
    assert len(run.err.strip().splitlines()) == 2  # the message and the hint


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_prints_the_stack(broken_history: Path, where: str) -> None:
    args = (
        ["--debug", "history", broken_history]
        if where == "before"
        else ["history", broken_history, "--debug"]
    )
    run = run_lakectl(*args)
    _assert_internal(run)
    assert "Traceback (most recent call last)" in run.err
    assert "explode" in run.err  # the frame that raised


def test_debug_from_the_environment(broken_history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECTL_DEBUG", "1")
    run = run_lakectl("history", broken_history)
    _assert_internal(run)
    assert "Traceback (most recent call last)" in run.err


def test_wrapped_message_is_one_short_line() -> None:
    error = InternalError.wrapping(RuntimeError("first line\n" + "x" * 1000 + "\nmore"))
    assert error.message == "internal error (RuntimeError): first line"
    long = InternalError.wrapping(ValueError("y" * 1000))
    assert len(long.message) < 340 and long.message.endswith("...")
    assert InternalError.wrapping(AssertionError()).message == "internal error (AssertionError)"


def test_a_java_exception_is_named_by_its_java_class(spark: object) -> None:
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    with pytest.raises(Exception) as converted:  # PySpark converts the errors it knows
        jvm.java.lang.Integer.parseInt("not a number")
    error = InternalError.wrapping(converted.value)
    assert error.error_type == type(converted.value).__name__ == "NumberFormatException"
    assert "not a number" in error.message
    # one it does not convert stays a Py4JJavaError: named by the Java exception in it
    java = jvm.java.lang.IllegalStateException("state is broken")
    raw = Py4JJavaError("An error occurred while calling o42.collectToPython.\n", java)
    error = InternalError.wrapping(raw)
    assert error.message == (
        "internal error (Py4JJavaError): java.lang.IllegalStateException: state is broken"
    )
