"""What a read asks for: the version or times, the filter, the columns, the order and where the
rows go; checked against the table's schema before anything is read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakectl.errors import BadInputError, UnknownColumnError, UsageError
from lakectl.expr import bind_where
from lakectl.table.schema import Schema

OUT_FORMATS = ("parquet", "orc", "csv", "json")


@dataclass(frozen=True)
class SnapshotRequest:
    """The arguments of a read (``lakectl snapshot``, ``Table.to_arrow``, ...)."""

    version: int | None = None
    as_of: int | None = None
    known_at: int | None = None
    where: str | None = None
    columns: tuple[str, ...] = ()
    limit: int | None = None
    out: str | None = None
    out_format: str = "parquet"
    valid_write_ids: str | None = None
    raw: bool = False
    # ``--order-by``: column names, each optionally followed by `` desc`` (or `` asc``).
    order_by: tuple[str, ...] = ()
    # Without ``order_by``, rows returned (not written to ``out``) in primary-key order when the
    # table has a key.
    key_order: bool = False

    def row_order(self, primary_key: Sequence[str]) -> tuple[str, ...]:
        """The sort the read applies: ``order_by``, else the key (see ``key_order``), else
        none (the order of the table's files)."""
        if self.order_by:
            return self.order_by
        return tuple(primary_key) if self.key_order and not self.out else ()

    def __post_init__(self) -> None:
        # A negative valid time (``--as-of -1``) asks for the raw data, without statements.
        if self.as_of is not None and self.as_of < 0:
            object.__setattr__(self, "as_of", None)
            object.__setattr__(self, "raw", True)


def check_request(
    schema: Schema, request: SnapshotRequest, storage_options: dict[str, Any] | None = None
) -> None:
    """Refuse what is wrong with ``request`` for a table of ``schema`` before anything is read:
    ``--where`` (bound once: :func:`lakectl.expr.bind_where`), unknown ``--columns``, an
    unknown ``--format`` or an ``--out`` path that exists."""
    from lakectl.storage.fs import storage_for

    if request.where is not None:
        bind_where(request.where, schema)
    unknown = [c for c in request.columns if c not in schema]
    if unknown:
        raise UnknownColumnError(
            f"--columns: unknown column(s) {', '.join(unknown)} (columns: {', '.join(schema.names)})"
        )
    if request.out:
        fmt = request.out_format.lower()
        if fmt not in OUT_FORMATS:
            raise UsageError(f"--format {fmt!r}: use one of {', '.join(OUT_FORMATS)}")
        storage, path = storage_for(request.out, storage_options)
        if storage.exists(path):
            raise BadInputError(
                f"--out {request.out} already exists; lakectl does not overwrite it",
                hint="choose a new path, or remove the old output first",
            )
