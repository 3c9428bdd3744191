"""``LIKE`` patterns of statements: Spark's rules, and a form every engine evaluates in linear time.

Spark reads a pattern with ``\\`` as its escape character: ``%`` is any run of characters,
``_`` any one character, and ``\\%``, ``\\_``, ``\\\\`` stand for themselves; a ``\\`` before any
other character, or at the end, is an error at read time, so such patterns are refused when a
statement is installed (:func:`like_problem`).

Spark evaluates ``LIKE`` with a backtracking regular expression: ``%a%a%b`` over a value of n
characters costs about n^3 steps. A pattern is a run of *segments* separated by ``%``; each
segment has a fixed length (characters and ``_``), so matching the middle segments greedily, each
at its leftmost place after the previous one, finds a match whenever one exists (moving a
segment left never stops the ones after it from matching). :func:`linear_regex` writes that as a
Java regular expression with atomic groups, which never backtrack into a segment already placed:
a value of n characters costs about n times the pattern's length.
"""

from __future__ import annotations

from dataclasses import dataclass

ESCAPE = "\\"
ANY = None  # ``_`` inside a segment: any one character


@dataclass(frozen=True)
class LikePattern:
    """A parsed pattern: its segments (between ``%`` wildcards), each a tuple of characters
    and :data:`ANY` for ``_``."""

    segments: tuple[tuple[str | None, ...], ...]

    @property
    def wildcards(self) -> int:
        """Number of ``%`` wildcards."""
        return len(self.segments) - 1


def parse_like(pattern: str) -> LikePattern:
    """Split ``pattern`` into segments; raises :class:`ValueError` saying why Spark would refuse
    it."""
    segments: list[tuple[str | None, ...]] = []
    current: list[str | None] = []
    chars = iter(pattern)
    for char in chars:
        if char == ESCAPE:
            escaped = next(chars, None)
            if escaped is None:
                raise ValueError("a LIKE pattern may not end with the escape character '\\'")
            if escaped not in ("%", "_", ESCAPE):
                raise ValueError(
                    f"in a LIKE pattern, '\\' may only precede '%', '_' or '\\', not {escaped!r} "
                    "(write '\\\\' for a backslash)"
                )
            current.append(escaped)
        elif char == "%":
            segments.append(tuple(current))
            current = []
        elif char == "_":
            current.append(ANY)
        else:
            current.append(char)
    segments.append(tuple(current))
    return LikePattern(tuple(segments))


def like_problem(pattern: str) -> str | None:
    """Why Spark would refuse ``pattern`` at read time, or ``None``."""
    try:
        parse_like(pattern)
    except ValueError as exc:
        return str(exc)
    return None


def _segment_regex(segment: tuple[str | None, ...]) -> str:
    """A segment as Java regex text: ``.`` for ``_``; letters and digits as they are, every other
    character by its code point (no character of the pattern is regex syntax)."""
    parts = []
    for char in segment:
        if char is ANY:
            parts.append(".")
        elif char.isascii() and char.isalnum():
            parts.append(char)
        else:
            parts.append(f"\\x{{{ord(char):X}}}")
    return "".join(parts)


def linear_regex(pattern: LikePattern) -> str:
    """A Java regular expression that a whole value matches (``find`` from its start) exactly
    when ``LIKE`` matches it, in time linear in the value's length.

    First segment anchored at the start, last at the end, each middle one in an atomic group
    ``(?>.*?S)``: placed at its leftmost occurrence, never moved again."""
    if pattern.wildcards == 0:
        return f"(?s)\\A{_segment_regex(pattern.segments[0])}\\z"
    first, *middle, last = pattern.segments
    groups = "".join(f"(?>.*?{_segment_regex(s)})" for s in middle if s)
    return f"(?s)\\A{_segment_regex(first)}{groups}.*{_segment_regex(last)}\\z"


def re2_regex(pattern: LikePattern) -> str:
    """An RE2 regular expression (Arrow's) that a whole value matches exactly when ``LIKE``
    matches it; RE2 runs in time linear in the value's length whatever the pattern."""
    return "(?s)\\A" + ".*".join(_segment_regex(s) for s in pattern.segments) + "\\z"


def matches(value: str, pattern: LikePattern) -> bool:
    """Whether ``value`` matches (pure Python, linear per segment; the tests' second opinion)."""
    if pattern.wildcards == 0:
        only = pattern.segments[0]
        return len(value) == len(only) and _at(value, 0, only)
    first, *middle, last = pattern.segments
    if len(value) < len(first) + len(last) or not _at(value, 0, first):
        return False
    position, end = len(first), len(value) - len(last)
    for segment in middle:
        while position + len(segment) <= end and not _at(value, position, segment):
            position += 1
        if position + len(segment) > end:
            return False
        position += len(segment)
    return _at(value, end, last)


def _at(value: str, position: int, segment: tuple[str | None, ...]) -> bool:
    return all(c is ANY or value[position + i] == c for i, c in enumerate(segment))
