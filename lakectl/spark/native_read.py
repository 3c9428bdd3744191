"""Merge-on-read through lakectl's own Spark data source (``jvm/``, :data:`SOURCE`).

Spark's ORC scan cannot apply delete events while it reads. The data source in
``lakectl/jars/lakectl-spark.jar`` reads the files the way Hive's ACID reader does: each task
loads the delete events of its partitions' delete deltas and skips the rows they name while it
decodes the bases and deltas; partition values are constants of the task. No delete event is
collected, broadcast or hashed.

The planner here decides everything (files, tasks, visibility, typed partition values) and
hands the data source a JSON plan. :func:`native_rows` returns None where the data source
cannot serve the read, and the caller falls back to the live-row kernel in Spark tasks
(:mod:`lakectl.spark.kernel_read`): the jar not built or not on the session's class path, Hive
original files, column types it does not decode (timestamps), partition values it would have to
parse, a filesystem without a Hadoop client.
``--conf spark.lakectl.read.native=false`` turns it off.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lakectl.data_source_jar import jar_path as jar_path  # where the data source is
from lakectl.kernel.schema_map import row_source
from lakectl.planning.read_plan import PartitionReadPlan
from lakectl.planning.read_splits import SplitFile, SplitGroup, pack_splits
from lakectl.spark.fsspec_orc import hadoop_urls
from lakectl.spark.snapshot_rows import ReadSpec, rows_ddl
from lakectl.spark.types import row_struct_ddl
from lakectl.table.schema import Schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SOURCE = "io.lakectl.spark.AcidSource"
ENABLED_CONF = "spark.lakectl.read.native"

_DATA_TYPES = re.compile(
    r"^(boolean|tinyint|smallint|int|bigint|float|double|string|binary|date|decimal\(\d+,\d+\))$"
)
_INTEGER_TYPES = {"tinyint", "smallint", "int", "bigint"}
# ASCII digits only: Spark's cast reads no others (a Unicode digit gives NULL).
_INTEGER = re.compile(r"^[+-]?[0-9]{1,18}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_EPOCH = dt.date(1970, 1, 1)
# Spark's settings for its file scans: bytes per task at most, and what opening a file costs
# in bytes. Spark's defaults served best here too: weighing a small file at 256 KB instead of
# 4 MB packed 10M rows into 6 tasks instead of 10 and read them 15% slower on 2 cores.
_MAX_BYTES = ("spark.sql.files.maxPartitionBytes", 128 * 1024 * 1024)
_OPEN_COST = ("spark.sql.files.openCostInBytes", 4 * 1024 * 1024)


def native_rows(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool = False,
) -> DataFrame | None:
    """The snapshot's rows read by the data source, as :func:`lakectl.spark.snapshot_rows.read_rows` returns
    them, or None when the data source cannot serve this read."""
    if any(p.written for p in plans):
        return _evolved_rows(spark, plans, spec, with_identity)
    if any(p.originals for p in plans) or not _types_supported(spec):
        return None
    values = [_typed_values(p.values, spec.partition_schema) for p in plans]
    if any(v is None for v in values):
        return None
    paths = [
        f.path
        for p in plans
        for d in (*p.data_dirs, *p.delete_deltas)
        for f in d.files  # one list: one answer for the storage
    ]
    if not paths or not _enabled(spark):
        return None
    urls = hadoop_urls(spark, spec.storage, paths)
    if urls is None:
        return None
    url_of = dict(zip(paths, urls, strict=True))
    groups = [
        SplitGroup(
            tuple(typed or ()),
            tuple(
                SplitFile(url_of[f.path], f.size, base=d is p.base)
                for d in p.data_dirs
                for f in d.files
            ),
            tuple(SplitFile(url_of[f.path], f.size) for d in p.delete_deltas for f in d.files),
        )
        for p, typed in zip(plans, values, strict=True)
        if p.data_dirs
    ]
    plan = _plan_json(spark, groups, spec, with_identity)
    return (
        spark.read.format(SOURCE).schema(rows_ddl(spec, with_identity)).option("plan", plan).load()
    )


def _evolved_rows(
    spark: SparkSession,
    plans: Sequence[PartitionReadPlan],
    spec: ReadSpec,
    with_identity: bool,
) -> DataFrame | None:
    """:func:`native_rows` of a table whose directories hold different data schemas
    (:mod:`lakectl.table.evolution`): one read per schema, each with the row type its files
    were written with and every delete delta of its partitions, its columns then mapped to the
    current ones by position (widened ones cast, missing ones set to their default)."""
    from functools import reduce

    from pyspark.sql import functions as F

    from lakectl.spark.snapshot_rows import default_column

    schemas = {p.written_schema(d) for p in plans for d in p.data_dirs}
    frames = []
    for written in schemas:

        def mine(plan: PartitionReadPlan, d: object, w: Schema | None = written) -> bool:
            return plan.written_schema(d) == w  # type: ignore[arg-type]

        group = [
            replace(
                p,
                base=p.base if p.base and mine(p, p.base) else None,
                deltas=tuple(d for d in p.deltas if mine(p, d)),
                written=(),
            )
            for p in plans
        ]
        old = written or spec.data_schema
        key = _field_index(spec.data_schema, spec.not_null_column)
        sub = replace(
            spec,
            data_schema=old,
            not_null_column=old.columns[key].name if 0 <= key < len(old.columns) else None,
        )
        rows = native_rows(spark, [p for p in group if p.data_dirs], sub, with_identity)
        if rows is None:
            return None
        sources = [row_source(i, len(old.columns)) for i in range(len(spec.data_schema.columns))]
        columns = [
            (
                F.col(f"`{old.columns[at].name}`").cast(c.type)
                if at is not None
                else default_column(c)
            ).alias(c.name)
            for at, c in zip(sources, spec.data_schema.columns, strict=True)
        ]
        rest = [F.col(f"`{n}`") for n in rows.columns[len(old.columns) :]]
        frames.append(rows.select(*columns, *rest))
    return reduce(lambda a, b: a.unionByName(b), frames) if frames else None


def _enabled(spark: SparkSession) -> bool:
    """Whether the read may use the data source: not turned off, and the session's driver
    finds the class (asked once per session; resolving a source runs no job)."""
    setting = spark.conf.get(ENABLED_CONF, "true") or "true"
    if setting.strip().lower() == "false":
        return False
    known = getattr(spark, "_lakectl_native_source", None)
    if known is None:
        probe = json.dumps({"dataColumns": 1, "partitionColumns": 0, "splits": []})
        try:
            spark.read.format(SOURCE).schema("x int").option("plan", probe).load().schema  # noqa: B018
            known = True
        except Exception:  # any failure to resolve it: the class is not on the class path
            known = False
        spark._lakectl_native_source = known  # type: ignore[attr-defined]
    return bool(known)


def _conf_bytes(spark: SparkSession, key: str, default: int) -> int:
    """A positive byte count from the session (``"10m"``, ``"1048576"``), else ``default``."""
    from lakectl.errors import UsageError
    from lakectl.table.properties import parse_size

    text = (spark.conf.get(key, str(default)) or str(default)).strip()
    try:
        value = int(text) if text.lstrip("-").isdigit() else parse_size(text)
    except UsageError:
        return default
    return value if value > 0 else default


def _parallelism(spark: SparkSession) -> int:
    """The cores a scan spreads over: the context's default parallelism (not known on Spark
    Connect: then the machine's cores, as for local[*])."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return os.cpu_count() or 2


def _types_supported(spec: ReadSpec) -> bool:
    return all(_DATA_TYPES.match(c.type) for c in spec.data_schema.columns) and all(
        c.type in (*_INTEGER_TYPES, "string", "boolean", "date")
        for c in spec.partition_schema.columns
    )


def _typed_values(values: Sequence[str | None], schema: Schema) -> list[object] | None:
    """The JSON values of a partition's (unescaped) directory values, or None where a value
    is not in the plain form this module parses exactly as Spark's cast would."""
    out: list[object] = []
    for value, column in zip(values, schema.columns, strict=True):
        if value is None or column.type == "string":
            out.append(value)
        elif column.type in _INTEGER_TYPES and _INTEGER.match(value):
            out.append(int(value))
        elif column.type == "boolean" and value.lower() in ("true", "false"):
            out.append(value.lower() == "true")
        elif column.type == "date" and _DATE.match(value):
            try:
                out.append((dt.date.fromisoformat(value) - _EPOCH).days)
            except ValueError:
                return None
        else:
            return None
    if any(not _fits(v, c.type) for v, c in zip(out, schema.columns, strict=True)):
        return None
    return out


def _fits(value: object, type_name: str) -> bool:
    """Whether an integer partition value is in its type's range (else Spark's cast is null)."""
    bits = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}.get(type_name)
    if bits is None or not isinstance(value, int):
        return True
    return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)


def _field_index(schema: Schema, name: str | None) -> int:
    """The position of column ``name`` (case-insensitive), or -1."""
    lowered = [n.lower() for n in schema.names]
    return lowered.index(name.lower()) if name and name.lower() in lowered else -1


def _plan_json(
    spark: SparkSession, groups: list[SplitGroup], spec: ReadSpec, with_identity: bool
) -> str:
    max_bytes = _conf_bytes(spark, *_MAX_BYTES)
    open_cost = _conf_bytes(spark, *_OPEN_COST)
    splits = pack_splits(groups, max_bytes, open_cost, _parallelism(spark))
    return json.dumps(
        {
            # ORC spells the types of _DATA_TYPES as Spark does.
            "rowType": row_struct_ddl(spec.data_schema),
            "dataColumns": len(spec.data_schema.columns),
            "partitionColumns": len(spec.partition_schema.columns),
            "identity": with_identity,
            # As the kernel's rule: a live row's key is never null (other writers' files).
            "notNullField": _field_index(spec.data_schema, spec.not_null_column),
            "highWatermark": spec.valid.high_watermark,
            "exceptions": sorted(spec.valid.exceptions),
            "splits": [
                {
                    "groups": [
                        {
                            "values": list(g.values),
                            "files": [[f.path, f.size, f.base] for f in g.files],
                            "deletes": [[f.path, f.size] for f in g.deletes],
                        }
                        for g in split
                    ]
                }
                for split in splits
            ],
        },
        separators=(",", ":"),
    )
