"""One random table, three back ends: reads with a random ``--where`` and the table's random
Type 7 statements (installed with ``apply_updates``, effective at random valid times) give the
same rows through Spark with lakectl's data source, Spark running the live-row kernel in its
tasks (the data source turned off with ``spark.lakectl.read.native=false``: the fallback for
reads it cannot serve) and the Arrow engine, or fail the same way.

The table has every column type the data source decodes, NaN, infinities and -0.0, strings such
as '02' and ' 2', three loads (a delta and delete deltas) and a partition per boolean value.
It has no timestamp column: the data source does not read one, so a timestamp column would
send every read to the kernel; timestamps take part as values (``CAST(day AS timestamp)``,
literals).

The seed is fixed; ``LAKECTL_FUZZ_READS`` raises the budget of reads (``make fuzz``).
"""

from __future__ import annotations

import math
import os
import random
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakectl
from lakectl.errors import LakectlError, engine_error
from lakectl.spark.native_read import ENABLED_CONF
from lakectl.table.schema import parse_schema
from tests.support.statement_fuzz import StatementGenerator, random_rows, updates_text

EXAMPLES = int(os.environ.get("LAKECTL_FUZZ_READS", "8"))
DDL = (
    "id int not null, i int, b bigint, f float, d double, flag boolean, s string, "
    "amount decimal(10,2), day date, sm smallint"
)
NAMES = [c.split()[0] for c in DDL.split(", ")]
SCHEMA = parse_schema(DDL)
AS_OF = [None, 0, 150, 300, -1]  # valid times (ms) that make different statements effective
DATA_SOURCE_SCAN = "lakectl ACID merge-on-read"  # the data source's node in Spark's plan
KERNEL_SCAN = "MapInArrow"  # the kernel's node in Spark's plan
# What the Arrow engine refuses although Spark evaluates it: empty, and any refusal fails the
# test. Generated statements it would refuse are left out of the table's statements; a read it
# refuses compares the two Spark paths only.
KNOWN_ARROW_REFUSALS: dict[str, str] = {}
# Statements of kinds the Arrow engine once refused (non-integer modulo, floor and ceil of
# doubles, a cast of an int to a decimal): each is evaluated now.
ONCE_REFUSED = {
    "mod (of non-integers)": "UPDATE t SET d = d % 4;",
    "floor (of a floating-point number)": "UPDATE t SET i = floor(d) WHERE abs(d) < 1000;",
    "ceil (of a floating-point number)": "UPDATE t SET i = ceil(d) WHERE abs(d) < 1000;",
    "cast (from int to decimal(10,2))": "UPDATE t SET amount = CAST(i AS decimal(10,2));",
}


class _Statements(StatementGenerator):
    """The statement generator of the statement differential, over this table: its timestamp
    is the day's midnight, and no statement sets a timestamp column."""

    def column(self, kind: str) -> str:
        return "CAST(day AS timestamp)" if kind == "ts" else super().column(kind)

    def statement(self) -> str:
        while True:
            text = super().statement()
            if not re.search(r"(SET |, )ts = ", text):
                return text


def _rows(rng: random.Random) -> list[dict[str, Any]]:
    """The statement differential's random rows without their timestamp, a smallint, and
    awkward values in the first rows."""
    rows = []
    for row in random_rows(rng):
        row.pop("ts")
        rows.append({**row, "sm": rng.choice([None, rng.randint(-32768, 32767)])})
    awkward = [
        {"d": math.nan, "f": math.nan, "s": "02", "sm": -32768},
        {"d": math.inf, "f": 3.4e38, "s": " 2", "sm": 32767},
        {"d": -math.inf, "f": -math.inf, "s": "x'y", "amount": Decimal("99999999.99")},
        {"d": -0.0, "f": -0.0, "s": "", "amount": Decimal("-99999999.99")},
    ]
    for row, values in zip(rows, awkward, strict=False):
        row.update(values)
    return rows


def _frame(spark: Any, rows: list[dict[str, Any]], ops: list[str] | None = None) -> Any:
    """``rows`` as a DataFrame of the table's columns (and a CDC batch's ``op``)."""
    ddl = DDL.replace(" not null", "") + (", op string" if ops else "")
    data = [tuple(r[n] for n in NAMES) for r in rows]
    if ops:
        data = [(*row, op) for row, op in zip(data, ops, strict=True)]
    return spark.createDataFrame(data, ddl)


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> Any:  # type: ignore[no-untyped-def]
    """The table after an insert, two CDC batches (updates, deletes, inserts) and a file of
    random statements; each row's partition is its ``flag``."""
    rng = random.Random(31)
    tmp: Path = tmp_path_factory.mktemp("three_backends")
    rows = _rows(rng)
    created = lakectl.create_table(
        str(tmp / "t"), schema=DDL, primary_key="id", partition_by="flag", spark=spark
    )
    created.load(_frame(spark, rows), mode="append")
    live = {r["id"]: r for r in rows}
    for batch in range(2):
        fresh = [
            {k: v for k, v in r.items() if k not in ("id", "ts")}
            for r in random_rows(random.Random(rng.randrange(10**6)))
        ]
        changes, ops = [], []
        for key in rng.sample(sorted(live), 8):
            if rng.random() < 0.5:
                changes.append(live.pop(key))
                ops.append("D")
            else:  # new values; a key keeps its partition
                live[key] = {**live[key], **fresh[key % len(fresh)], "flag": live[key]["flag"]}
                changes.append(live[key])
                ops.append("U")
        for key in range(len(rows) + 1 + 3 * batch, len(rows) + 4 + 3 * batch):
            live[key] = {**fresh[key % len(fresh)], "id": key, "sm": None}
            changes.append(live[key])
            ops.append("I")
        created.load(_frame(spark, changes, ops), mode="cdc", op_column="op")
    text = _statements_arrow_reads(updates_text(rng, 20, _Statements(rng)), 8)
    (tmp / "t.updates").write_text(text)
    created.apply_updates(str(tmp / "t.updates"))
    return created


def _arrow_refusal(statement: str) -> str | None:
    """Why the Arrow engine refuses ``statement`` on this table, or None."""
    from lakectl.arrow.statements import compile_statements
    from lakectl.updates import parse_updates_text

    parsed = parse_updates_text(statement + "\n", "t.updates", None, SCHEMA).statements
    try:
        compile_statements(list(parsed), SCHEMA)
    except LakectlError as exc:
        return str(exc)
    return None


def _statements_arrow_reads(text: str, count: int) -> str:
    """The first ``count`` statements of ``text`` the Arrow engine evaluates (with their
    effective times); the others must be known refusals."""
    kept, lines = 0, []
    for line in text.splitlines():
        if line.startswith("--"):
            lines.append(line)
            continue
        refusal = _arrow_refusal(line)
        if refusal is None and kept < count:
            lines.append(line)
            kept += 1
        elif refusal is not None:
            assert _known_refusal(("fails", refusal)), refusal
    assert kept == count, text
    return "\n".join(lines) + "\n"


def _plain(value: Any) -> Any:
    """A value both engines hand over alike (NaN is not equal to itself)."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def _failure(exc: BaseException) -> tuple[str, str]:
    """The kind of a failed read: an overflow, a refusal (its message), else its class."""
    known = exc if isinstance(exc, LakectlError) else engine_error(exc)
    text = str(known if known is not None else exc)
    if "overflow" in text.lower():
        return ("fails", "overflow")
    if known is not None:
        return ("fails", text)
    return ("fails", type(exc).__name__)


def _spark_read(spark: Any, table: Any, native: bool, **read: Any) -> Any:
    """The rows (a Counter) Spark reads with the data source on or off (then by the kernel in
    its tasks), or how it failed; asserts that the read took the path asked for."""
    spark.conf.set(ENABLED_CONF, "true" if native else "false")
    try:
        frame = table.scan(**read).to_spark()
        plan = frame._jdf.queryExecution().executedPlan().toString()
        # A condition Spark folds to false reads nothing: an empty local scan.
        assert (DATA_SOURCE_SCAN if native else KERNEL_SCAN) in plan or (
            "LocalTableScan <empty>" in plan
        ), plan
        assert native or DATA_SOURCE_SCAN not in plan, plan
        return Counter(tuple(_plain(r[n]) for n in NAMES) for r in frame.collect())
    except AssertionError:
        raise
    except Exception as exc:
        return _failure(exc)
    finally:
        spark.conf.unset(ENABLED_CONF)


def _arrow_read(table: Any, **read: Any) -> Any:
    try:
        rows = table.scan(**read).to_arrow().to_pylist()
    except Exception as exc:
        return _failure(exc)
    return Counter(tuple(_plain(r[n]) for n in NAMES) for r in rows)


def _three(spark: Any, table: Any, **read: Any) -> tuple[Any, Any, Any]:
    return (
        _spark_read(spark, table, True, **read),
        _spark_read(spark, table, False, **read),
        _arrow_read(table, **read),
    )


def _known_refusal(outcome: Any) -> bool:
    return isinstance(outcome, tuple) and any(k in outcome[1] for k in KNOWN_ARROW_REFUSALS)


def test_three_back_ends_agree_on_random_reads(spark, table) -> None:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.randoms(use_true_random=False), st.sampled_from(AS_OF))
    def check(rng: random.Random, as_of: int | None) -> None:
        where = _Statements(rng).predicate(rng.choice([1, 2]))
        data_source, kernel, arrow = _three(spark, table, where=where, as_of=as_of)
        context = f"where {where!r}, as_of {as_of}"
        assert data_source == kernel, context
        if _known_refusal(arrow):
            counts["arrow refuses (known)"] += 1
            return
        assert data_source == arrow, context
        counts["failed" if isinstance(arrow, tuple) else "rows"] += 1

    check()
    assert counts["rows"] >= EXAMPLES // 2, counts


def test_the_table_reads_the_same_without_a_where(spark, table) -> None:  # type: ignore[no-untyped-def]
    """The statements applied (all, and at each time) and the raw rows, through all three."""
    for as_of in AS_OF:
        data_source, kernel, arrow = _three(spark, table, as_of=as_of)
        assert data_source == kernel, as_of
        if not _known_refusal(arrow):
            assert data_source == arrow, as_of
    raw = _arrow_read(table, raw=True)
    assert isinstance(raw, Counter) and sum(raw.values()) > 30


@pytest.mark.parametrize("kind", sorted(ONCE_REFUSED))
def test_the_arrow_engine_evaluates_what_spark_reads(kind: str) -> None:
    """The Arrow engine evaluates every statement Spark reads, these kinds included."""
    refused = _arrow_refusal(ONCE_REFUSED[kind])
    assert refused is None, refused
