"""Generated sales data in the sample ``sales`` table's schema, written as Parquet with Spark.

The base table has ``rows`` rows with keys ``0 .. rows-1``. Every column of a base row is a
deterministic function of its key (hashes, no random state), so a CDC batch can reproduce a
stored row's ``create_date`` and ``store_id`` (its identity under lakectl's partitioning) without
reading the base.

CDC batches (60% updates, 30% inserts, 10% deletes by default) take their existing keys from a
bijection of ``0 .. rows-1`` (``key = i * P mod rows``, P prime), each batch from its own slice of
``i``, so batches never touch the same key and each one is a full 60/30/10 batch whatever ran
before it. Inserted keys count up from ``rows``, again disjoint per batch. Changes carry a
``change_ts`` newer than every stored version.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, op_code string, store_id string, "
    "create_date string"
)
COLUMNS = [c.strip().split()[0] for c in SCHEMA.split(",")]
PRIMARY_KEY = "sell_id"
PARTITION_BY = "create_date"
START_DATE = "2024-01-01"
STORES = 50
# Skewed stores: S001 holds half the rows, S002 20%, S003 10%, the other 47 share the rest.
STORE_SHARES = ((0.5, 1), (0.7, 2), (0.8, 3))
PAYMENT_TYPES = ["CARD", "CASH", "GIFT", "WIRE", "CHECK"]
STATUSES = ["NEW", "PAID", "SHIPPED", "RETURNED", "CANCELLED"]
PRIME = 2_654_435_761  # multiplier of the key bijection (prime: coprime with any size < P)


@dataclass(frozen=True)
class BatchSpec:
    """One generated CDC batch."""

    name: str
    path: str
    rows: int
    updates: int
    inserts: int
    deletes: int
    number: int  # 1, 2, ... (the `batch` column and the change_ts day)


@dataclass(frozen=True)
class Dataset:
    """A generated base table plus its CDC batches, in load order."""

    rows: int
    dates: int
    base_path: str
    batches: tuple[BatchSpec, ...]
    reused: bool = False  # read back from an earlier run's manifest (BENCH_KEEP=1)

    def batch(self, name: str) -> BatchSpec:
        return next(b for b in self.batches if b.name == name)

    def expected_rows(self, names: list[str] | None = None) -> int:
        chosen = [b for b in self.batches if names is None or b.name in names]
        return self.rows + sum(b.inserts - b.deletes for b in chosen)


def _unit(key: Column, salt: int) -> Column:
    """A deterministic number in [0, 1) from the key and a salt."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(key, F.lit(salt)), F.lit(1_000_003)).cast("double") / 1_000_003.0


def _pick(options: list[str], u: Column) -> Column:
    from pyspark.sql import functions as F

    arr = F.array(*[F.lit(o) for o in options])
    return F.element_at(arr, (F.floor(u * len(options)) + 1).cast("int"))


def _store(u: Column) -> Column:
    from pyspark.sql import functions as F

    expr = None
    for bound, store in STORE_SHARES:
        cond = u < F.lit(bound)
        value = F.lit(f"S{store:03d}")
        expr = F.when(cond, value) if expr is None else expr.when(cond, value)
    first_rest = len(STORE_SHARES) + 1
    rest_u = (u - F.lit(STORE_SHARES[-1][0])) / F.lit(1 - STORE_SHARES[-1][0])
    rest = F.floor(rest_u * (STORES - len(STORE_SHARES))).cast("int") + first_rest
    assert expr is not None
    return expr.otherwise(F.format_string("S%03d", rest))


def _time_of_day(u: Column) -> Column:
    from pyspark.sql import functions as F

    secs = F.floor(u * 86_400).cast("int")
    return F.format_string(
        "%02d:%02d:%02d", (secs / 3600).cast("int"), ((secs % 3600) / 60).cast("int"), secs % 60
    )


def _identity_columns(key: Column, dates: int) -> dict[str, Column]:
    """Columns a stored row keeps for life: account, store, creation time and date."""
    from pyspark.sql import functions as F

    day = F.floor(_unit(key, 1) * dates).cast("int")
    create_date = F.date_format(F.date_add(F.lit(START_DATE).cast("date"), day), "yyyy-MM-dd")
    return {
        "acct_id": F.floor(_unit(key, 2) * 200_000).cast("bigint"),
        "create_ts": F.concat_ws(" ", create_date, _time_of_day(_unit(key, 3))),
        "store_id": _store(_unit(key, 4)),
        "create_date": create_date,
    }


def _row(key: Column, ident: dict[str, Column], number: int, op: Column | str) -> list[Column]:
    """All columns in schema order; ``number`` 0 = the base, N = CDC batch N."""
    from pyspark.sql import functions as F

    if number == 0:
        change_ts = ident["create_ts"]
    else:  # newer than anything stored: the base ends before March 2024
        change_ts = F.format_string(
            "2024-06-%02d %s", F.lit(number), _time_of_day(_unit(key, 10 + number))
        )
    salt = 100 * (number + 1)
    cols = {
        "sell_id": key.cast("bigint"),
        "acct_id": ident["acct_id"],
        "change_ts": change_ts,
        "create_ts": ident["create_ts"],
        "payment_type_id": _pick(PAYMENT_TYPES, _unit(key, salt + 1)),
        "status_id": _pick(STATUSES, _unit(key, salt + 2)),
        "total_amt": F.round(_unit(key, salt + 3) * 500 + 1, 2),
        "batch": F.lit(number).cast("int"),
        "op_code": F.lit(op) if isinstance(op, str) else op,
        "store_id": ident["store_id"],
        "create_date": ident["create_date"],
    }
    return [cols[c].alias(c) for c in COLUMNS]


def base_frame(spark: SparkSession, rows: int, dates: int) -> DataFrame:
    from pyspark.sql import functions as F

    key = F.col("id")
    return spark.range(rows).select(*_row(key, _identity_columns(key, dates), 0, "I"))


def batch_frame(
    spark: SparkSession,
    rows: int,
    dates: int,
    number: int,
    existing_offset: int,
    insert_offset: int,
    updates: int,
    deletes: int,
    inserts: int,
) -> DataFrame:
    """One CDC batch: ``updates`` + ``deletes`` existing keys, then ``inserts`` new keys."""
    from pyspark.sql import functions as F

    i = F.col("id")
    existing = spark.range(existing_offset, existing_offset + updates + deletes)
    key = F.pmod(i * F.lit(PRIME), F.lit(rows)).cast("bigint")
    op = F.when(i < F.lit(existing_offset + updates), F.lit("U")).otherwise(F.lit("D"))
    changed = existing.select(*_row(key, _identity_columns(key, dates), number, op))
    # New sales land on the last three dates of the range.
    new_key = F.col("id")
    ident = _identity_columns(new_key, dates)
    day = dates - 3 + F.floor(_unit(new_key, 5) * 3).cast("int")
    new_date = F.date_format(
        F.date_add(F.lit(START_DATE).cast("date"), F.greatest(day, F.lit(0))), "yyyy-MM-dd"
    )
    ident["create_date"] = new_date
    ident["create_ts"] = F.concat_ws(" ", new_date, _time_of_day(_unit(new_key, 3)))
    new = spark.range(rows + insert_offset, rows + insert_offset + inserts).select(
        *_row(new_key, ident, number, "I")
    )
    return changed.unionByName(new)


def split_batch(size: int, mix: tuple[float, float, float]) -> tuple[int, int, int]:
    """(updates, inserts, deletes) for a batch of ``size`` rows and a 60/30/10-style mix."""
    updates = round(size * mix[0])
    deletes = round(size * mix[2])
    return updates, size - updates - deletes, deletes


def generate(
    spark: SparkSession,
    out_dir: str,
    rows: int,
    dates: int,
    batch_sizes: list[tuple[str, int]],
    mix: tuple[float, float, float] = (0.6, 0.3, 0.1),
) -> Dataset:
    """Write the base and the named batches (in load order) under ``out_dir``; reuse a previous
    generation with the same parameters."""
    manifest = os.path.join(out_dir, "dataset.json")
    params = {"rows": rows, "dates": dates, "batches": batch_sizes, "mix": list(mix), "v": 1}
    if os.path.exists(manifest):
        with open(manifest) as handle:
            saved = json.load(handle)
        if saved.get("params") == json.loads(json.dumps(params)):
            data = saved["dataset"]
            return Dataset(
                data["rows"],
                data["dates"],
                data["base_path"],
                tuple(BatchSpec(**b) for b in data["batches"]),
                reused=True,
            )
    os.makedirs(out_dir, exist_ok=True)
    base_path = os.path.join(out_dir, "base")
    files = max(1, math.ceil(rows / 1_000_000))
    base_frame(spark, rows, dates).repartition(files).write.mode("overwrite").parquet(base_path)
    specs = []
    existing_offset = insert_offset = 0
    for number, (name, size) in enumerate(batch_sizes, start=1):
        updates, inserts, deletes = split_batch(size, mix)
        if existing_offset + updates + deletes > rows:
            raise ValueError(f"batches need more existing keys than the {rows:,}-row base has")
        path = os.path.join(out_dir, f"batch_{number}_{name}")
        frame = batch_frame(
            spark, rows, dates, number, existing_offset, insert_offset, updates, deletes, inserts
        )
        frame.coalesce(1).write.mode("overwrite").parquet(path)
        specs.append(BatchSpec(name, path, size, updates, inserts, deletes, number))
        existing_offset += updates + deletes
        insert_offset += inserts
    dataset = Dataset(rows, dates, base_path, tuple(specs))
    with open(manifest, "w") as handle:
        json.dump({"params": params, "dataset": asdict(dataset)}, handle, indent=1)
    return dataset
