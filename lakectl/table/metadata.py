"""Table metadata as a frozen value: schema, key, partitioning, bucketing, properties."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lakectl.errors import UsageError
from lakectl.table.json_input import (
    REQUIRED,
    as_str,
    field_dict,
    field_int,
    field_list,
    field_str_dict,
)
from lakectl.table.schema import Schema

FORMAT_VERSION = 1

# Thresholds and knobs users can change with `lakectl set`; values are strings, as in Hive.
DEFAULT_PROPERTIES: dict[str, str] = {
    "compactor.delta.num.threshold": "10",
    "compactor.delta.pct.threshold": "0.1",
    "compactor.aborted.threshold": "1000",
    "clean.retain": "7d",
    "clean.retain.minimum": "1h",
    "write.target-file-size": "128MB",
    "orc.compress": "SNAPPY",
    "updates.max.file.size": "1MB",
    "updates.max.statements": "2000",
    "updates.max.expression.nodes": "50000",
    "updates.max.expression.depth": "100",
    "updates.max.string.length": "8192",
    "updates.max.string.growth": "16",
    "updates.max.like.wildcards": "3",
    "log.checkpoint.interval": "100",
    "engine.auto.max-bytes": "256MB",
}


@dataclass(frozen=True)
class TableMetadata:
    """Everything about a table that is not data. Partition columns are part of ``schema``."""

    schema: Schema
    primary_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    buckets: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for col in (*self.primary_key, *self.partition_by):
            if col not in self.schema:
                raise UsageError(
                    f"column {col!r} is not in the schema (columns: {', '.join(self.schema.names)})"
                )
        if set(c.lower() for c in self.primary_key) & set(c.lower() for c in self.partition_by):
            # Allowed in Hive, but a key that is also the partition would put one row per dir.
            pass
        if len(self.partition_by) == len(self.schema.columns):
            raise UsageError("a table needs at least one column that is not a partition column")
        if self.buckets < 0 or self.buckets > 4096:
            raise UsageError("--buckets must be between 0 (no bucketing) and 4096")

    @property
    def data_schema(self) -> Schema:
        """The columns stored inside the files (all but the partition columns)."""
        return self.schema.without(list(self.partition_by))

    @property
    def data_key(self) -> str | None:
        """The first key column stored inside the files (not a partition column): never null
        in a stored row, so it tells a row from a delete event's empty one. None without one."""
        return next((k for k in self.primary_key if k not in self.partition_by), None)

    @property
    def has_key(self) -> bool:
        return bool(self.primary_key)

    def may_be_absent(self, name: str) -> bool:
        """May a batch (a loaded file, a micro-batch's file) lack the column ``name``? Yes when
        the column has a default (the rows get it), or is nullable and neither a key nor a
        partition column (the rows get NULL); a key, partition or NOT NULL column is required."""
        column = self.schema.find(name)
        if column is None:
            return False
        if column.default is not None:
            return True
        lowered = name.lower()
        structural = {c.lower() for c in (*self.primary_key, *self.partition_by)}
        return column.nullable and lowered not in structural

    def property(self, key: str) -> str:
        return self.properties.get(key, DEFAULT_PROPERTIES.get(key, ""))

    def effective_properties(self) -> dict[str, str]:
        return {**DEFAULT_PROPERTIES, **self.properties}

    def with_properties(self, updates: dict[str, str | None]) -> TableMetadata:
        props = dict(self.properties)
        for key, value in updates.items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        return replace(self, properties=props)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "schema": self.schema.to_json(),
            "primary_key": list(self.primary_key),
            "partition_by": list(self.partition_by),
            "buckets": self.buckets,
            "properties": dict(self.properties),
            "defaults": dict(self.defaults),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> TableMetadata:
        """The metadata a log record holds; ``ValueError`` naming a field of the wrong type, an
        unknown column or an out-of-range value (the record is table content, not trusted)."""
        schema = field_list(data, "schema", _column_json, REQUIRED)
        try:
            return TableMetadata(
                schema=Schema.from_json(schema),
                primary_key=tuple(field_list(data, "primary_key", as_str)),
                partition_by=tuple(field_list(data, "partition_by", as_str)),
                buckets=field_int(data, "buckets", 0, low=0, high=4096),
                properties=field_str_dict(data, "properties", as_str, {}),
                defaults=field_dict(data, "defaults", {}),
            )
        except UsageError as exc:
            raise ValueError(f"metadata: {exc.message}") from exc


def _column_json(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    return value
