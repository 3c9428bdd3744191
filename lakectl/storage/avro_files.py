"""Avro load sources decoded with fastavro (on this machine, through the source's fsspec
filesystem): flat records of primitive types, one column per field, typed as Spark SQL types."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from lakectl.errors import BadInputError
from lakectl.storage.fs import Storage


@dataclass(frozen=True)
class AvroRecords:
    """The records of an Avro source and its columns (name, Spark SQL type), in field order."""

    columns: list[tuple[str, str]]
    records: list[dict[str, Any]]

    @property
    def ddl(self) -> str:
        """The columns as a Spark DDL schema."""
        return ", ".join(f"`{name}` {type_}" for name, type_ in self.columns)


def read_avro(storage: Storage, path: str) -> AvroRecords:
    """Decode the Avro file at ``path`` (or the ``.avro`` files of the directory); the first
    file's writer schema names the columns."""
    import fastavro

    files = [path]
    if storage.isdir(path):
        entries = storage.list_entries(path, links=True)
        files = [e["path"] for e in entries if e["name"].endswith(".avro")]
    records: list[dict] = []
    schema: dict | None = None
    for file in files:
        try:
            with storage.fs.open(file, "rb") as handle:
                reader = fastavro.reader(handle)
                written = reader.writer_schema
                if not isinstance(written, dict) or written.get("type") != "record":
                    raise BadInputError(
                        f"{storage.url(file)}: the Avro schema's top level must be a record "
                        "(one column per field)"
                    )
                schema = schema or written
                records.extend(cast(Iterator[dict], reader))  # records: checked above
        except (ValueError, EOFError, fastavro.read.SchemaResolutionError) as exc:  # type: ignore[attr-defined]
            raise BadInputError(f"{storage.url(file)}: not a readable Avro file: {exc}") from exc
    if schema is None:
        raise BadInputError(f"{storage.url(path)}: no Avro files found")
    fields = schema.get("fields", [])
    columns = [(f["name"], avro_type(f["type"])) for f in fields]
    names = [name for name, _ in columns]
    return AvroRecords(columns, [{n: r.get(n) for n in names} for r in records])


def avro_type(avro: object) -> str:
    """The Spark SQL type of an Avro field's type (a union with null is its other type)."""
    if isinstance(avro, list):
        non_null = [t for t in avro if t != "null"]
        return avro_type(non_null[0]) if len(non_null) == 1 else "string"
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "date":
            return "date"
        if logical in ("timestamp-millis", "timestamp-micros"):
            return "timestamp"
        if logical == "decimal":
            return f"decimal({avro.get('precision', 10)},{avro.get('scale', 0)})"
        return avro_type(avro.get("type"))
    mapping = {
        "int": "int",
        "long": "bigint",
        "float": "float",
        "double": "double",
        "boolean": "boolean",
        "string": "string",
        "bytes": "binary",
        "enum": "string",
    }
    if isinstance(avro, str) and avro in mapping:
        return mapping[avro]
    raise BadInputError(
        f"Avro type {avro!r} is not supported (flat records of primitive types only)"
    )
