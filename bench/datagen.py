"""Generated sales data in the sample ``sales`` table's schema, written as Parquet with
numpy and pyarrow (no JVM: 10 million rows take seconds).

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

import datetime as dt
import json
import os
import shutil
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, op_code string, store_id string, "
    "create_date string"
)
COLUMNS = [c.strip().split()[0] for c in SCHEMA.split(",")]
_TYPES = {"bigint": pa.int64(), "string": pa.string(), "double": pa.float64(), "int": pa.int32()}
ARROW_SCHEMA = pa.schema(
    [(c.strip().split()[0], _TYPES[c.strip().split()[1]]) for c in SCHEMA.split(",")]
)
BASE_FILE_ROWS = 1_000_000  # rows per base Parquet file (one row group each)
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


def _unit(keys: np.ndarray, salt: int) -> np.ndarray:
    """A deterministic number in [0, 1) per key and salt (a splitmix64 finalizer)."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt) * np.uint64(
            0xBF58476D1CE4E5B9
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _pick(options: list[str], u: np.ndarray) -> pa.Array:
    return pa.array(options).take(pa.array((u * len(options)).astype(np.int32)))


def _store(u: np.ndarray) -> pa.Array:
    """Skewed store ids: :data:`STORE_SHARES`, then the other stores evenly."""
    names = [f"S{n:03d}" for n in range(1, STORES + 1)]
    low = STORE_SHARES[-1][0]
    rest = len(STORE_SHARES) + 1 + np.floor((u - low) / (1 - low) * (STORES - len(STORE_SHARES)))
    index = np.where(u < low, 0, rest)
    for bound, store in reversed(STORE_SHARES):
        index = np.where(u < bound, store, index)
    return pa.array(names).take(pa.array(index.astype(np.int32) - 1))


_EPOCH_DAY = (dt.date.fromisoformat(START_DATE) - dt.date(1970, 1, 1)).days


def _day_text(day: np.ndarray) -> pa.Array:
    """``yyyy-MM-dd`` of ``START_DATE`` + ``day`` (days)."""
    dates = pa.array(day.astype(np.int32) + _EPOCH_DAY, type=pa.date32())
    return pc.strftime(dates.cast(pa.timestamp("s")), format="%Y-%m-%d")


def _timestamp_text(day: np.ndarray, u: np.ndarray) -> pa.Array:
    """``yyyy-MM-dd HH:mm:ss``: day ``day`` after ``START_DATE``, the time of day from ``u``."""
    seconds = (day.astype(np.int64) + _EPOCH_DAY) * 86_400 + np.floor(u * 86_400).astype(np.int64)
    return pc.strftime(pa.array(seconds, type=pa.timestamp("s")), format="%Y-%m-%d %H:%M:%S")


def _same(text: str, n: int) -> pa.Array:
    return pa.array([text]).take(pa.array(np.zeros(n, dtype=np.int32)))


def _identity(keys: np.ndarray, dates: int) -> dict[str, Any]:
    """Columns a stored row keeps for life: account, store, creation time and date."""
    day = np.floor(_unit(keys, 1) * dates)
    return {
        "day": day,
        "acct_id": pa.array(np.floor(_unit(keys, 2) * 200_000).astype(np.int64)),
        "create_ts": _timestamp_text(day, _unit(keys, 3)),
        "store_id": _store(_unit(keys, 4)),
        "create_date": _day_text(day),
    }


def _rows(keys: np.ndarray, ident: dict[str, Any], number: int, ops: pa.Array) -> pa.Table:
    """All columns in schema order; ``number`` 0 = the base, N = CDC batch N."""
    if number == 0:
        change_ts = ident["create_ts"]
    else:  # newer than anything stored: the base ends before March 2024
        june = (dt.date(2024, 6, number) - dt.date.fromisoformat(START_DATE)).days
        change_ts = _timestamp_text(np.full(len(keys), june), _unit(keys, 10 + number))
    salt = 100 * (number + 1)
    cols = {
        "sell_id": pa.array(keys.astype(np.int64)),
        "acct_id": ident["acct_id"],
        "change_ts": change_ts,
        "create_ts": ident["create_ts"],
        "payment_type_id": _pick(PAYMENT_TYPES, _unit(keys, salt + 1)),
        "status_id": _pick(STATUSES, _unit(keys, salt + 2)),
        "total_amt": pa.array(np.round(_unit(keys, salt + 3) * 500 + 1, 2)),
        "batch": pa.array(np.full(len(keys), number, dtype=np.int32)),
        "op_code": ops,
        "store_id": ident["store_id"],
        "create_date": ident["create_date"],
    }
    return pa.table([cols[c] for c in COLUMNS], schema=ARROW_SCHEMA)


def base_rows(start: int, stop: int, dates: int) -> pa.Table:
    """Base rows with keys ``start .. stop-1``."""
    keys = np.arange(start, stop, dtype=np.int64)
    return _rows(keys, _identity(keys, dates), 0, _same("I", len(keys)))


def batch_rows(
    rows: int,
    dates: int,
    number: int,
    existing_offset: int,
    insert_offset: int,
    updates: int,
    deletes: int,
    inserts: int,
) -> pa.Table:
    """One CDC batch: ``updates`` + ``deletes`` existing keys, then ``inserts`` new keys."""
    i = np.arange(existing_offset, existing_offset + updates + deletes, dtype=np.int64)
    keys = i * PRIME % rows  # fits int64 for any table below 3.4 billion rows
    ops = pa.array(np.where(i < existing_offset + updates, "U", "D"))
    changed = _rows(keys, _identity(keys, dates), number, ops)
    # New sales land on the last three dates of the range.
    new_keys = np.arange(rows + insert_offset, rows + insert_offset + inserts, dtype=np.int64)
    ident = _identity(new_keys, dates)
    day = np.maximum(dates - 3 + np.floor(_unit(new_keys, 5) * 3), 0)
    ident["create_date"] = _day_text(day)
    ident["create_ts"] = _timestamp_text(day, _unit(new_keys, 3))
    new = _rows(new_keys, ident, number, _same("I", inserts))
    return pa.concat_tables([changed, new])


def split_batch(size: int, mix: tuple[float, float, float]) -> tuple[int, int, int]:
    """(updates, inserts, deletes) for a batch of ``size`` rows and a 60/30/10-style mix."""
    updates = round(size * mix[0])
    deletes = round(size * mix[2])
    return updates, size - updates - deletes, deletes


def generate(
    spark: Any,
    out_dir: str,
    rows: int,
    dates: int,
    batch_sizes: list[tuple[str, int]],
    mix: tuple[float, float, float] = (0.6, 0.3, 0.1),
) -> Dataset:
    """Write the base and the named batches (in load order) under ``out_dir``; reuse a previous
    generation with the same parameters. ``spark`` is not used (kept for the callers)."""
    del spark
    manifest = os.path.join(out_dir, "dataset.json")
    params = {"rows": rows, "dates": dates, "batches": batch_sizes, "mix": list(mix), "v": 2}
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
    _write_parts(
        base_path,
        (
            base_rows(s, min(s + BASE_FILE_ROWS, rows), dates)
            for s in range(0, rows, BASE_FILE_ROWS)
        ),
    )
    specs = []
    existing_offset = insert_offset = 0
    for number, (name, size) in enumerate(batch_sizes, start=1):
        updates, inserts, deletes = split_batch(size, mix)
        if existing_offset + updates + deletes > rows:
            raise ValueError(f"batches need more existing keys than the {rows:,}-row base has")
        path = os.path.join(out_dir, f"batch_{number}_{name}")
        batch = batch_rows(
            rows, dates, number, existing_offset, insert_offset, updates, deletes, inserts
        )
        _write_parts(path, [batch])
        specs.append(BatchSpec(name, path, size, updates, inserts, deletes, number))
        existing_offset += updates + deletes
        insert_offset += inserts
    dataset = Dataset(rows, dates, base_path, tuple(specs))
    with open(manifest, "w") as handle:
        json.dump({"params": params, "dataset": asdict(dataset)}, handle, indent=1)
    return dataset


def _write_parts(path: str, parts: Any) -> None:
    """A directory of Parquet files, one per table in ``parts`` (as Spark writes a dataset)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for n, part in enumerate(parts):
        pq.write_table(
            part, os.path.join(path, f"part-{n:05d}.parquet"), row_group_size=BASE_FILE_ROWS
        )
