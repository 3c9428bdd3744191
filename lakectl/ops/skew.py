"""``lakectl skew``: per partition, the heaviest values of one or more columns and what to do.

One pass over the stored rows of the current snapshot (as ``snapshot --raw``: list bucketing
places rows by their stored values, so Type 7 statements are not applied), in Spark (group by
partition columns and the skew column(s)) or in the Arrow engine (each partition's live rows
counted in this process, :mod:`lakectl.arrow.value_counts`), then rank per partition. The recommendation is the
input of ``list-bucket --auto``: the values whose share of the partition's rows is at least
``--min-share``, heaviest first, at most ``--max-values``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.errors import UsageError
from lakectl.ops.context import Context
from lakectl.planning.list_bucket_plan import (
    ListBucketing,
    ValueTuple,
    heaviest,
    layout_of,
    layouts_by_dir,
    recommend,
    validate_columns,
)
from lakectl.planning.prune import canonical_text
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.scan.target import plan_lakectl
from lakectl.table.log import TableState
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    from lakectl.engine import Engine, EngineChoice
    from lakectl.spark.list_bucket import GroupCount


@dataclass(frozen=True)
class SkewOptions:
    columns: tuple[str, ...]
    partitions: tuple[str, ...] = ()
    top: int = 10
    min_share: float = 0.01
    max_values: int = 10
    engine: str | None = None
    """``spark``, ``arrow`` or ``auto`` (:mod:`lakectl.engine`); ``None``: the configured one."""


@dataclass(frozen=True)
class ValueCount:
    values: tuple[str | None, ...]
    rows: int
    share: float

    def to_dict(self) -> dict[str, Any]:
        return {"values": list(self.values), "rows": self.rows, "share": round(self.share, 6)}


@dataclass(frozen=True)
class PartitionSkew:
    """One partition: rows, distinct value tuples, the heaviest ones, the recommendation."""

    partition: str
    rows: int
    distinct: int
    top: tuple[ValueCount, ...]
    recommended: tuple[tuple[str, ...], ...]
    current: ListBucketing | None = None

    @property
    def list_bucketing(self) -> ListBucketing | None:
        """How the partition is list-bucketed now (``current``)."""
        return self.current

    @property
    def others_share(self) -> float:
        """Share of the rows held by all values outside ``top``."""
        return max(0.0, 1.0 - sum(v.share for v in self.top)) if self.rows else 0.0

    @property
    def recommended_share(self) -> float:
        wanted = set(self.recommended)
        return sum(v.share for v in self.top if v.values in wanted)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "rows": self.rows,
            "distinct": self.distinct,
            "top": [v.to_dict() for v in self.top],
            "others_share": round(self.others_share, 6),
            "recommended": [list(v) for v in self.recommended],
            "recommended_share": round(self.recommended_share, 6),
            "list_bucketing": self.current.to_json() if self.current else None,
        }


@dataclass
class SkewResult:
    table: str
    columns: tuple[str, ...]
    version: int
    min_share: float
    max_values: int
    partitions: list[PartitionSkew] = field(default_factory=list)
    seconds: float = 0.0
    engine: str = ""
    """The engine that counted the values (``spark`` or ``arrow``); ``engine_reason`` says
    why."""
    engine_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "columns": list(self.columns),
            "version": self.version,
            "min_share": self.min_share,
            "max_values": self.max_values,
            "partitions": [p.to_dict() for p in self.partitions],
            "seconds": round(self.seconds, 3),
            "engine": self.engine or None,
            "engine_reason": self.engine_reason or None,
        }


def check_options(top: int, min_share: float, max_values: int) -> None:
    """Refuse thresholds that make no sense."""
    if top < 1:
        raise UsageError(f"--top {top}: must be at least 1")
    if not 0.0 < min_share <= 1.0:
        raise UsageError(f"--min-share {min_share:g}: must be in (0, 1], e.g. 0.01 for 1%")
    if max_values < 1:
        raise UsageError(f"--max-values {max_values}: must be at least 1")


def select_partitions(
    meta: TableMetadata, plans: list[PartitionReadPlan], specs: Sequence[str]
) -> list[PartitionReadPlan]:
    """The plans named by ``--partition`` (all when none); refuses names matching nothing."""
    from lakectl.ops.rewrite import select_partitions

    return select_partitions(meta, plans, tuple(specs))


def _partition_key(meta: TableMetadata, values: Sequence[str | None]) -> tuple[str | None, ...]:
    types = [meta.schema[c].type for c in meta.partition_by]
    return tuple(
        canonical_text(v, t) or v if v is not None else None
        for v, t in zip(values, types, strict=True)
    )


def measure_skew(
    ctx: Context,
    store: TableStore,
    state: TableState,
    plans: list[PartitionReadPlan],
    columns: tuple[str, ...],
    top: int,
    min_share: float,
    max_values: int,
    engine: Engine | str,
) -> tuple[list[PartitionSkew], EngineChoice]:
    """Count value tuples of ``columns`` in ``plans``' partitions in the engine ``engine``
    asks for (one Spark job, or the live rows read and counted in this process); returns the
    partitions' skew and the engine that counted."""
    from lakectl.arrow.value_counts import uncountable_reason
    from lakectl.engine import choose_engine, run_in_engine

    meta = state.metadata
    job = _Counting(store, state, plans, columns, max(top, max_values))
    choice = choose_engine(
        engine,
        work_bytes=sum(f.size for p in plans for d in p.data_dirs for f in d.files),
        meta=meta,
        arrow_unsupported=uncountable_reason(meta, columns),
    )

    def in_spark(chosen: EngineChoice) -> tuple[list[_Counted], EngineChoice]:
        return _spark_counts(ctx, job), chosen

    def in_arrow(chosen: EngineChoice) -> tuple[list[_Counted], EngineChoice]:
        return _arrow_counts(job), chosen

    counted, choice = run_in_engine(engine, choice, in_arrow, in_spark)
    layouts = layouts_by_dir(state.records)
    out = []
    for plan, (total, distinct, counts) in zip(plans, counted, strict=True):
        out.append(
            PartitionSkew(
                partition=plan.relative,
                rows=total,
                distinct=distinct,
                top=tuple(ValueCount(v, c, c / total) for v, c in counts[:top]),
                recommended=recommend(counts, total, min_share, max_values),
                current=layout_of(plan, layouts),
            )
        )
    return out, choice


_Counted = tuple[int, int, list[tuple[ValueTuple, int]]]
"""One partition's rows, distinct value tuples and heaviest tuples with their rows."""


@dataclass(frozen=True)
class _Counting:
    """What to count: ``columns``' value tuples in ``plans``' partitions of ``state``, the
    ``keep`` heaviest per partition."""

    store: TableStore
    state: TableState
    plans: list[PartitionReadPlan]
    columns: tuple[str, ...]
    keep: int


def _spark_counts(ctx: Context, job: _Counting) -> list[_Counted]:
    """Per plan, the counts of one Spark job over the partitions' stored rows."""
    import lakectl.spark  # noqa: F401  (sets up warnings before pyspark loads)
    from lakectl.spark import snapshot_rows
    from lakectl.spark.list_bucket import skew_counts

    meta = job.state.metadata
    spec = snapshot_rows.ReadSpec(
        job.store.storage,
        job.store.root,
        meta.data_schema,
        meta.schema.select(list(meta.partition_by)),
        job.state.valid_write_ids(),
        meta.data_key,
    )
    rows = snapshot_rows.read_rows(ctx.spark(), job.plans, spec)
    by_partition: dict[tuple[str | None, ...], list[GroupCount]] = {}
    for entry in skew_counts(rows, meta.partition_by, job.columns, job.keep):
        by_partition.setdefault(_partition_key(meta, entry.partition), []).append(entry)
    out: list[_Counted] = []
    for plan in job.plans:
        entries = sorted(
            by_partition.get(_partition_key(meta, plan.values), []), key=lambda e: e.rank
        )
        total, distinct = (entries[0].total, entries[0].distinct) if entries else (0, 0)
        out.append((total, distinct, [(e.values, e.rows) for e in entries]))
    return out


def _arrow_counts(job: _Counting) -> list[_Counted]:
    """Per plan, the counts of the partition's live rows read in this process."""
    from lakectl.arrow.partition_reader import MergeSpec
    from lakectl.arrow.value_counts import value_counts

    valid = job.state.valid_write_ids()
    spec = MergeSpec.of_table(job.store.storage, job.state.metadata, valid, columns=job.columns)
    out: list[_Counted] = []
    for plan in job.plans:
        groups = value_counts(spec, plan, job.columns)
        out.append((sum(c for _, c in groups), len(groups), heaviest(groups, job.keep)))
    return out


def skew(ctx: Context, table_ref: str | None, options: SkewOptions) -> SkewResult:
    """Measure the skew of ``options.columns`` per partition of the current snapshot."""
    started = time.time()
    check_options(options.top, options.min_share, options.max_values)
    store = ctx.table(table_ref)
    state = store.read_state()
    meta = state.metadata
    columns = validate_columns(meta, options.columns, for_list_bucketing=False)
    _, plans, _ = plan_lakectl(store, state)
    plans = select_partitions(meta, plans, options.partitions)
    ctx.progress(f"counting {', '.join(columns)} in {len(plans)} partition(s)")
    partitions, choice = measure_skew(
        ctx,
        store,
        state,
        plans,
        columns,
        options.top,
        options.min_share,
        options.max_values,
        options.engine or ctx.config.engine,
    )
    return SkewResult(
        table=store.name or store.url,
        columns=columns,
        version=state.max_write_id,
        min_share=options.min_share,
        max_values=options.max_values,
        partitions=partitions,
        seconds=time.time() - started,
        engine=choice.engine.value,
        engine_reason=choice.reason,
    )
