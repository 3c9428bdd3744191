"""Reading a load's batch into Arrow without Spark: CSV (with header), JSON lines, Parquet, ORC
and Avro, giving the columns and values Spark's readers give with the options
:mod:`lakectl.spark.sources` reads with.

- **CSV**: one record per line (lines end at ``\\n``, ``\\r\\n`` or ``\\r``; blank lines are
  skipped), RFC 4180 quotes (a quote inside a quoted field is doubled), a UTF-8 byte order mark
  dropped. The first line of each file is its header; the files of a folder must have the same
  one. An empty field (quoted or not) is NULL; other text is kept as it is (spaces too). A
  record with more or fewer fields than the header is an error naming its file and line.
  Columns are text unless ``infer`` (a load creating its table): then each column gets the
  type Spark's ``inferSchema`` gives it; a value whose type Spark's inference might judge
  otherwise than this module is refused (``--engine spark`` or ``--schema`` is the way out).
- **JSON lines**: one object per line (a line holding an array of objects gives a row for
  each), typed as Spark infers them: integers ``bigint`` (a larger one ``decimal(p,0)``), other
  numbers ``double``, ``boolean``, text ``string``; a field with values of different kinds is
  ``string`` (each value's JSON text, as written); columns in name order. Objects and arrays as values are
  refused: a table's columns are flat.
- **Parquet and ORC**: pyarrow's reader, the columns typed as Spark's readers type them.
- **Avro**: fastavro (:mod:`lakectl.storage.avro_files`), as the Spark engine reads it.

CSV (unless its types are inferred), Parquet and ORC are read a part at a time
(:func:`read_source_batches`); JSON lines, Avro and a CSV batch whose types are inferred are
read into memory whole.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakectl.errors import ArrowEngineLimit, BadInputError, SourceNotFoundError, UsageError
from lakectl.storage.fs import Storage, storage_for
from lakectl.storage.source_files import FORMATS, MalformedLine, malformed_csv_error
from lakectl.table.batch_checks import empty_batch_error, parse_error
from lakectl.table.schema import Column, Schema

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLANKS = "".join(chr(c) for c in range(33))  # what Java's String.trim removes
_INTEGER = re.compile(r"[+-]?[0-9]+")
# Java's Double.parseDouble: surrounding characters up to U+0020 ignored, digits with an optional
# point and exponent (or NaN, Infinity, a hexadecimal form), an optional type suffix.
_JAVA_DOUBLE = re.compile(
    r"[\x00-\x20]*[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)[\x00-\x20]*"
)
_ISO_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
# Spark's CSV reader's own texts for NaN and the infinities (nanValue, positiveInf, negativeInf).
_CSV_SPECIAL_DOUBLES = ("NaN", "Inf", "-Inf")
_CSV_SHORT_INFINITIES = ("Inf", "-Inf")  # read as "Infinity" and "-Infinity"
# A batch is read CHUNK_ROWS rows at a time where its format allows, files _READ_BYTES at a time.
CHUNK_ROWS = 131_072
_READ_BYTES = 8 << 20
_PARQUET_DECODE_ROWS = 32_768
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_MAX_PRECISION = 38


def read_source_arrow(
    source: str, fmt: str, infer: bool, storage_options: dict[str, Any] | None = None
) -> pa.Table:
    """Read the batch at ``source`` (a file or a folder of files) in ``fmt``. With ``infer``
    False, CSV columns stay text (cast and checked later, :mod:`lakectl.arrow.batch`).

    Raises :class:`SourceNotFoundError`, :class:`SourceParseError` (naming the file and line
    where one is at fault), :class:`BadInputError` (a batch without columns, a malformed CSV
    record) and :class:`UsageError` (what only the Spark engine reads as Spark does).
    """
    import pyarrow as pa

    read = read_source_batches(source, fmt, infer, storage_options)
    return pa.Table.from_batches(
        [b for t in read.tables for b in t.to_batches()], schema=read.schema
    )


@dataclass(frozen=True)
class SourceBatches:
    """A batch read part by part: its columns (``schema``, known before any part is read) and
    its rows, a part at a time (``tables``, read as they are iterated, once)."""

    schema: pa.Schema
    tables: Iterator[pa.Table]


def read_source_batches(
    source: str, fmt: str, infer: bool, storage_options: dict[str, Any] | None = None
) -> SourceBatches:
    """:func:`read_source_arrow`'s batch, read a part at a time: CSV (when its types are not
    inferred) :data:`CHUNK_ROWS` lines at a time, Parquet by record batches and ORC by
    stripes; JSON lines, Avro and a CSV batch whose types are inferred (every value decides
    a column's type) in one part. Errors of a later part are raised as it is read."""
    storage, path = storage_for(source, storage_options)
    if not storage.exists(path):
        raise SourceNotFoundError(f"source {source} does not exist")
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if fmt == "avro":
        read = _whole(_read_avro(storage, path))
    else:
        files = _files(storage, path, source)
        if fmt == "csv" and infer:
            read = _whole(_inferred_csv(_read_csv(storage, files, source), source))
        elif fmt == "csv":
            read = _read_csv(storage, files, source)
        elif fmt == "json":
            read = _whole(_read_json(storage, files, source))
        else:
            read = _read_columnar(storage, files, fmt, source)
    if not read.schema.names:
        raise empty_batch_error(source, columns=False)
    return read


def _whole(table: pa.Table) -> SourceBatches:
    return SourceBatches(table.schema, iter([table]))


def source_schema(raw: pa.Table) -> Schema:
    """The columns of a batch :func:`read_source_arrow` read, with their Spark SQL types."""
    return Schema(tuple(Column(f.name, spark_type_of(f.type)) for f in raw.schema))


def spark_type_of(arrow: pa.DataType) -> str:
    """The Spark SQL type name of an Arrow type :func:`read_source_arrow` returns."""
    import pyarrow as pa

    names = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.string(): "string",
        pa.binary(): "binary",
        pa.date32(): "date",
        pa.timestamp("us", tz="UTC"): "timestamp",
        pa.timestamp("us"): "timestamp_ntz",
    }
    if arrow in names:
        return names[arrow]
    if pa.types.is_decimal(arrow):
        return f"decimal({arrow.precision},{arrow.scale})"
    raise ArrowEngineLimit(
        f"Arrow type {arrow} has no Spark SQL type here", hint="use --engine spark"
    )


# --- files --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    path: str
    shown: str  # as the user named it: the source, or source/name in a folder


def _files(storage: Storage, path: str, source: str) -> list[_File]:
    """The files Spark reads for ``path``: itself, or the files directly in the folder (names
    starting with ``_`` or ``.`` skipped), in name order."""
    if not storage.isdir(path):
        return [_File(path, source)]
    entries = [
        e for e in storage.list_entries(path, links=True) if not e["name"].startswith(("_", "."))
    ]
    nested = sorted(e["name"] for e in entries if e["type"] == "directory")
    if nested:
        raise ArrowEngineLimit(
            f"{source} has sub-directories ({', '.join(nested[:3])}); the Arrow engine reads "
            "only the files directly in a source directory",
            hint="load each partition directory on its own, or use --engine spark",
        )
    found = sorted((e["name"], e["path"]) for e in entries if e["type"] == "file")
    return [_File(full, posixpath.join(source, name)) for name, full in found]


def _text(storage: Storage, file: _File) -> str:
    data = storage.fs.cat_file(file.path)
    text = data.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines holding more than blanks (Spark skips the others)."""
    return _split_lines([text])


def _file_lines(storage: Storage, file: _File) -> Iterator[tuple[int, str]]:
    """:func:`_lines` of a file read :data:`_READ_BYTES` at a time (a UTF-8 byte order mark
    dropped)."""
    import codecs

    def texts() -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        first = True
        with storage.fs.open(file.path, "rb") as handle:
            while True:
                data = handle.read(_READ_BYTES)
                text = decoder.decode(data, final=not data)
                if first and text:
                    text, first = (text[1:] if text.startswith("\ufeff") else text), False
                if text:
                    yield text
                if not data:
                    return

    return _split_lines(texts())


def _split_lines(texts: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of the text ``texts`` give in parts, numbered: a line may span
    parts, and a ``\r`` ending one part may start a ``\r\n`` ending the next."""
    number = 0
    rest = ""
    for part in texts:
        text = rest + part
        held = text.endswith("\r")
        lines = _LINE_BREAK.split(text[:-1] if held else text)
        rest = lines.pop() + ("\r" if held else "")
        for line in lines:
            number += 1
            if line.strip(_BLANKS):
                yield number, line
    for line in _LINE_BREAK.split(rest):
        number += 1
        if line.strip(_BLANKS):
            yield number, line


# --- CSV ----------------------------------------------------------------------------------------


def _read_csv(storage: Storage, files: list[_File], source: str) -> SourceBatches:
    """The CSV files' records as text columns, :data:`CHUNK_ROWS` lines at a time; the first
    file with a line gives the header (the columns), the others' headers are checked as they
    are reached."""
    import pyarrow as pa

    for at, file in enumerate(files):
        lines = _file_lines(storage, file)
        first = next(lines, None)
        if first is None:
            continue
        header = _csv_header(csv_fields(first[1]), file, source)
        schema = pa.schema([(n, pa.string()) for n in header])
        tables = _csv_tables(storage, (file, lines), files[at + 1 :], header, source)
        return SourceBatches(schema, tables)
    return SourceBatches(pa.schema([]), iter([]))


def _csv_tables(
    storage: Storage,
    first: tuple[_File, Iterator[tuple[int, str]]],
    rest: list[_File],
    header: list[str],
    source: str,
) -> Iterator[pa.Table]:
    import pyarrow as pa

    width = len(header)
    columns: list[list[str | None]] = [[] for _ in header]

    def table() -> pa.Table:
        return pa.table({n: pa.array(v, pa.string()) for n, v in zip(header, columns, strict=True)})

    def records() -> Iterator[tuple[_File, int, str]]:
        file, lines = first
        for number, line in lines:
            yield file, number, line
        for file in rest:
            lines = _file_lines(storage, file)
            top = next(lines, None)
            if top is None:
                continue
            names = csv_fields(top[1])
            if [n.lower() for n in names] != [n.lower() for n in header]:
                raise parse_error(
                    source,
                    f"CSV header of {file.shown} ({', '.join(names)}) differs from the first "
                    f"file's ({', '.join(header)})",
                )
            for number, line in lines:
                yield file, number, line

    count = 0
    for file, number, line in records():
        fields = csv_fields(line)
        if len(fields) != width:
            raise malformed_csv_error(MalformedLine(file.shown, number, len(fields), width))
        for values, field in zip(columns, fields, strict=True):
            values.append(field or None)
        count += 1
        if count == CHUNK_ROWS:
            yield table()
            columns = [[] for _ in header]
            count = 0
    if count:
        yield table()


def csv_fields(line: str) -> list[str]:
    """The fields of one CSV line as Spark's CSV parser (univocity, with the options lakectl
    reads with) splits them: a field starting with a quote runs to the closing quote (``""``
    inside is a quote; blanks after it are skipped; a line ending inside it ends it); a field
    whose closing quote is followed by other text is its raw text up to the next comma; any
    other field is its text as it is."""
    if '"' not in line:
        return line.split(",")
    fields = []
    at, size = 0, len(line)
    while True:
        if at < size and line[at] == '"':
            value, at = _quoted_field(line, at)
        else:
            end = line.find(",", at)
            end = size if end < 0 else end
            value, at = line[at:end], end
        fields.append(value)
        if at >= size:
            return fields
        at += 1  # the comma


def _quoted_field(line: str, start: int) -> tuple[str, int]:
    """The field starting with the quote at ``start`` and the position after it."""
    size = len(line)
    out = []
    at = start + 1
    while at < size:
        char = line[at]
        if char != '"':
            out.append(char)
            at += 1
        elif at + 1 < size and line[at + 1] == '"':
            out.append('"')
            at += 2
        else:
            after = at + 1
            while after < size and line[after] <= " ":
                after += 1
            if after >= size or line[after] == ",":
                return "".join(out), after
            end = line.find(",", after)
            end = size if end < 0 else end
            return line[start:end], end
    return "".join(out), size


def _csv_header(names: list[str], file: _File, source: str) -> list[str]:
    """The header's names; Spark refuses (on a header it checks) empty and repeated names."""
    seen: dict[str, str] = {}
    for name in names:
        if not name:
            raise parse_error(source, f"CSV header of {file.shown} has an empty column name")
        if name.lower() in seen:
            raise parse_error(
                source,
                f"CSV header of {file.shown} names a column twice ({seen[name.lower()]}, {name})",
            )
        seen[name.lower()] = name
    return names


def _inferred_csv(read: SourceBatches, source: str) -> pa.Table:
    """The text columns typed as Spark's CSV ``inferSchema`` types them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from lakectl.arrow.casts import spark_cast

    whole = pa.Table.from_batches([b for t in read.tables for b in t.to_batches()], read.schema)
    arrays = {}
    for name in read.schema.names:
        text = whole.column(name).combine_chunks()
        type_name = _csv_column_type(text, name, source)
        if type_name == "double":  # Spark's CSV reader reads "Inf" and "-Inf" too
            for short in _CSV_SHORT_INFINITIES:
                text = pc.if_else(pc.equal(text, short), short + "inity", text)
        arrays[name] = spark_cast(text, "string", type_name, f"column {name!r}")
    return pa.table(arrays) if arrays else pa.table({})


# Plain texts typed without looking at each value: (pattern, the type of a text matching it,
# the type its cast must give a value for it to have that type).
_PLAIN_TEXTS = (
    (r"^-?[0-9]{1,9}$", "int", None),
    (r"^-?[0-9]{1,15}\.[0-9]{1,15}$", "double", None),
    (r"^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}$", "date", "date"),
    (r"^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$", "timestamp", "timestamp"),
)


def _csv_column_type(text: pa.Array, column: str, source: str) -> str:
    """The type Spark's CSV inference gives a column of ``text``: the plain forms above are
    recognised for the whole column at once, every other distinct text one by one."""
    import pyarrow.compute as pc

    from lakectl.arrow.casts import spark_cast

    type_name: str | None = None
    rest = text.drop_null()
    for pattern, found, check in _PLAIN_TEXTS:
        if not len(rest):
            break
        plain = pc.match_substring_regex(rest, pattern)
        if not pc.any(plain).as_py():
            continue
        matching = rest.filter(plain)
        if check is not None and spark_cast(matching, "string", check, column).null_count:
            continue  # an invalid date or time: typed one by one below
        type_name = _wider_csv(type_name, found)
        rest = rest.filter(pc.invert(plain))
    for value in pc.unique(rest).to_pylist():
        type_name = _wider_csv(type_name, _csv_value_type(value, column, source))
    return type_name or "string"


def _csv_value_type(text: str, column: str, source: str) -> str:
    """The type Spark's CSV inference gives one non-empty value."""
    from lakectl.expr.spark_values import text_to_timestamp

    if _INTEGER.fullmatch(text):
        number = int(text)
        if _INT_RANGE[0] <= number <= _INT_RANGE[1]:
            return "int"
        if _LONG_RANGE[0] <= number <= _LONG_RANGE[1]:
            return "bigint"
        digits = len(str(abs(number)))
        return f"decimal({digits},0)" if digits <= _MAX_PRECISION else "double"
    if any(ch.isdigit() and not ch.isascii() for ch in text):
        raise _cannot_infer(text, column, source)  # Java reads digits of every script
    if _JAVA_DOUBLE.fullmatch(text) or text in _CSV_SPECIAL_DOUBLES:
        return "double"
    date = _ISO_DATE.fullmatch(text)
    if date is not None:
        if int(date.group(1)) < 1000:
            raise _cannot_infer(text, column, source)
        if _valid_date(*(int(g) for g in date.groups())):
            return "date"
    if text_to_timestamp(text) is not None:
        return "timestamp"
    if text.lower() in ("true", "false"):
        return "boolean"
    return "string"


def _valid_date(year: int, month: int, day: int) -> bool:
    import datetime as dt

    try:
        dt.date(year, month, day)
    except ValueError:
        return False
    return True


def _wider_csv(known: str | None, found: str) -> str:
    """Spark's CSV inference's common type of two value types."""
    if known is None or known == found:
        return found
    return _common_number(known, found) or (
        "timestamp" if {known, found} == {"date", "timestamp"} else "string"
    )


def _common_number(a: str, b: str) -> str | None:
    """The common type of two inferred number types (integers widen to ``decimal(p,0)``, a
    double takes every other), None when one is not a number."""
    widths = {"int": 10, "bigint": 20}
    kinds = []
    for t in (a, b):
        if t in widths:
            kinds.append(("integer", widths[t]))
        elif t.startswith("decimal("):
            kinds.append(("decimal", int(t[len("decimal(") :].split(",")[0])))
        elif t == "double":
            kinds.append(("double", 0))
        else:
            return None
    if any(k == "double" for k, _ in kinds):
        return "double"
    if all(k == "integer" for k, _ in kinds):
        return "bigint"
    return f"decimal({max(p for _, p in kinds)},0)"


def _cannot_infer(text: str, column: str, source: str) -> UsageError:
    return UsageError(
        f"{source}: column {column!r}: the Arrow engine cannot tell which type Spark infers "
        f"for {text!r}",
        hint="use --engine spark, or give the table's columns with --schema",
    )


# --- JSON lines ---------------------------------------------------------------------------------


class _Float(str):
    """A JSON number with a fraction or exponent, as written."""


class _Integer(str):
    """A JSON integer, as written."""


def _read_json(storage: Storage, files: list[_File], source: str) -> pa.Table:
    import pyarrow as pa

    from lakectl.arrow.casts import spark_cast

    rows: list[dict[str, Any]] = []
    for file in files:
        for number, line in _lines(_text(storage, file)):
            rows.extend(_json_records(line, file, number, source))
    kinds: dict[str, str | None] = {}
    for row in rows:
        for key, value in row.items():
            kinds[key] = _wider_json(kinds.get(key), _json_type(value, key, source))
    lowered: dict[str, str] = {}
    for key in kinds:
        if key.lower() in lowered:
            raise parse_error(
                source, f"JSON fields {lowered[key.lower()]!r} and {key!r} differ only in case"
            )
        lowered[key.lower()] = key
    arrays = {}
    for key in sorted(kinds, key=lambda k: k.encode("utf-16-be")):
        type_name = kinds[key] or "string"
        values = [row.get(key) for row in rows]
        if type_name == "string":
            text = [None if v is None else _json_text(v) for v in values]
            arrays[key] = pa.array(text, pa.string())
        elif type_name == "boolean":
            arrays[key] = pa.array(values, pa.bool_())
        else:
            text = [None if v is None else str(v) for v in values]
            arrays[key] = spark_cast(pa.array(text, pa.string()), "string", type_name, key)
    return pa.table(arrays)


def _json_records(line: str, file: _File, number: int, source: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(line, parse_float=_Float, parse_int=_Integer, parse_constant=_Float)
    except ValueError as exc:
        raise parse_error(source, f"{file.shown}, line {number}: malformed JSON ({exc})") from exc
    records = value if isinstance(value, list) else [value]
    if not all(isinstance(r, dict) for r in records):
        raise parse_error(
            source, f"{file.shown}, line {number}: a JSON record must be an object, not {line!r}"
        )
    return records


def _json_type(value: object, key: str, source: str) -> str | None:
    """The type Spark's JSON inference gives one value (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, _Float):
        return "double"
    if isinstance(value, _Integer):
        number = int(value)
        if _LONG_RANGE[0] <= number <= _LONG_RANGE[1]:
            return "bigint"
        digits = len(str(abs(number)))
        return f"decimal({digits},0)" if digits <= _MAX_PRECISION else "double"
    if isinstance(value, str):
        return "string"
    raise ArrowEngineLimit(
        f"{source}: field {key!r} holds {'an object' if isinstance(value, dict) else 'an array'}"
        ": the Arrow engine loads flat JSON records only",
        hint="use --engine spark",
    )


def _wider_json(known: str | None, found: str | None) -> str | None:
    if known is None:
        return found
    if found is None or known == found:
        return known
    return _common_number(known, found) or "string"


def _json_text(value: object) -> str:
    """A JSON value's text in a ``string`` column: as written (Spark copies the token)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- Parquet, ORC, Avro -------------------------------------------------------------------------


def _read_columnar(storage: Storage, files: list[_File], fmt: str, source: str) -> SourceBatches:
    """Parquet or ORC files a record batch (a stripe) at a time, typed as Spark's readers type
    them; the first file's columns are the batch's (the others' matched to them by name)."""
    if not files:
        raise BadInputError(f"{source}: no files to read")
    first, tables = _columnar_file(storage, files[0], fmt)

    def conformed() -> Iterator[pa.Table]:
        yield from tables
        for file in files[1:]:
            _, more = _columnar_file(storage, file, fmt)
            for table in more:
                yield _conform(table, first)

    return SourceBatches(first, conformed())


def _columnar_file(storage: Storage, file: _File, fmt: str) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """One Parquet or ORC file's columns (as Spark types them) and its rows, a record batch
    (Parquet) or a stripe (ORC) at a time."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    from lakectl.arrow.orc_io import read_stripe

    def unreadable(exc: Exception) -> Exception:
        if isinstance(exc, FileNotFoundError):
            return exc
        return BadInputError(f"{file.shown}: not a readable {fmt} file: {exc}")

    try:
        if fmt == "parquet":
            handle = storage.fs.open(file.path, "rb")
            parquet = pq.ParquetFile(handle)
            utc = {
                parquet.schema.column(i).path.split(".")[0]
                for i in range(len(parquet.schema))
                if parquet.schema.column(i).physical_type == "INT96"
            }
            schema = parquet.schema_arrow
        else:
            buffer = pa.BufferReader(storage.fs.cat_file(file.path))
            reader = orc.ORCFile(buffer)
            schema = reader.schema
            utc = set(schema.names)  # ORC's timestamps are instants to Spark
    except (OSError, pa.ArrowInvalid) as exc:
        raise unreadable(exc) from exc
    typed = _spark_typed(schema.empty_table(), utc, file.shown).schema

    def tables() -> Iterator[pa.Table]:
        try:
            if fmt == "parquet":
                with handle:
                    for part in _parquet_parts(parquet):
                        yield _spark_typed(part, utc, file.shown)
            else:
                for stripe in range(reader.nstripes):
                    part = pa.Table.from_batches([read_stripe(reader, buffer, stripe)])
                    yield _spark_typed(part, utc, file.shown)
        except (OSError, pa.ArrowInvalid) as exc:
            raise unreadable(exc) from exc

    return typed, tables()


def _parquet_parts(parquet: pq.ParquetFile) -> Iterator[pa.Table]:
    """A Parquet file's rows in parts of about :data:`CHUNK_ROWS` rows, each decoded a few pages
    at a time (:data:`_PARQUET_DECODE_ROWS` rows, on this thread: pyarrow's decoding buffers
    then stay small next to a part, whatever the size of the file's row groups)."""
    import pyarrow as pa

    held: list[pa.RecordBatch] = []
    rows = 0
    size = min(_PARQUET_DECODE_ROWS, CHUNK_ROWS)
    for batch in parquet.iter_batches(batch_size=size, use_threads=False):
        held.append(batch)
        rows += batch.num_rows
        if rows >= CHUNK_ROWS:
            yield pa.Table.from_batches(held)
            held, rows = [], 0
    if held:
        yield pa.Table.from_batches(held)


def _spark_typed(table: pa.Table, utc: set[str], shown: str) -> pa.Table:
    """``table``'s columns as the Arrow types of the Spark types Spark's reader gives them;
    timestamps without a zone named in ``utc`` are instants (Parquet INT96, ORC)."""
    import pyarrow as pa

    arrays = []
    for field, column in zip(table.schema, table.columns, strict=True):
        kind = field.type
        if pa.types.is_dictionary(kind):
            column, kind = column.cast(kind.value_type), kind.value_type
        if pa.types.is_null(kind):  # an all-NULL column written without a type: NULL as any type
            column, kind = pa.nulls(len(column), pa.string()), pa.string()
        target = _spark_arrow_type(kind, field.name in utc)
        if target is None:
            raise ArrowEngineLimit(
                f"{shown}: column {field.name!r} is of type {kind}: the Arrow engine loads "
                "flat columns of Spark's types only",
                hint="use --engine spark",
            )
        arrays.append(column if kind == target else column.cast(target, safe=False))
    return pa.table(arrays, names=table.schema.names)


def _spark_arrow_type(kind: pa.DataType, utc: bool) -> pa.DataType | None:
    import pyarrow as pa

    widened = {
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.decimal128(20, 0),
        pa.large_string(): pa.string(),
        pa.large_binary(): pa.binary(),
        pa.date64(): pa.date32(),
    }
    if kind in widened:
        return widened[kind]
    if pa.types.is_timestamp(kind):
        zoned = kind.tz is not None or utc
        return pa.timestamp("us", tz="UTC") if zoned else pa.timestamp("us")
    if pa.types.is_decimal(kind) and kind.precision <= _MAX_PRECISION:
        return pa.decimal128(kind.precision, kind.scale)
    try:
        spark_type_of(kind)
    except UsageError:
        return None
    return kind


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns (matched by name ignoring case; missing ones NULL)."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    by_name = {name.lower(): i for i, name in enumerate(table.schema.names)}
    arrays = []
    for field in schema:
        index = by_name.get(field.name.lower())
        column = pa.nulls(table.num_rows, field.type) if index is None else table.column(index)
        arrays.append(column if column.type == field.type else column.cast(field.type))
    return pa.table(arrays, schema=schema)


def _read_avro(storage: Storage, path: str) -> pa.Table:
    import pyarrow as pa

    from lakectl.arrow.types import arrow_type
    from lakectl.storage.avro_files import read_avro

    avro = read_avro(storage, path)
    schema = pa.schema([(name, arrow_type(type_)) for name, type_ in avro.columns])
    try:
        return pa.Table.from_pylist(avro.records, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise BadInputError(
            f"{storage.url(path)}: Avro values do not fit their types: {exc}"
        ) from exc


__all__ = ["csv_fields", "read_source_arrow", "source_schema", "spark_type_of"]
