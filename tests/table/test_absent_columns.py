"""Which table columns a loaded file (or a stream's file) may lack: one rule for both."""

from __future__ import annotations

from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema


def test_a_file_may_lack_a_nullable_or_defaulted_column_but_no_key_partition_or_not_null():
    schema = parse_schema(
        "id bigint, day string, promo string, qty int not null, note string default 'x', "
        "code string not null default 'none'"
    )
    meta = TableMetadata(schema, primary_key=("id",), partition_by=("day",))
    absent = {name: meta.may_be_absent(name) for name in schema.names}
    assert absent == {
        "id": False,  # a key column
        "day": False,  # a partition column
        "promo": True,  # nullable: NULL
        "qty": False,  # NOT NULL without a default
        "note": True,  # its default
        "code": True,  # NOT NULL, but its default fills it
    }
    assert meta.may_be_absent("PROMO") and not meta.may_be_absent("nope")
