"""What :meth:`lakectl.Table.scan` and :meth:`lakectl.Table.changes` return: a read described
once, then taken in the form the caller wants.

```python
scan = t.scan(version=3, where="store_id = 'S01'", columns=["sell_id", "total_amt"])
scan.plan()             # what would be read: version, partitions and files, what was pruned
scan.to_arrow()         # or to_batches(), to_pandas(), to_polars(), to_duckdb(con), to_spark()
scan.write("/tmp/out", format="parquet")
t.changes(from_version=2).to_arrow()
t.changes().scd2().to_pandas()
```

The engine is an argument (``engine="arrow"`` or ``"spark"``). Without one, ``to_spark`` reads
with Spark and every other method with pyarrow (no JVM). A scan is a description: each
terminal method reads the table again (the state the :class:`~lakectl.Table` is pinned to).
These classes only translate the call into the read operations (:mod:`lakectl.ops.snapshot`,
:mod:`lakectl.arrow.read`, :mod:`lakectl.ops.changes`, :mod:`lakectl.arrow.changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeVar

from lakectl.api_values import TimeLike, to_millis
from lakectl.errors import LakectlError, UsageError
from lakectl.ops.changes import ChangesRequest
from lakectl.ops.context import Context
from lakectl.ops.snapshot import SnapshotRequest
from lakectl.python_names import python_names

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from lakectl.ops.changes import ChangesResult
    from lakectl.ops.snapshot import SnapshotResult

P = ParamSpec("P")
R = TypeVar("R")
Req = TypeVar("Req", SnapshotRequest, ChangesRequest)
Engine = Literal["spark", "arrow"]
ENGINES = ("spark", "arrow")


def check_engine(engine: str | None) -> Engine | None:
    """``engine`` when it is one lakectl has (or None); else a usage error naming it."""
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"engine={engine!r}: use 'spark' or 'arrow'")
    return engine  # type: ignore[return-value]


def python_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` with its errors naming Python arguments, unless its object's
    ``_flag_names`` says the caller is the command line."""
    import functools

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except LakectlError as exc:
            if not getattr(args[0], "_flag_names", False):
                python_names(exc)
            raise

    return wrapper


def _spark_to_arrow(df: DataFrame) -> pa.Table:
    """A Spark DataFrame's rows as a pyarrow Table, collected to the driver."""
    return df.toArrow()


@dataclass(frozen=True)
class PlannedPartition:
    """One partition a scan reads: its directory, data and delete directories, files, bytes."""

    partition: str
    base: str | None
    deltas: int
    delete_deltas: int
    files: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "partition": self.partition,
            "base": self.base,
            "deltas": self.deltas,
            "delete_deltas": self.delete_deltas,
            "files": self.files,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class ScanPlan:
    """What a scan would read, resolved on the log and the listing without reading a row:
    the version, the partitions left after pruning (with their files and bytes), what the
    ``where`` pruned (``partitions_total``, ``files_total``, ``bytes_total``, ``pruned_on``),
    and the Type 7 statements the read applies."""

    table: str
    version: int | None
    partitions: list[PlannedPartition]
    partitions_total: int
    files: int
    files_total: int
    bytes: int
    bytes_total: int
    pruned_on: dict[str, list[str]] = field(default_factory=dict)
    statements: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"ScanPlan({self.table!r}, version={self.version}, partitions="
            f"{len(self.partitions)} of {self.partitions_total}, files={self.files} of "
            f"{self.files_total}, bytes={self.bytes:,} of {self.bytes_total:,})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "table": self.table,
            "version": self.version,
            "partitions": [p.to_dict() for p in self.partitions],
            "partitions_total": self.partitions_total,
            "files": self.files,
            "files_total": self.files_total,
            "bytes": self.bytes,
            "bytes_total": self.bytes_total,
            "pruned_on": self.pruned_on,
            "statements": self.statements,
        }


class _Read(Generic[Req]):
    """What :class:`Scan` and :class:`Changes` share: the terminal methods over two
    engine-specific primitives, :meth:`_spark_frame` and :meth:`_arrow_batches`."""

    def __init__(
        self,
        ctx: Context,
        ref: str | None,
        request: Req,
        engine: Engine | None = None,
        flag_names: bool = False,
    ) -> None:
        self._ctx = ctx
        self._ref = ref
        self._request: Req = request
        self._engine = check_engine(engine)
        self._limit: int | None = request.limit
        self._flag_names = flag_names

    def _described(self, name: str, fields: tuple[tuple[str, object], ...]) -> str:
        """``Name(field=value, ...)`` of the fields that are set, then the engine."""
        pairs = (*fields, ("engine", self._engine))
        parts = [f"{key}={value!r}" for key, value in pairs if value is not None]
        return f"{name}({', '.join(parts)})"

    def _spark_frame(self) -> DataFrame:
        raise NotImplementedError

    def _arrow_batches(self) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
        raise NotImplementedError

    def _arrow_table(self) -> pa.Table:
        """Every row (at most ``limit``) as one table, read with the Arrow engine."""
        import pyarrow as pa

        schema, batches = self._arrow_batches()
        return pa.Table.from_batches(list(_limited(batches, self._limit)), schema=schema)

    def _engine_for(self, default: Engine) -> Engine:
        return self._engine or default

    @python_errors
    def to_spark(self) -> DataFrame:
        """The rows as a lazy Spark DataFrame (``limit`` applied).

        Returns:
            A :class:`pyspark.sql.DataFrame` in the session the table uses.

        Raises:
            UsageError: when the scan was made with ``engine="arrow"``.
        """
        if self._engine == "arrow":
            raise UsageError(
                "to_spark() reads with Spark, but the read was made with --engine arrow",
                hint="use to_arrow(), to_pandas() or to_batches() for the arrow engine",
            )
        df = self._spark_frame()
        return df.limit(self._limit) if self._limit else df

    @python_errors
    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as a stream of record batches (the arrow engine holds one stripe of a
        partition at a time, besides the partition's delete events).

        Returns:
            A :class:`pyarrow.RecordBatchReader`; the request is checked (and refused) before
            the first batch is read.
        """
        import pyarrow as pa

        if self._engine_for("arrow") == "spark":
            return _spark_to_arrow(self.to_spark()).to_reader()
        schema, batches = self._arrow_batches()
        return pa.RecordBatchReader.from_batches(schema, _limited(batches, self._limit))

    @python_errors
    def to_arrow(self) -> pa.Table:
        """The rows as one :class:`pyarrow.Table`.

        Returns:
            The rows, read with pyarrow (``engine="arrow"``, the default) or collected from
            Spark (``engine="spark"``).
        """
        if self._engine_for("arrow") == "spark":
            return _spark_to_arrow(self.to_spark())
        return self._arrow_table()

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame (:meth:`to_arrow`, converted).

        Returns:
            A :class:`pandas.DataFrame`.
        """
        return self.to_arrow().to_pandas()

    @python_errors
    def to_polars(self) -> Any:
        """The rows as a Polars DataFrame (:meth:`to_arrow`, converted); needs polars.

        Returns:
            A ``polars.DataFrame``.
        """
        try:
            import polars
        except ImportError as exc:
            raise UsageError(
                "to_polars needs the polars package, which is not installed",
                hint="pip install polars, or use to_arrow / to_pandas",
            ) from exc
        return polars.from_arrow(self.to_arrow())

    def to_duckdb(self, con: Any) -> Any:
        """The rows as a relation of the DuckDB connection ``con``, streamed from
        :meth:`to_batches` as DuckDB runs the query.

        Args:
            con: a ``duckdb.DuckDBPyConnection``.

        Returns:
            A ``duckdb.DuckDBPyRelation`` (``con.from_arrow``).
        """
        return con.from_arrow(self.to_batches())


def _limited(batches: Iterable[pa.RecordBatch], limit: int | None) -> Iterable[pa.RecordBatch]:
    """At most ``limit`` rows of ``batches`` (all without a limit)."""
    if not limit:
        yield from batches
        return
    left = limit
    for batch in batches:
        if batch.num_rows >= left:
            yield batch.slice(0, left)
            return
        left -= batch.num_rows
        yield batch


class Scan(_Read[SnapshotRequest]):
    """The rows of a table at one version and time, filtered and projected: made by
    :meth:`lakectl.Table.scan`, read by its terminal methods (:meth:`to_arrow`,
    :meth:`to_batches`, :meth:`to_pandas`, :meth:`to_polars`, :meth:`to_duckdb`,
    :meth:`to_spark`, :meth:`collect`, :meth:`write`) or described by :meth:`plan`."""

    def __repr__(self) -> str:
        r = self._request
        fields: tuple[tuple[str, object], ...] = (
            ("version", r.version),
            ("as_of", r.as_of),
            ("known_at", r.known_at),
            ("where", r.where),
            ("columns", list(r.columns) or None),
            ("order_by", list(r.order_by) or None),
            ("limit", r.limit),
            ("raw", True if r.raw else None),
        )
        return self._described("Scan", fields)

    @property
    def request(self) -> SnapshotRequest:
        """The read request this scan stands for (what ``lakectl snapshot`` takes)."""
        return self._request

    def _spark_frame(self) -> DataFrame:
        from lakectl.ops.snapshot import snapshot_dataframe

        return snapshot_dataframe(self._ctx, self._ref, self._request)

    def _arrow_batches(self) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
        from lakectl.ops.snapshot import arrow_rows

        rows = arrow_rows(self._ctx, self._ref, replace(self._request, out=None))
        return rows.schema, rows.batches

    def _arrow_table(self) -> pa.Table:
        """Without a sort or a limit, partitions are read on one thread per CPU."""
        import pyarrow as pa

        from lakectl.ops.snapshot import arrow_rows

        if self._limit or self._request.order_by:
            return super()._arrow_table()
        rows = arrow_rows(self._ctx, self._ref, replace(self._request, out=None))
        if rows.order_by:  # the key order a request without order_by may still ask for
            return pa.Table.from_batches(list(rows.batches), schema=rows.schema)
        return rows.read.read_all()

    @python_errors
    def collect(self) -> SnapshotResult:
        """The rows as Python values, as ``lakectl snapshot`` prints them (at most ``limit``:
        ``truncated`` says whether there were more).

        Returns:
            A :class:`lakectl.SnapshotResult` (``rows``, ``columns``, ``types``, ``version``,
            ``scan``: what was read after pruning, ``order_by``: the sort applied).
        """
        return self._snapshot(replace(self._request, out=None))

    @python_errors
    def write(self, path: str, format: str = "parquet") -> SnapshotResult:
        """Write the rows (at most ``limit``) under ``path``, a directory that must not exist.

        Args:
            path: a local path or URL (``s3://...``).
            format: ``parquet``, ``orc``, ``csv`` (with a header) or ``json`` (Spark only).

        Returns:
            A :class:`lakectl.SnapshotResult` with ``out`` (the URL written) and
            ``rows_written``.
        """
        return self._snapshot(replace(self._request, out=path, out_format=format))

    def _snapshot(self, request: SnapshotRequest) -> SnapshotResult:
        if self._engine_for("arrow") == "arrow":
            from lakectl.ops.snapshot import arrow_snapshot

            return arrow_snapshot(self._ctx, self._ref, request)
        from lakectl.ops.snapshot import snapshot

        return snapshot(self._ctx, self._ref, request)

    @python_errors
    def plan(self) -> ScanPlan:
        """What the scan would read, without reading a row: the version, per partition the
        directories, files and bytes left after pruning, what pruning removed and the Type 7
        statements applied.

        Returns:
            A :class:`lakectl.ScanPlan`.
        """
        from lakectl.ops.snapshot import open_scan

        scan = open_scan(self._ctx, self._ref, self._request)
        pruned, stats, target = scan.target, scan.pruning, scan.target
        statements = [s.sql for s in scan.statements]
        partitions = []
        for plan in pruned.plans:
            files = [f for d in (*plan.data_dirs, *plan.delete_deltas) for f in d.files]
            files += list(plan.originals)
            partitions.append(
                PlannedPartition(
                    partition=plan.relative or "(table)",
                    base=plan.base.acid.name if plan.base else None,
                    deltas=len(plan.deltas),
                    delete_deltas=len(plan.delete_deltas),
                    files=len(files),
                    bytes=sum(f.size for f in files),
                )
            )
        version = target.state.max_write_id if target.state is not None else None
        return ScanPlan(
            table=target.store.name or target.store.url,
            version=version,
            partitions=partitions,
            partitions_total=stats.partitions,
            files=stats.files_read,
            files_total=stats.files,
            bytes=stats.bytes_read,
            bytes_total=stats.bytes,
            pruned_on=stats.pruned_on,
            statements=statements,
        )


@dataclass(frozen=True)
class ChangesPlan:
    """What a change feed would read, resolved without reading a row: the range (``from``
    exclusive, ``to`` inclusive), the versions (write ids) it holds, and per partition the
    directories of the range plus those of the older state read for the pre-images."""

    table: str
    from_version: int
    to_version: int
    versions: list[int]
    partitions: list[str]
    range_dirs: int
    older_dirs: int

    def __repr__(self) -> str:
        return (
            f"ChangesPlan({self.table!r}, versions {self.from_version}..{self.to_version}, "
            f"commits={len(self.versions)}, partitions={len(self.partitions)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "table": self.table,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "versions": self.versions,
            "partitions": self.partitions,
            "range_dirs": self.range_dirs,
            "older_dirs": self.older_dirs,
        }


class Changes(_Read[ChangesRequest]):
    """The row changes between two versions of a table (the change feed), or with
    :meth:`scd2` the table's rows over time: made by :meth:`lakectl.Table.changes`, read by the
    same terminal methods as :class:`Scan`. The arrow engine returns the rows sorted as
    ``lakectl changes`` prints them (by version and key; by key and ``valid_from`` for SCD2);
    ``to_spark()`` leaves them unsorted."""

    def __repr__(self) -> str:
        r = self._request
        fields: tuple[tuple[str, object], ...] = (
            ("from_version", r.from_version),
            ("to_version", r.to_version),
            ("from_time", r.from_time),
            ("to_time", r.to_time),
            ("limit", r.limit),
        )
        return self._described("SCD2" if r.scd2 else "Changes", fields)

    @property
    def request(self) -> ChangesRequest:
        """The request this change feed stands for (what ``lakectl changes`` takes)."""
        return self._request

    @python_errors
    def scd2(
        self, current_valid_to: TimeLike | None = None, timezone: str | None = None
    ) -> Changes:
        """The table's rows over time instead of its changes, as a slowly changing dimension
        of Type 2: one row per version of each key with ``valid_from``, ``valid_to`` (NULL for
        the current version, or ``current_valid_to``) and ``is_current``, from the start of
        history up to the feed's end (``to_version``/``to_time``). Needs a primary key and a
        feed made without ``from_version``/``from_time``.

        Args:
            current_valid_to: the ``valid_to`` of each key's current row (a time, e.g.
                ``"9999-12-31"``, as dbt's ``dbt_valid_to_current``); default NULL.
            timezone: the zone of a time given without an offset (default UTC).

        Returns:
            A :class:`Changes` with the same terminal methods.
        """
        valid_to = to_millis(current_valid_to, "current_valid_to", timezone)
        request = replace(self._request, scd2=True, current_valid_to=valid_to)
        return Changes(self._ctx, self._ref, request, self._engine, self._flag_names)

    def _spark_frame(self) -> DataFrame:
        from lakectl.ops.changes import change_feed

        return change_feed(self._ctx, self._ref, replace(self._request, out=None)).frame

    def _arrow_batches(self) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
        from lakectl.ops.changes import arrow_changes

        rows = arrow_changes(self._ctx, self._ref, replace(self._request, out=None)).rows
        return rows.schema, rows.to_batches()

    @python_errors
    def collect(self) -> ChangesResult:
        """The changes as Python values, as ``lakectl changes`` prints them (at most
        ``limit``; ``truncated`` says whether there were more).

        Returns:
            A :class:`lakectl.ChangesResult` (``rows``, ``columns``, ``from_version``,
            ``to_version``, ``versions``).
        """
        return self._list(replace(self._request, out=None))

    @python_errors
    def write(self, path: str, format: str = "parquet") -> ChangesResult:
        """Write the changes (at most ``limit``) under ``path``, a directory that must not
        exist.

        Args:
            path: a local path or URL.
            format: ``parquet``, ``orc``, ``csv`` or ``json`` (Spark only).

        Returns:
            A :class:`lakectl.ChangesResult` with ``out`` and ``rows_written``.
        """
        return self._list(replace(self._request, out=path, out_format=format))

    def _list(self, request: ChangesRequest) -> ChangesResult:
        if self._engine_for("arrow") == "arrow":
            from lakectl.ops.changes import arrow_list_changes

            return arrow_list_changes(self._ctx, self._ref, request)
        from lakectl.ops.changes import changes

        return changes(self._ctx, self._ref, request)

    @python_errors
    def plan(self) -> ChangesPlan:
        """What the feed would read, without reading a row.

        Returns:
            A :class:`lakectl.ChangesPlan`: the range, its versions and the directories read.
        """
        from lakectl.ops.changes import resolve_changes

        source = resolve_changes(self._ctx, self._ref, replace(self._request, out=None))
        rng = source.range
        partitions = sorted(
            {p.relative or "(table)" for p in (*source.range_plans, *source.older.plans)}
        )
        return ChangesPlan(
            table=source.table,
            from_version=rng.from_version,
            to_version=rng.to_version,
            versions=list(rng.write_ids),
            partitions=partitions,
            range_dirs=sum(len(p.deltas) + len(p.delete_deltas) for p in source.range_plans),
            older_dirs=sum(len(p.data_dirs) + len(p.delete_deltas) for p in source.older.plans),
        )


__all__ = ["Changes", "ChangesPlan", "Engine", "PlannedPartition", "Scan", "ScanPlan"]
