"""Table properties users can change with ``lakectl set``: what each one means and accepts.

Values are stored as strings (as in Hive's TBLPROPERTIES); every key has a parser that turns the
string into the value operations use and raises a :class:`UsageError` a user can act on.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakectl.errors import UsageError
from lakectl.table.json_input import warn
from lakectl.table.metadata import DEFAULT_PROPERTIES, TableMetadata

_DURATION_UNITS = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?b?)$", re.IGNORECASE)
# ORC's codecs that every writer here supports: Spark's, and pyarrow's (compaction's bucket merge,
# tables on S3 without hadoop-aws), which has no LZO.
ORC_CODECS = ("NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD")


_LONGEST_DURATION = 100 * 366 * 86_400_000  # ms; "now - retain" stays a representable date


def parse_duration(text: str) -> int:
    """``7d``, ``12h``, ``30m``, ``0s``, ``1d12h``, ``500ms`` -> milliseconds."""
    compact = text.strip().lower().replace(" ", "")
    pos, total = 0, 0.0
    for m in _DURATION.finditer(compact):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not compact or pos != len(compact):
        raise UsageError(
            f"{text!r} is not a duration",
            hint="use a number and a unit: ms, s, m, h, d or w (e.g. 7d, 12h, 30m, 0s)",
        )
    if total > _LONGEST_DURATION:
        raise UsageError(f"{text!r} is longer than 100 years")
    return int(total)


def human_size(n: int) -> str:
    """``1.5 MB`` for a byte count."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def parse_size(text: str) -> int:
    """``128MB``, ``1gb``, ``65536`` -> bytes (binary units: 1 MB = 1024 KB)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise UsageError(f"{text!r} is not a size", hint="e.g. 128MB, 1GB, 512KB or bytes")
    unit = m.group(2).lower()
    unit = unit if unit.endswith("b") or not unit else unit + "b"
    value = int(float(m.group(1)) * _SIZE_UNITS[unit])
    if value <= 0:
        raise UsageError(f"{text!r}: a size must be larger than 0")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise UsageError(f"{text!r} must not be negative")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number (e.g. 0.1 for 10%)") from None
    if not math.isfinite(value):
        raise UsageError(f"{text!r} is not a finite number (e.g. 0.1 for 10%)")
    if value < 0:
        raise UsageError(f"{text!r} must not be negative")
    return value


# ORC Java's default (``orc.dictionary.key.threshold``), which Spark's and Hive's writers use: a
# string column is dictionary-encoded while its distinct values are at most this share of its
# values. pyarrow's writer defaults to 0 (never), so lakectl's pyarrow writers pass it.
ORC_DICTIONARY_THRESHOLD = 0.8


def pyarrow_orc_codec(codec: str) -> str:
    """pyarrow's name for an ``orc.compress`` codec (``NONE`` is its "uncompressed"; unset is
    SNAPPY, the default)."""
    name = codec.strip().lower()
    return {"none": "uncompressed", "": "snappy"}.get(name, name)


def _codec(text: str) -> str:
    if text.upper() not in ORC_CODECS:
        raise UsageError(f"{text!r} is not an ORC codec (use one of {', '.join(ORC_CODECS)})")
    return text.upper()


@dataclass(frozen=True)
class PropertySpec:
    """One settable property: how to parse it and what it does; ``ceiling``, the most a reader
    accepts (see :func:`ceiling`)."""

    key: str
    parse: Callable[[str], Any]
    help: str
    ceiling: int | None = None


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise UsageError(f"{text!r} must be at least 1")
    return value


# The statement checker's own ceiling of depth (lakectl.expr.check.MAX_DEPTH): no
# reader's setting can raise it.
_MAX_DEPTH = 200
# The environment variable that sets a reader's own ceiling of a property: its name upper-cased,
# dots as underscores, after this prefix (LAKECTL_CEILING_UPDATES_MAX_LIKE_WILDCARDS).
CEILING_ENV_PREFIX = "LAKECTL_CEILING_"


def _statement_limits() -> tuple[PropertySpec, ...]:
    """Limits on what Type 7 statements may cost a reader; checked at install and at every read.
    Anyone who can write to the table can set them, so each has a ceiling that only the reader
    can raise (:func:`ceiling`)."""
    return (
        PropertySpec(
            "updates.max.file.size",
            parse_size,
            "apply-updates: largest .updates file",
            16 * 1024**2,
        ),
        PropertySpec("updates.max.statements", _positive_int, "most active statements", 10_000),
        PropertySpec(
            "updates.max.expression.nodes",
            _positive_int,
            "most columns, literals and operators in one statement",
            200_000,
        ),
        PropertySpec(
            "updates.max.expression.depth", _positive_int, "deepest nesting of a statement", 200
        ),
        PropertySpec(
            "updates.max.string.length",
            _positive_int,
            "longest string literal, lpad/rpad length or constant string a statement builds",
            65_536,
        ),
        PropertySpec(
            "updates.max.string.growth",
            _positive_int,
            "how many times longer than stored values the statements may make a string",
            256,
        ),
        PropertySpec(
            "updates.max.like.wildcards",
            _non_negative_int,
            "most % wildcards in a LIKE pattern (a reader's cost grows as the value's length "
            "times the pattern's)",
            16,
        ),
    )


def ceiling_env(key: str) -> str:
    """The environment variable that sets this reader's ceiling of ``key``."""
    return CEILING_ENV_PREFIX + key.upper().replace(".", "_").replace("-", "_")


def ceiling(key: str) -> int | None:
    """The most this process accepts for ``key`` (``None``: no ceiling): the reader's own
    ``LAKECTL_CEILING_...`` when set, else the built-in ceiling. Never taken from a table: a
    table's setting above it is ignored (:func:`property_value`) and refused by ``lakectl set``.
    The depth of statements stays at most 200 whatever the setting."""
    spec = SPECS[key]
    if spec.ceiling is None:
        return None
    env = ceiling_env(key)
    text = os.environ.get(env, "").strip()
    if not text:
        return spec.ceiling
    try:
        value = int(spec.parse(text))
    except UsageError as exc:
        raise UsageError(f"{env}={text}: {exc.message}", hint=exc.hint) from exc
    return min(value, _MAX_DEPTH) if key == "updates.max.expression.depth" else value


def _above_ceiling(key: str, value: Any) -> int | None:
    """The ceiling ``value`` is above, or ``None``."""
    top = ceiling(key)
    return top if top is not None and value > top else None


SPECS: dict[str, PropertySpec] = {
    s.key: s
    for s in (
        PropertySpec(
            "compactor.delta.num.threshold",
            _non_negative_int,
            "compact --auto: minor compaction when a partition has more deltas than this",
        ),
        PropertySpec(
            "compactor.delta.pct.threshold",
            _non_negative_float,
            "compact --auto: major compaction when deltas exceed this fraction of the base",
        ),
        PropertySpec(
            "compactor.aborted.threshold",
            _non_negative_int,
            "compact --auto: major compaction where more aborted write ids than this left directories",
        ),
        PropertySpec(
            "clean.retain",
            parse_duration,
            "clean: keep every state that was current within this window (e.g. 7d)",
        ),
        PropertySpec(
            "clean.retain.minimum",
            parse_duration,
            "clean: refuse a shorter retention unless --force is given (a safety floor)",
        ),
        PropertySpec(
            "write.target-file-size",
            parse_size,
            "compact, list-bucket: input per Spark task where they rewrite through Spark "
            "(minor compactions, list bucketing, the major fallback); files stay one per bucket",
        ),
        PropertySpec("orc.compress", _codec, "codec of written ORC files"),
        PropertySpec(
            "log.checkpoint.interval",
            _non_negative_int,
            "commits between log checkpoints, which readers start from instead of reading "
            "every log record (0: only `lakectl checkpoint` writes them)",
        ),
        PropertySpec(
            "engine.auto.max-bytes",
            parse_size,
            "--engine auto: jobs that read and write at most this many bytes run in the Arrow "
            "engine (in the lakectl process, no JVM), larger ones in Spark",
            4 * 1024**3,
        ),
        *_statement_limits(),
    )
}
assert set(SPECS) == set(DEFAULT_PROPERTIES), "every default property needs a spec"


def known_keys() -> list[str]:
    return sorted(SPECS)


def validate(key: str, value: str) -> str:
    """Check ``key=value``; returns the value to store (codecs upper-cased)."""
    spec = SPECS.get(key)
    if spec is None:
        raise UsageError(
            f"unknown table property {key!r}", hint=f"known properties: {', '.join(known_keys())}"
        )
    try:
        parsed = spec.parse(value)
    except UsageError as exc:
        raise UsageError(f"{key}={value}: {exc.message}", hint=exc.hint) from exc
    top = _above_ceiling(key, parsed)
    if top is not None:
        raise UsageError(
            f"{key}={value}: above the ceiling: at most {top}; readers ignore a larger value "
            "and use the ceiling",
            hint=f"a reader can raise its own ceiling with the environment variable "
            f"{ceiling_env(key)}; a table cannot",
        )
    return parsed if isinstance(parsed, str) else value.strip()


def property_value(meta: TableMetadata, key: str) -> Any:
    """The parsed value of ``key`` for this table (its setting or the default)."""
    text = meta.property(key)
    try:
        value = SPECS[key].parse(text)
    except UsageError as exc:
        raise UsageError(
            f"table property {key}={text!r} is invalid: {exc.message}",
            hint=f"fix it with `lakectl set TABLE {key}=...`",
        ) from exc
    top = _above_ceiling(key, value)
    if top is None:
        return value
    warn(
        f"table property {key}={text} is above this reader's ceiling; using {top} "
        f"(raise the ceiling with the environment variable {ceiling_env(key)})"
    )
    return top
