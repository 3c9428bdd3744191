"""Tables laid out for a terminal of a given width (the ``table`` format on a terminal).

Every value stays on one line. When the columns at their natural widths do not fit, the widest
columns of long texts are cut, each value ending in ``…``; numbers and columns of short texts
(at most :data:`CUT_OVER` characters: times, names, codes) are never cut. When even cut columns
do not fit (each keeps at least :data:`MIN_TEXT` characters), every row becomes a block of
``column │ value`` lines under ``-[ RECORD n ]-``, as psql's expanded mode shows them.

Numbers are right-aligned, and the floating-point values of a column share one precision.
Columns of bars (:class:`Bar`) draw a number as a row of blocks, scaled to the column's largest
value; they use the room left over and are left out when there is none.

Everything here is pure: it returns the lines, :mod:`lakectl.cli.output` prints them.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len

SEPARATOR = " │ "
RULE_JOINT = "─┼─"
ELLIPSIS = "…"
MIN_TEXT = 12  # a text column is never cut below this many characters
# A text column is cut only when one of its values is longer than this: shorter ones (times,
# names, codes, partition values) mean nothing in part.
CUT_OVER = 24
MAX_DECIMALS = 6  # floats needing more digits are shown in scientific notation
BAR_MIN, BAR_MAX = 8, 40
BLOCK, SLIVER, MARK = "█", "▏", "┆"

# A number that a listing already formatted: 1,234 or 12.5 or 3.2 MB or 45.0%.
_NUMBER_TEXT = re.compile(r"-?(0|[1-9]\d{0,2}(,\d{3})*|[1-9]\d*)(\.\d+)?( ?([KMGTP]?B|%))?")
_PLACEHOLDERS = ("", "-", "NULL")


@dataclass(frozen=True)
class Bar:
    """A column of bars: one number per row (None: no bar), drawn against the largest one;
    ``mark`` draws a reference line (e.g. the average) across the bars at that value."""

    header: str
    values: Sequence[float | None]
    mark: float | None = None


def render(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int,
    bars: Sequence[Bar] = (),
) -> list[str]:
    """The lines showing ``rows`` under ``columns`` within ``width`` characters."""
    texts, numeric = _column_texts(columns, rows)
    lines = [cut(title, width)] if title else []
    widths = _fit([cell_len(c) for c in columns], texts, numeric, width)
    if widths is None:
        return lines + _expanded(columns, texts, width)
    shown_bars = _bar_widths(bars, sum(widths) + len(SEPARATOR) * len(widths), width)
    headers = [*columns, *(b.header for b, _ in shown_bars)]
    all_widths = [*widths, *(w for _, w in shown_bars)]
    right = [*numeric, *(False for _ in shown_bars)]
    lines.append(
        _join([_pad(cut(h, w), w, r) for h, w, r in zip(headers, all_widths, right, strict=True)])
    )
    lines.append(RULE_JOINT.join("─" * w for w in all_widths))
    for i in range(len(rows)):
        cells = [
            _pad(cut(texts[c][i], widths[c]), widths[c], numeric[c]) for c in range(len(columns))
        ]
        cells += [_pad(draw_bar(b.values[i], b.values, w, b.mark), w, False) for b, w in shown_bars]
        lines.append(_join(cells))
    return lines


def cut(text: str, width: int) -> str:
    """``text`` within ``width`` terminal cells: whole, or cut with ``…`` as its last cell; a
    cut that would split a word ends after the word before when little is lost that way."""
    if cell_len(text) <= width:
        return text
    kept, used = [], 0
    for ch in text:
        size = cell_len(ch)
        if used + size > width - 1:
            break
        kept.append(ch)
        used += size
    shown = "".join(kept)
    if text[len(shown)] != " ":
        space = shown.rfind(" ")
        if space >= max(1, len(shown) * 3 // 4):
            shown = shown[: space + 1]
    return shown + ELLIPSIS


def draw_bar(
    value: float | None, values: Sequence[float | None], width: int, mark: float | None = None
) -> str:
    """``value`` as blocks in ``width`` cells, the largest of ``values`` filling them; a value
    too small for one block but above zero shows as a sliver; ``mark``, when it lies beyond the
    bar, as a dotted line at its place."""
    top = max((v for v in values if v is not None), default=0)
    if value is None or top <= 0:
        return ""
    length = round(value / top * width)
    bar = BLOCK * length or (SLIVER if value > 0 else "")
    if mark is not None and 0 <= mark <= top:
        at = min(width - 1, round(mark / top * width))
        if at >= len(bar):
            bar = bar + " " * (at - len(bar)) + MARK
    return bar


def _join(cells: list[str]) -> str:
    return SEPARATOR.join(cells).rstrip()


def _pad(text: str, width: int, right: bool) -> str:
    space = " " * max(0, width - cell_len(text))
    return space + text if right else text + space


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _column_texts(
    columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[list[list[str]], list[bool]]:
    """Per column: each row's text (one line) and whether the column holds numbers."""
    texts, numeric = [], []
    for c in range(len(columns)):
        values = [row[c] for row in rows]
        shown, is_number = format_column(values)
        texts.append([_one_line(t) for t in shown])
        numeric.append(is_number)
    return texts, numeric


def format_column(values: Sequence[Any]) -> tuple[list[str], bool]:
    """The values of one column as text, and whether they are numbers (right-aligned): numeric
    values, or texts formatted as numbers (``1,234``, ``3.2 MB``), with NULLs and ``-`` among
    them. Floats share one precision: the most decimals any of them needs, up to
    :data:`MAX_DECIMALS`; beyond that (or past 1e16) the column is in scientific notation."""
    present = [
        v for v in values if v is not None and not (isinstance(v, str) and v in _PLACEHOLDERS)
    ]
    if not present:
        return [_text(v) for v in values], False
    if all(_is_number(v) for v in present):
        if any(isinstance(v, float) for v in present):
            return _floats(values), True
        return [_text(v) for v in values], True
    is_text_number = all(isinstance(v, str) and _NUMBER_TEXT.fullmatch(v) for v in present)
    return [_text(v) for v in values], is_text_number


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _decimals(value: float) -> int | None:
    """Decimals ``value``'s shortest form needs, or None when that form is scientific."""
    shown = repr(value)
    if "e" in shown or "E" in shown:
        return None
    return len(shown.partition(".")[2])


def _floats(values: Sequence[Any]) -> list[str]:
    finite = [float(v) for v in values if _is_number(v) and math.isfinite(float(v))]
    needed = [_decimals(v) for v in finite]
    if all(d is not None and d <= MAX_DECIMALS for d in needed):
        places = max((d or 0 for d in needed), default=1)
        spec = f".{places}f"
    else:
        digits = max(
            len(f"{abs(v):.{MAX_DECIMALS}e}".partition("e")[0].rstrip("0")) for v in finite
        )
        spec = f".{max(1, min(MAX_DECIMALS, digits - 2))}e"
    return [
        _text(v) if v is None or not math.isfinite(float(v)) else format(float(v), spec)
        for v in values
    ]


def _fit(
    header_widths: list[int], texts: list[list[str]], numeric: list[bool], width: int
) -> list[int] | None:
    """Column widths that fit ``width`` (text columns cut, widest first), or None when only
    one record per block fits."""
    natural = [
        max([h, *(cell_len(t) for t in col)]) for h, col in zip(header_widths, texts, strict=True)
    ]
    room = width - len(SEPARATOR) * (len(natural) - 1)
    if sum(natural) <= room:
        return natural
    flexible = [
        i
        for i, col in enumerate(texts)
        if not numeric[i] and max((cell_len(t) for t in col), default=0) > CUT_OVER
    ]
    fixed = sum(w for i, w in enumerate(natural) if i not in flexible)
    budget = room - fixed
    if budget < MIN_TEXT * len(flexible) or not flexible:
        return None
    widths = list(natural)
    # Water filling: the narrowest flexible columns keep their width while each takes its share.
    pending = sorted(flexible, key=lambda i: natural[i])
    while pending:
        share = budget // len(pending)
        i = pending.pop(0)
        widths[i] = min(natural[i], share)
        budget -= widths[i]
    return widths


def _bar_widths(bars: Sequence[Bar], used: int, width: int) -> list[tuple[Bar, int]]:
    """Each bar column with its width, from the room ``used`` leaves; none fit, none shown."""
    if not bars:
        return []
    each = (width - used) // len(bars) - len(SEPARATOR)
    if each < BAR_MIN:
        return []
    return [(b, min(BAR_MAX, each)) for b in bars]


def _expanded(columns: Sequence[str], texts: list[list[str]], width: int) -> list[str]:
    """One block per row: ``-[ RECORD n ]-`` and a ``column │ value`` line per column."""
    rows = len(texts[0]) if texts else 0
    if not rows:
        return ["(no rows)"]
    label = min(max(cell_len(c) for c in columns), max(MIN_TEXT, width // 3))
    value_room = max(1, width - label - len(SEPARATOR))
    widest = max(cell_len(t) for col in texts for t in col)
    rule = min(width, label + len(SEPARATOR) + widest)
    lines = []
    for r in range(rows):
        head = f"-[ RECORD {r + 1} ]-"
        lines.append(head + "-" * max(0, rule - len(head)))
        for c, name in enumerate(columns):
            lines.append(
                _join([_pad(cut(name, label), label, False), cut(texts[c][r], value_room)])
            )
    return lines
