"""``lakectl create``: a new, empty table (log entry 0 holds its metadata)."""

from __future__ import annotations

from dataclasses import dataclass

from lakectl.errors import TableExistsError, UsageError
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import Schema, parse_schema
from lakectl.table.store import TableStore


@dataclass(frozen=True)
class CreateResult:
    table: str
    url: str
    metadata: TableMetadata

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "url": self.url, "metadata": self.metadata.to_json()}


def split_columns(text: str | None) -> tuple[str, ...]:
    """``"a, b"`` -> ("a", "b")."""
    if not text:
        return ()
    return tuple(c.strip() for c in text.split(",") if c.strip())


def canonical_columns(schema: Schema, names: tuple[str, ...], what: str) -> tuple[str, ...]:
    out = []
    for name in names:
        col = schema.find(name)
        if col is None:
            raise UsageError(
                f"{what} column {name!r} is not in the schema ({', '.join(schema.names)})"
            )
        out.append(col.name)
    return tuple(out)


def build_metadata(
    schema: Schema,
    primary_key: tuple[str, ...] = (),
    partition_by: tuple[str, ...] = (),
    buckets: int = 0,
    properties: dict[str, str] | None = None,
    defaults: dict[str, object] | None = None,
) -> TableMetadata:
    pk = canonical_columns(schema, primary_key, "primary key")
    parts = canonical_columns(schema, partition_by, "partition")
    if buckets and not pk:
        raise UsageError("--buckets needs a --primary-key to bucket by")
    # Partition columns go last, as Hive lays them out.
    ordered = Schema(
        tuple(c for c in schema.columns if c.name not in parts) + tuple(schema[p] for p in parts)
    )
    return TableMetadata(ordered, pk, parts, buckets, dict(properties or {}), dict(defaults or {}))


def create_table(
    store: TableStore,
    schema_text: str,
    primary_key: tuple[str, ...] = (),
    partition_by: tuple[str, ...] = (),
    buckets: int = 0,
    defaults: dict[str, object] | None = None,
) -> CreateResult:
    """Create a table from a schema string."""
    if store.has_log():
        raise TableExistsError(f"table {store.name or store.url} already exists ({store.url})")
    store.require_creatable()
    if store.exists() and store.storage.list_names(store.root):
        raise TableExistsError(
            f"{store.url} exists and is not empty: lakectl will not create a table over other data"
        )
    meta = build_metadata(
        parse_schema(schema_text), primary_key, partition_by, buckets, None, defaults
    )
    store.create(meta)
    return CreateResult(store.name, store.url, meta)
