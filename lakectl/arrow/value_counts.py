"""How many live rows of one partition hold each value tuple of some columns (``lakectl skew``
in the Arrow engine): the partition's rows streamed through the live-row kernel
(:func:`~lakectl.arrow.partition_reader.partition_batches`), counted a batch at a time with
pyarrow's group-by, so memory holds one batch and the distinct tuples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakectl.arrow.partition_reader import MergeSpec, partition_batches
from lakectl.planning.list_bucket_plan import ValueTuple
from lakectl.planning.prune import PRUNABLE_TYPES
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.table.metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

COUNTED_TYPES = PRUNABLE_TYPES
"""Column types whose values the Arrow engine renders as Spark's ``CAST(v AS STRING)`` does."""
_COUNT = "count_all"


def uncountable_reason(meta: TableMetadata, columns: Sequence[str]) -> str | None:
    """Why the Arrow engine cannot count ``columns`` as Spark does (a column whose values have
    no exact common text), or None when it can."""
    for name in columns:
        kind = meta.schema[name].type
        if kind not in COUNTED_TYPES:
            return (
                f"counting values of {name} ({kind}); it counts columns of type "
                f"{', '.join(sorted(COUNTED_TYPES))}"
            )
    return None


def value_counts(
    spec: MergeSpec, plan: PartitionReadPlan, columns: Sequence[str]
) -> list[tuple[ValueTuple, int]]:
    """Each value tuple of ``columns`` among the live rows of ``plan``'s partition with its
    number of rows (stored values: statements are not applied), values as text as
    :func:`lakectl.spark.list_bucket.skew_counts` gives them (``None`` for NULL)."""
    import pyarrow as pa

    names = list(columns)
    counted: list[pa.Table] = []
    for batch in partition_batches(spec, plan):
        rows = pa.Table.from_batches([batch]).select(names)
        counted.append(rows.group_by(names).aggregate([([], _COUNT)]))
    if not counted:
        return []
    total = pa.concat_tables(counted).group_by(names).aggregate([(_COUNT, "sum")])
    texts = [_text(total.column(name)).to_pylist() for name in names]
    counts = total.column(f"{_COUNT}_sum").to_pylist()
    return [
        (tuple(values), int(count))
        for values, count in zip(zip(*texts, strict=True), counts, strict=True)
    ]


def _text(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """``values`` as Spark's ``CAST(v AS STRING)`` writes them (booleans ``true``/``false``,
    integers in decimal, dates ``yyyy-MM-dd``)."""
    import pyarrow as pa

    return values.cast(pa.string())


__all__ = ["COUNTED_TYPES", "uncountable_reason", "value_counts"]
