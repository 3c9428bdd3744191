"""Spark's results, value by value, for the functions and casts Arrow has no kernel for.

Each function takes and returns plain Python values (None for NULL) and follows what Spark 4
computes with lakectl's session settings (non-ANSI casts, UTC): :mod:`lakectl.arrow.compile_expr`
runs them as pyarrow scalar functions. They are slower than Arrow's kernels (a Python call per
value) and are used only where a kernel would give another result.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

from lakectl.expr.tree import INTEGRAL_BITS, decimal_parts

_LONG = (-(2**63), 2**63 - 1)
_WIDE = Context(prec=1200)  # enough for every double at every scale round() takes
_CONTROL = "".join(chr(c) for c in range(33)) + "\x7f"  # what Spark's trimAll removes
_JAVA_DECIMAL = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
)
_JAVA_HEX = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?"
)
# Java's BigDecimal reads the digits of every script
_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_SPECIAL = {
    "inf": math.inf,
    "+inf": math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-inf": -math.inf,
    "-infinity": -math.inf,
    "nan": math.nan,
}


# strings -------------------------------------------------------------------------------------


def initcap(text: str) -> str:
    """Spark's ``initcap``: every word (words are separated by ``' '`` only) with its first
    character in title case and the rest in lower case, with Unicode's full mappings (``ﬁ``
    becomes ``Fi``, a final ``Σ`` becomes ``ς``)."""
    words = text.split(" ")
    return " ".join(w[:1].title() + w.lower()[len(w[:1].lower()) :] for w in words)


def locate(text: str, substring: str, position: int) -> int:
    """Spark's ``locate(substring, text, position)``: the 1-based position of the first
    occurrence at or after ``position`` (characters), 0 when there is none or ``position`` is
    below 1; an empty ``substring`` is found at 1."""
    if position < 1:
        return 0
    if not substring:
        return 1
    return text.find(substring, position - 1) + 1


def substring(text: str, position: int, length: int = 2**31 - 1) -> str:
    """Spark's ``substring(text, position, length)``: 1-based; 0 is the first character; a
    negative position counts from the end."""
    start = position - 1 if position > 0 else len(text) + position if position < 0 else 0
    end = max(-(2**31), min(2**31 - 1, start + length))
    start = max(start, 0)
    return "" if start >= end else text[start:end]


def pad(text: str, width: int, fill: str, left: bool) -> str:
    """Spark's ``lpad``/``rpad``: ``fill`` repeated (the last copy cut) up to ``width``
    characters; a longer text (or an empty ``fill``) is cut to ``width``."""
    spaces = width - len(text)
    if spaces <= 0 or not fill:
        return text[: max(width, 0)]
    padding = (fill * (spaces // len(fill) + 1))[:spaces]
    return padding + text if left else text + padding


# numbers -------------------------------------------------------------------------------------


def remainder(dividend: object, divisor: object) -> object:
    """Spark's ``%`` of doubles and decimals: the sign of the dividend (Java's remainder);
    NULL when dividing by zero."""
    if divisor == 0:
        return None
    if isinstance(dividend, Decimal) and isinstance(divisor, Decimal):
        return _WIDE.remainder(dividend, divisor)
    a, b = float(dividend), float(divisor)  # type: ignore[arg-type]
    if math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    return a if math.isinf(b) else math.fmod(a, b)


def extreme(values: list[float | None], greatest: bool) -> float | None:
    """Spark's ``greatest``/``least`` of doubles: NULLs skipped, NaN above every number, the
    first of equal values."""
    best: float | None = None
    for value in values:
        if value is None:
            continue
        if best is None:
            best = value
            continue
        key, best_key = _order(value), _order(best)
        if (key > best_key) if greatest else (key < best_key):
            best = value
    return best


def _order(value: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(value) else (0, value)


def round_half_up(value: float | int, scale: int, type_name: str) -> float | int:
    """Spark's ``round(value, scale)`` of a double, float or integer: the decimal the value
    prints as, rounded half away from zero (2.675 is 2.68, -0.5 is -1; NaN and infinities stay)."""
    if type_name in INTEGRAL_BITS:
        assert isinstance(value, int)
        if scale >= 0:
            return value
        rounded = int(Decimal(value).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, _WIDE))
        return _wrap(rounded, INTEGRAL_BITS[type_name])
    if math.isnan(value) or math.isinf(value):
        return value
    text = float32_text(value) if type_name == "float" else repr(float(value))
    exact = Decimal(text).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, _WIDE)
    result = float(exact)
    if type_name == "float":
        result = _to_float32(result)
    return result if result != 0 else 0.0  # Java's BigDecimal has no negative zero


def floor_ceil(value: float, up: bool) -> int:
    """Spark's ``floor``/``ceil`` of a double as a bigint (Java's cast: NaN is 0, values
    beyond the range are its ends)."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return _LONG[1] if value > 0 else _LONG[0]
    whole = math.ceil(value) if up else math.floor(value)
    return max(_LONG[0], min(_LONG[1], whole))


def _wrap(value: int, bits: int) -> int:
    span = 2**bits
    value %= span
    return value - span if value >= span // 2 else value


def _to_float32(value: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


_FLOAT32_MAX = float(2**128 - 2**104)
_FLOAT32_OVERFLOW = Decimal(2**128 - 2**103)  # half way from the largest float32 to 2^128


def decimal_to_float32(value: Decimal) -> float:
    """The float32 nearest to ``value`` (ties to an even last bit), as Java's
    ``BigDecimal.floatValue`` and ``Float.parseFloat``: not through a double, which can round
    twice."""
    sign = -1.0 if value.is_signed() else 1.0
    size = value.copy_abs()
    if size >= _FLOAT32_OVERFLOW:
        return math.copysign(math.inf, sign)
    near = min(_to_float32(float(size)), _FLOAT32_MAX)
    bits = struct.unpack("<I", struct.pack("<f", near))[0]
    candidates = [
        struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits - 1, bits, bits + 1) if b >= 0
    ]
    distances = [
        (abs(_WIDE.subtract(Decimal(c), size)), c) for c in candidates if c <= _FLOAT32_MAX
    ]
    best = min(distance for distance, _ in distances)
    closest = [c for distance, c in distances if distance == best]
    if len(closest) > 1:  # a tie: the one with an even last bit
        closest = [c for c in closest if struct.unpack("<I", struct.pack("<f", c))[0] % 2 == 0]
    return math.copysign(closest[0], sign)


def float32_text(value: float) -> str:
    """The shortest decimal that reads back as the float32 ``value``."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if _to_float32(float(text)) == value:
            return text
    return repr(value)


# casts ---------------------------------------------------------------------------------------


def cast_function(source: str, target: str) -> Callable[[object], object] | None:
    """Spark's non-ANSI ``CAST`` from ``source`` to ``target`` value by value (an invalid text
    is NULL), or None when it is not provided here."""
    if source == "string":
        if target in INTEGRAL_BITS:
            bits = INTEGRAL_BITS[target]
            return lambda v: text_to_integer(str(v), bits)
        if target in ("double", "float"):
            return lambda v: text_to_floating(str(v), target == "float")
        parts = decimal_parts(target)
        if parts is not None:
            return lambda v: text_to_decimal(str(v), parts)
        if target == "boolean":
            return lambda v: text_to_boolean(str(v))
        if target == "date":
            return lambda v: text_to_date(str(v))
        if target == "timestamp":
            return lambda v: text_to_timestamp(str(v))
        return None
    if source == "date" and (target == "boolean" or _numeric(target)):
        return lambda v: None  # Spark's non-ANSI cast of a date to a number is NULL
    if source == "timestamp" and (target == "boolean" or _numeric(target)):
        return _timestamp_to_number(target)
    if target == "timestamp" and (source == "boolean" or _numeric(source)):
        return _number_to_timestamp(source)
    if target == "string":
        if source in ("double", "float"):
            return lambda v: java_float_text(float(v), source == "float")  # type: ignore[arg-type]
        if source == "timestamp":
            return lambda v: timestamp_text(v)  # type: ignore[arg-type]
        return None
    return _number_cast(source, target)


def _number_cast(source: str, target: str) -> Callable[[object], object] | None:
    """Casts between numbers and booleans, as Spark's non-ANSI casts: integers narrow by
    wrapping around, fractions are truncated (a double beyond the range is its end first),
    decimals are rounded half up (NULL when they do not fit), numbers are true when not 0."""
    numeric = _numeric(source)
    if target == "boolean" and numeric:
        return lambda v: v != 0
    if source == "boolean" and (target in INTEGRAL_BITS or target in ("float", "double")):
        return lambda v: float(bool(v)) if target in ("float", "double") else int(bool(v))
    if target in INTEGRAL_BITS and numeric:
        bits = INTEGRAL_BITS[target]
        if source in ("float", "double"):
            wide = 64 if target == "bigint" else 32
            return lambda v: _wrap(_saturated(float(v), wide), bits)  # type: ignore[arg-type]
        return lambda v: _wrap(int(v), bits)  # type: ignore[call-overload]
    if source.startswith("decimal(") and target == "float":
        return lambda v: decimal_to_float32(Decimal(v))  # type: ignore[arg-type]
    parts = decimal_parts(target)
    if parts is not None and source == "boolean":
        return lambda v: _fit(int(bool(v)), parts)
    if parts is not None and numeric:
        if source in ("float", "double"):
            return lambda v: _fit(float(v), parts)  # type: ignore[arg-type]
        return lambda v: _fit(v, parts)
    return None


def _numeric(type_name: str) -> bool:
    return (
        type_name in INTEGRAL_BITS
        or type_name in ("float", "double")
        or type_name.startswith("decimal(")
    )


def _timestamp_to_number(target: str) -> Callable[[object], object]:
    """Spark's non-ANSI cast of a timestamp (given as microseconds since 1970-01-01 UTC) to
    ``target``: an integer is the whole seconds rounded down (NULL when they do not fit), a
    double or float or decimal the seconds with their fraction, a boolean whether it is not
    1970-01-01 00:00:00."""
    if target == "boolean":
        return lambda v: v != 0
    if target in INTEGRAL_BITS:
        limit = 2 ** (INTEGRAL_BITS[target] - 1)

        def whole_seconds(v: object) -> int | None:
            seconds = int(v) // 1_000_000  # type: ignore[call-overload]
            return seconds if -limit <= seconds < limit else None

        return whole_seconds
    parts = decimal_parts(target)
    if parts is not None:
        return lambda v: _fit(_seconds(v), parts)
    if target == "float":
        return lambda v: _to_float32(_seconds(v))
    return _seconds


def _number_to_timestamp(source: str) -> Callable[[object], object]:
    """Spark's non-ANSI cast of a number of seconds since 1970-01-01 UTC to a timestamp (as
    microseconds): integers saturate at the ends of the range, doubles are truncated to the
    microsecond (NaN and infinities are NULL), decimals wrap around; true is 1 microsecond."""
    if source == "boolean":
        return lambda v: int(bool(v))
    if source in INTEGRAL_BITS:
        return lambda v: max(_LONG[0], min(_LONG[1], int(v) * 1_000_000))  # type: ignore[call-overload]
    if source in ("float", "double"):

        def from_double(v: object) -> int | None:
            seconds = float(v)  # type: ignore[arg-type]
            return (
                None
                if math.isnan(seconds) or math.isinf(seconds)
                else _saturated(seconds * 1_000_000, 64)
            )

        return from_double
    return lambda v: _wrap(int(_WIDE.multiply(Decimal(v), 1_000_000)), 64)  # type: ignore[arg-type]


def _seconds(micros: object) -> float:
    """Java's ``micros / 1e6`` of a long: the microseconds as a double first."""
    return float(int(micros)) / 1_000_000  # type: ignore[call-overload]


def decimal_arithmetic(op: str, left: Decimal, right: Decimal, parts: tuple[int, int]) -> object:
    """Spark's ``+``, ``-``, ``*`` or ``%`` of decimals whose exact result needs more than 38
    digits: the exact result rounded half up to the scale of ``parts`` (the integer digits
    kept), NULL when it still does not fit."""
    exact = {
        "add": _WIDE.add,
        "sub": _WIDE.subtract,
        "mul": _WIDE.multiply,
        "mod": _WIDE.remainder,
    }[op](left, right)
    return _fit(exact, parts)


def _saturated(value: float, bits: int) -> int:
    """Java's cast of a double to an int or long: NaN is 0, the range's ends beyond it."""
    if math.isnan(value):
        return 0
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if math.isinf(value):
        return high if value > 0 else low
    return max(low, min(high, int(value)))


def _fit(value: object, parts: tuple[int, int]) -> Decimal | None:
    """A number as ``decimal(p,s)`` (a double from the decimal it prints as), rounded half up;
    NULL when it does not fit or is not finite."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        value = repr(value)
    if isinstance(value, Decimal):
        return _rounded(value, parts)
    return text_to_decimal(str(value), parts)


def text_to_integer(text: str, bits: int) -> int | None:
    """Spark's cast of text to an integer type: blanks around it ignored, an optional sign,
    digits, optionally a ``.`` and digits that are dropped; out of range is NULL."""
    body = text.strip(_CONTROL)
    if not body:
        return None
    negative = body[0] == "-"
    if body[0] in "+-":
        if len(body) == 1:
            return None
        body = body[1:]
    whole, _, fraction = body.partition(".")
    if not _ascii_digits(whole, empty=True) or not _ascii_digits(fraction, empty=True):
        return None
    value = int(whole or "0")
    value = -value if negative else value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return None
    return value


def _ascii_digits(text: str, *, empty: bool) -> bool:
    return (empty and not text) or (text.isascii() and text.isdigit())


def text_to_floating(text: str, single: bool) -> float | None:
    """Spark's cast of text to double or float (Java's number syntax, plus ``inf`` and
    ``nan`` in any case)."""
    body = text.strip(_CONTROL[:-1])
    value: float | None = None
    if _JAVA_DECIMAL.fullmatch(body):
        number = body.rstrip("fFdD")
        if single and "N" not in number and "I" not in number:  # not NaN, not Infinity
            return decimal_to_float32(Decimal(number))
        value = float(number.replace("Infinity", "inf"))
    elif _JAVA_HEX.fullmatch(body):
        value = float.fromhex(body.rstrip("fFdD"))
    else:
        value = _SPECIAL.get(body.lower())
    if value is None or not single:
        return value
    return _to_float32(value)


def text_to_decimal(text: str, parts: tuple[int, int]) -> Decimal | None:
    """Spark's cast of text to ``decimal(p,s)``: rounded half up to the scale, NULL when it
    does not fit."""
    body = text.strip(_CONTROL[:-1])
    if not _BIG_DECIMAL.fullmatch(body):
        return None
    try:
        return _rounded(Decimal(body), parts)
    except InvalidOperation:
        return None


def _rounded(value: Decimal, parts: tuple[int, int]) -> Decimal | None:
    """``value`` rounded half up to the scale of ``parts``, None when it does not fit."""
    precision, scale = parts
    rounded = value.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, _WIDE)
    if rounded != 0 and rounded.adjusted() >= precision - scale:
        return None
    return rounded


_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})


def text_to_boolean(text: str) -> bool | None:
    """Spark's cast of text to boolean."""
    word = text.strip(_CONTROL).lower()
    return True if word in _TRUE else False if word in _FALSE else None


def text_to_date(text: str) -> int | None:
    """Spark's cast of text to a date, as days since 1970-01-01: ``[+-]yyyy[-m[-d]]`` (4 to 7
    year digits), a day may be followed by a blank or ``T`` and anything; else NULL."""
    body = text.strip(_CONTROL)
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    cut = min((i for i in (body.find(" "), body.find("T")) if i >= 0), default=len(body))
    head, rest = body[:cut], body[cut:]
    segments = head.split("-")
    if len(segments) > 3 or (rest and len(segments) < 3):
        return None
    if not all(_ascii_digits(s, empty=False) for s in segments):
        return None
    if not 4 <= len(segments[0]) <= 7 or any(len(s) > 2 for s in segments[1:]):
        return None
    year = sign * int(segments[0])
    month, day = (int(s) for s in [*segments[1:], "1", "1"][:2])
    days = _days(year, month, day)
    # Spark's days are an int: a date past its range (a 7-digit year) is NULL
    return days if days is not None and -(2**31) <= days < 2**31 else None


# Java's ZoneId.SHORT_IDS, which Spark accepts as zones
_SHORT_ZONES = {
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
}
_OFFSET = re.compile(r"([+-])(?:(\d\d?)|(\d\d)(?:(\d\d)(\d\d)?|:(\d\d)(?::(\d\d))?))", re.ASCII)
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+")
_MICROS_PER_DAY = 86_400_000_000


def text_to_timestamp(text: str) -> int | None:
    """Spark's cast of text to a timestamp, as microseconds since 1970-01-01 UTC:
    ``[+-]yyyy[-m[-d]]`` (4 to 6 year digits), then after a blank or ``T``
    ``h[:m[:s[.fraction]]]`` (digits past the sixth of the fraction dropped) and a zone (``Z``,
    ``±h[h][:mm[:ss]]``, ``UTC``/``GMT``/``UT`` with or without an offset, or a region such as
    ``Europe/Paris``), blanks allowed before the zone; a time alone (``10:00``, ``T10:00``) is
    on the current date in its zone; else NULL. Without a zone the time is UTC."""
    body = text.strip(_CONTROL)
    if not body:
        return None
    signed = body[0] in "+-"
    segments = [1, 1, 1, 0, 0, 0, 0]  # year, month, day, hour, minute, second, microseconds
    index, value, digits, fraction_digits, just_time = 0, 0, 0, 0, False
    zone = "UTC"
    for position in range(1 if signed else 0, len(body)):
        char = body[position]
        if "0" <= char <= "9":
            if index == 6:
                fraction_digits += 1
            if index != 6 or fraction_digits <= 6:
                value = value * 10 + int(char)
            digits += 1
            continue
        if position == 0 and char == "T":
            just_time, index = True, 3
            continue
        if index == 0 and char == ":" and not signed:
            just_time, index = True, 3
        elif not (
            (index < 2 and char == "-")
            or (index == 2 and char in " T")
            or (index in (3, 4) and char == ":")
            or index in (5, 6)
        ):
            return None
        if not _valid_digits(index, digits):
            return None
        segments[index], index, value, digits = value, index + 1, 0, 0
        if index == 7 or (index == 6 and char != "."):
            zone = body[position:].strip(_CONTROL[:-1])
            index = 7
            break
    if index < 7:
        if not _valid_digits(index, digits):
            return None
        segments[index] = value
    segments[6] *= 10 ** (6 - min(fraction_digits, 6))
    if signed and body[0] == "-":
        segments[0] = -segments[0]
    return _instant(segments, _zone(zone), just_time)


def _valid_digits(segment: int, digits: int) -> bool:
    """Spark's check of the digits of one segment: 4 to 6 for the year, any number for the
    fraction, 1 or 2 for the others."""
    if segment == 6:
        return True
    if segment == 0:
        return 4 <= digits <= 6
    return 0 < digits <= 2


def _instant(segments: list[int], zone: int | dt.tzinfo | None, just_time: bool) -> int | None:
    """Microseconds since 1970-01-01 UTC of a wall time in ``zone`` (seconds east of UTC or a
    time zone), None when it is no time."""
    year, month, day, hour, minute, second, micros = segments
    if zone is None or hour > 23 or minute > 59 or second > 59:
        return None
    if just_time:
        now = dt.datetime.now(dt.UTC)
        if isinstance(zone, int):
            today = (now + dt.timedelta(seconds=zone)).date()
        else:
            today = now.astimezone(zone).date()
        year, month, day = today.year, today.month, today.day
    days = _days(year, month, day)
    if days is None:
        return None
    if isinstance(zone, dt.tzinfo):
        if not 1 <= year <= 9999:
            return None
        wall = dt.datetime(year, month, day, hour, minute, second, tzinfo=zone)
        shift = wall.utcoffset()
        assert shift is not None
        zone = int(shift.total_seconds())
    local = days * _MICROS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    result = local - zone * 1_000_000
    return result if _LONG[0] <= result <= _LONG[1] else None


def _zone(name: str) -> int | dt.tzinfo | None:
    """Java's ``ZoneId.of`` (after Spark's padding of one-digit hours) as seconds east of UTC
    or a time zone, None when Java refuses it."""
    name = re.sub(r"([+-])(\d):", r"\g<1>0\2:", name, count=1)
    name = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", name, count=1)
    name = _SHORT_ZONES.get(name, name)
    if name == "Z":
        return 0
    for prefix in ("UTC", "GMT", "UT"):
        if name == prefix:
            return 0
        if name.startswith(prefix) and name[len(prefix)] in "+-":
            return _offset(name[len(prefix) :])
    if name[:1] in ("+", "-"):
        return _offset(name)
    if not _REGION.fullmatch(name) or name.startswith(("posix/", "right/")):
        return None
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _offset(text: str) -> int | None:
    """Java's ``ZoneOffset.of``: ``±h``, ``±hh``, ``±hh:mm``, ``±hhmm``, ``±hh:mm:ss``,
    ``±hhmmss`` in seconds, at most 18 hours."""
    match = _OFFSET.fullmatch(text)
    if match is None:
        return None
    sign, short, hours, minutes, seconds, colon_minutes, colon_seconds = match.groups()
    h = int(short or hours)
    m, s = int(minutes or colon_minutes or 0), int(seconds or colon_seconds or 0)
    if h > 18 or m > 59 or s > 59 or (h == 18 and (m or s)):
        return None
    total = (h * 60 + m) * 60 + s
    return -total if sign == "-" else total


def _days(year: int, month: int, day: int) -> int | None:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year), None if invalid."""
    if not 1 <= month <= 12:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    lengths = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not 1 <= day <= lengths[month - 1]:
        return None
    shifted = year - (month <= 2)
    era = shifted // 400
    of_era = shifted - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_cycle = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_cycle - 719468


def java_float_text(value: float, single: bool) -> str:
    """Java's ``Double.toString``/``Float.toString``: plain between 10^-3 and 10^7, else
    ``d.dddE±n``; always a digit after the point."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits_text = float32_text(value) if single else repr(value)
    exact = Decimal(digits_text)
    sign = "-" if exact < 0 else ""
    _, digits, exponent = exact.as_tuple()
    assert isinstance(exponent, int)
    figures = "".join(str(d) for d in digits).rstrip("0") or "0"
    magnitude = len(digits) + exponent - 1  # the power of ten of the first digit
    if len(figures) == 1:  # Java prints two digits, the closest to the exact value
        two = Decimal(value).copy_abs().scaleb(-magnitude).quantize(Decimal("0.1"))
        if two < 10:
            figures = str(two).replace(".", "").rstrip("0") or "0"
    if 1e-3 <= abs(value) < 1e7:
        if magnitude >= 0:
            whole = figures[: magnitude + 1].ljust(magnitude + 1, "0")
            fraction = figures[magnitude + 1 :] or "0"
        else:
            whole, fraction = "0", "0" * (-magnitude - 1) + figures
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{figures[0]}.{figures[1:] or '0'}E{magnitude}"


def timestamp_text(value: dt.datetime) -> str:
    """Spark's text of a timestamp in UTC: ``yyyy-MM-dd HH:mm:ss`` and the fraction of a
    second without trailing zeros."""
    moment = value.astimezone(dt.UTC) if value.tzinfo else value
    text = f"{moment.year:04d}-{moment:%m-%d %H:%M:%S}"
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text


__all__ = [
    "cast_function",
    "decimal_arithmetic",
    "decimal_to_float32",
    "extreme",
    "float32_text",
    "floor_ceil",
    "initcap",
    "java_float_text",
    "locate",
    "pad",
    "remainder",
    "round_half_up",
    "substring",
    "text_to_boolean",
    "text_to_date",
    "text_to_decimal",
    "text_to_floating",
    "text_to_integer",
    "text_to_timestamp",
    "timestamp_text",
]
