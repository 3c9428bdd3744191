"""Which engine runs a job that moves data: Spark, or Arrow inside the lakectl process.

Spark is the default and the way to scale out (a cluster, a Connect server). The Arrow engine
runs the same table rules with pyarrow in the lakectl process, without starting a JVM: for the
many small jobs of cron and CI, whose cost in Spark is nearly all start-up. ``auto`` picks Arrow
for a job that reads and writes at most the table property ``engine.auto.max-bytes`` and that
the Arrow engine can do, else Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from lakectl.errors import ArrowEngineLimit, UsageError
from lakectl.table.properties import human_size

if TYPE_CHECKING:
    from lakectl.table.metadata import TableMetadata

AUTO_MAX_BYTES = "engine.auto.max-bytes"
"""The table property: the most bytes a job may read and write for ``auto`` to pick Arrow."""


class Engine(StrEnum):
    """An engine a user may ask for."""

    SPARK = "spark"
    ARROW = "arrow"
    AUTO = "auto"


ENGINE_NAMES = tuple(e.value for e in Engine)


@dataclass(frozen=True)
class EngineChoice:
    """The engine a job runs in (Spark or Arrow, never ``auto``) and why, in one line."""

    engine: Engine
    reason: str

    @property
    def arrow(self) -> bool:
        """Whether the job runs in the Arrow engine."""
        return self.engine is Engine.ARROW


def parse_engine(value: Engine | str, *, source: str = "--engine") -> Engine:
    """``value`` as an :class:`Engine`; a usage error naming ``source`` for anything else."""
    if isinstance(value, Engine):
        return value
    try:
        return Engine(str(value).strip().lower())
    except ValueError:
        raise UsageError(
            f"{source} {value!r}: unknown engine", hint=f"use one of {', '.join(ENGINE_NAMES)}"
        ) from None


def choose_engine(
    requested: Engine | str,
    *,
    work_bytes: int,
    meta: TableMetadata | None,
    arrow_unsupported: str | None = None,
) -> EngineChoice:
    """The engine a job runs in.

    Args:
        requested: what the user asked for (``spark``, ``arrow`` or ``auto``).
        work_bytes: the bytes the job reads and writes (the batch and the files of the
            partitions it touches), for ``auto``.
        meta: the table's metadata (its ``engine.auto.max-bytes``); ``None`` for a table
            the job creates (the default applies).
        arrow_unsupported: why the Arrow engine cannot run this job (a phrase such as
            "a bucketed table whose key is a map"), or ``None`` when it can.

    Returns:
        Spark or Arrow, with the reason.

    Raises:
        UsageError: ``arrow`` was asked for a job the Arrow engine cannot run.
    """
    engine = parse_engine(requested)
    if engine is Engine.SPARK:
        return EngineChoice(Engine.SPARK, "asked for")
    if engine is Engine.ARROW:
        if arrow_unsupported is not None:
            raise UsageError(
                f"the Arrow engine cannot run this: {arrow_unsupported}",
                hint="use --engine spark (or engine='spark' from Python)",
            )
        return EngineChoice(Engine.ARROW, "asked for")
    if arrow_unsupported is not None:
        return EngineChoice(
            Engine.SPARK, f"auto: the Arrow engine cannot run it ({arrow_unsupported})"
        )
    limit = _auto_limit(meta)
    if work_bytes <= limit:
        return EngineChoice(
            Engine.ARROW,
            f"auto: {human_size(work_bytes)} of work, at most {AUTO_MAX_BYTES}={human_size(limit)}",
        )
    return EngineChoice(
        Engine.SPARK,
        f"auto: {human_size(work_bytes)} of work, more than {AUTO_MAX_BYTES}={human_size(limit)}",
    )


R = TypeVar("R")


def run_in_engine(
    requested: Engine | str,
    choice: EngineChoice,
    arrow: Callable[[EngineChoice], R],
    spark: Callable[[EngineChoice], R],
) -> R:
    """Run a job in the engine ``choice`` names: ``arrow(choice)`` or ``spark(choice)``.

    The Arrow engine may find only while running that it cannot do the job as Spark does
    (:class:`~lakectl.errors.ArrowEngineLimit`: a value its writer cannot store, a type of the
    source). ``arrow`` must then leave the table as it was (the limit is raised inside the job's
    write transaction, which aborts and removes what it wrote). Under ``auto`` the job then runs
    again in Spark, whose reason says why; asked for by name (``arrow``), the limit is the error.
    Every writer that has an Arrow path goes through here.
    """
    if not choice.arrow:
        return spark(choice)
    return with_spark_fallback(requested, lambda: arrow(choice), spark)


def with_spark_fallback(
    requested: Engine | str,
    arrow: Callable[[], R],
    spark: Callable[[EngineChoice], R],
) -> R:
    """``arrow()``; under ``auto``, ``spark(...)`` instead when it raised
    :class:`~lakectl.errors.ArrowEngineLimit` (see :func:`run_in_engine`). For a job whose
    Arrow attempt itself decides whether to hand the job to Spark (``load``)."""
    try:
        return arrow()
    except ArrowEngineLimit as exc:
        if parse_engine(requested) is not Engine.AUTO:
            raise
        return spark(fallback_choice(exc))


def fallback_choice(limit: ArrowEngineLimit) -> EngineChoice:
    """Spark, for a job the Arrow engine found it cannot do (``limit``) while running it."""
    return EngineChoice(Engine.SPARK, f"auto: the Arrow engine cannot: {limit.message}")


def _auto_limit(meta: TableMetadata | None) -> int:
    from lakectl.table.metadata import DEFAULT_PROPERTIES
    from lakectl.table.properties import parse_size, property_value

    if meta is None:
        return int(parse_size(DEFAULT_PROPERTIES[AUTO_MAX_BYTES]))
    return int(property_value(meta, AUTO_MAX_BYTES))


__all__ = [
    "AUTO_MAX_BYTES",
    "ENGINE_NAMES",
    "Engine",
    "EngineChoice",
    "choose_engine",
    "fallback_choice",
    "parse_engine",
    "run_in_engine",
    "with_spark_fallback",
]
