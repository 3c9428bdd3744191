"""Spark's ``hash()`` and a bucketed table's bucket computed in numpy equal Spark's: on values
Spark 4 hashed once (pure), and on random batches of every key type Spark hashes in the same
query (edge values, NULLs, -0.0 and NaN, strings and binaries of every tail length, decimals on
both sides of 18 digits, multi-column keys, pmod of negative hashes)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lakectl.errors import UsageError
from lakectl.kernel.spark_hash import bucket_ids, spark_hash, unsupported_key_type

UTC = dt.UTC


def _dec(text: str, precision: int, scale: int) -> pa.Array:
    return pa.array([Decimal(text)], pa.decimal128(precision, scale))


# (what, columns, Spark 4's hash of them), from `SELECT hash(...)` in Spark.
KNOWN: list[tuple[str, list[pa.Array], int]] = [
    ("int 1", [pa.array([1], pa.int32())], -559580957),
    ("int 0", [pa.array([0], pa.int32())], 933211791),
    ("int min", [pa.array([-(2**31)], pa.int32())], 723455942),
    ("int max", [pa.array([2**31 - 1], pa.int32())], 133916647),
    ("tinyint -1", [pa.array([-1], pa.int8())], -1604776387),
    ("smallint -1", [pa.array([-1], pa.int16())], -1604776387),
    ("true", [pa.array([True])], -559580957),
    ("false", [pa.array([False])], 933211791),
    ("bigint 1", [pa.array([1], pa.int64())], -1712319331),
    ("bigint min", [pa.array([-(2**63)], pa.int64())], -853646085),
    ("bigint -1", [pa.array([-1], pa.int64())], -939490007),
    ("double -0.0", [pa.array([-0.0])], -1670924195),
    ("double 0.0", [pa.array([0.0])], -1670924195),
    ("double NaN", [pa.array([math.nan])], -1281358385),
    ("double 1.5", [pa.array([1.5])], 1290763749),
    ("float -0.0", [pa.array([-0.0], pa.float32())], 933211791),
    ("float NaN", [pa.array([math.nan], pa.float32())], -349261430),
    ("float 1.5", [pa.array([1.5], pa.float32())], -221251528),
    ("date", [pa.array([dt.date(1970, 1, 2)])], -559580957),
    ("timestamp_ntz", [pa.array([dt.datetime(1970, 1, 1, 0, 0, 1)])], -1715802514),
    ("timestamp", [pa.array([dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)])], -1715802514),
    ("timestamp in s", [pa.array([1], pa.timestamp("s"))], -1715802514),
    ("''", [pa.array([""])], 142593372),
    ("'a'", [pa.array(["a"])], 1485273170),
    ("'ab'", [pa.array(["ab"])], -97053317),
    ("'abc'", [pa.array(["abc"])], 1322437556),
    ("'abcd'", [pa.array(["abcd"])], -396302900),
    ("'abcde'", [pa.array(["abcde"])], 814637928),
    ("'é'", [pa.array(["é"])], 2119106806),
    ("'日本語'", [pa.array(["日本語"])], -1143049834),
    ("'Spark'", [pa.array(["Spark"])], 228093765),
    ("X'FF'", [pa.array([b"\xff"])], 1398487324),
    ("X'80FF7F'", [pa.array([b"\x80\xff\x7f"])], 1911184379),
    ("X'00000000FF'", [pa.array([b"\x00\x00\x00\x00\xff"])], 723935196),
    ("12.34 decimal(18,2)", [_dec("12.34", 18, 2)], -1028144669),
    ("12.34 decimal(19,2)", [_dec("12.34", 19, 2)], 1123058251),
    ("-12.34 decimal(38,2)", [_dec("-12.34", 38, 2)], -378694793),
    ("0 decimal(38,2)", [_dec("0", 38, 2)], -783713497),
    ("1.28 decimal(38,2)", [_dec("1.28", 38, 2)], -544401882),
    ("-1.28 decimal(38,2)", [_dec("-1.28", 38, 2)], 775851899),
    ("10^38-1 decimal(38,0)", [_dec("9" * 38, 38, 0)], -817514053),
    ("1, 'a'", [pa.array([1], pa.int32()), pa.array(["a"])], -936062819),
    (
        "1, NULL, 'a'",
        [pa.array([1], pa.int32()), pa.array([None], pa.string()), pa.array(["a"])],
        -936062819,
    ),
    ("NULL", [pa.array([None], pa.int32())], 42),
]


@pytest.mark.parametrize(("columns", "expected"), [k[1:] for k in KNOWN], ids=[k[0] for k in KNOWN])
def test_known_values_hash_as_in_spark(columns: list[pa.Array], expected: int) -> None:
    assert spark_hash(columns).tolist() == [expected]


def test_bucket_is_the_positive_modulus_of_a_negative_hash() -> None:
    table = pa.table({"ID": pa.array([1, 1, None], pa.int32())})
    # hash(1) = -559580957; Spark: pmod(hash(1), 7) = 2
    assert bucket_ids(table, ["id"], 7).tolist() == [2, 2, 42 % 7]
    assert bucket_ids(table, ["ID"], 1).tolist() == [0, 0, 0]
    assert bucket_ids(table, ["id"], 7).dtype == np.int32


def test_slices_chunks_and_encodings_hash_as_their_values() -> None:
    """Offsets into shared buffers (slices, chunks) and other encodings of the same values."""
    columns = [
        pa.array([None, "x", "", "ab¢de", "0123456789abcdefg", None]),
        pa.array([None, b"", b"\xff\xfe\xfd", b"abcd", None, b"q"]),
        pa.array([True, None, False, True, False, None]),
        pa.array(
            [Decimal("1.5"), None, Decimal("-2"), Decimal(0), None, Decimal("3.25")],
            pa.decimal128(30, 2),
        ),
        pa.array(
            [Decimal("1.5"), None, Decimal("-2"), Decimal(0), None, Decimal("3.25")],
            pa.decimal128(10, 2),
        ),
        pa.array([None, -1.0, -0.0, math.nan, 2.5, None]),
    ]
    whole = spark_hash(columns)
    assert spark_hash([c.slice(2) for c in columns]).tolist() == whole[2:].tolist()
    assert spark_hash([pa.chunked_array([c[:3], c[3:]]) for c in columns]).tolist() == (
        whole.tolist()
    )
    text = columns[0]
    for encoded in (
        text.cast(pa.large_string()),
        text.cast(pa.string_view()),
        text.dictionary_encode(),
        text.cast(pa.binary()),
    ):
        assert spark_hash([encoded]).tolist() == spark_hash([text]).tolist()


def test_types_not_computed_here_are_named_and_refused() -> None:
    assert unsupported_key_type([pa.int32(), pa.string(), pa.decimal128(38, 0)]) is None
    assert unsupported_key_type([pa.int32(), pa.list_(pa.int32()), pa.uint8()]) == (
        "a bucketed table's key of type list<item: int32>"
    )
    with pytest.raises(UsageError) as caught:
        spark_hash([pa.array([1], pa.int32()), pa.array([{"a": 1}])])
    assert "cannot compute the bucket of a bucketed table's key of type struct<a: int64>" in str(
        caught.value
    )
    assert caught.value.hint == "use --engine spark"


# --- against Spark on random batches ------------------------------------------------------------


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    top = 10**precision - 1
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63 - 1, -(2**63), top, -top]
    unscaled = st.one_of(
        st.sampled_from([e for e in edges if abs(e) <= top]), st.integers(-top, top)
    )
    return unscaled.map(lambda u: Decimal(f"{u}E-{scale}"))


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=17)
_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=0, max_size=17)
# name, Spark type, Arrow type, values
COLUMNS: list[tuple[str, str, pa.DataType, st.SearchStrategy[Any]]] = [
    ("b", "boolean", pa.bool_(), st.booleans()),
    ("i8", "tinyint", pa.int8(), st.integers(-(2**7), 2**7 - 1)),
    ("i16", "smallint", pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    ("i32", "int", pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    ("i64", "bigint", pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    ("f32", "float", pa.float32(), st.floats(width=32)),
    ("f64", "double", pa.float64(), st.floats()),
    ("s", "string", pa.string(), st.one_of(_TEXT, _ASCII)),
    ("bin", "binary", pa.binary(), st.binary(max_size=17)),
    ("d", "date", pa.date32(), st.dates()),
    ("ts", "timestamp", pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(UTC))),
    ("ntz", "timestamp_ntz", pa.timestamp("us"), st.datetimes()),
    ("d18", "decimal(18,4)", pa.decimal128(18, 4), _decimals(18, 4)),
    ("d19", "decimal(19,0)", pa.decimal128(19, 0), _decimals(19, 0)),
    ("d38", "decimal(38,10)", pa.decimal128(38, 10), _decimals(38, 10)),
]
NAMES = [c[0] for c in COLUMNS]
KEYS = {  # multi-column keys: every column, reversed, and a few mixes
    "all": NAMES,
    "reversed": NAMES[::-1],
    "s_i32": ["s", "i32"],
    "d38_bin_f64": ["d38", "bin", "f64"],
    "ntz_d_b_d19": ["ntz", "d", "b", "d19"],
}
ROW = st.tuples(*[st.none() | values for _, _, _, values in COLUMNS])
EDGES = [  # one row per line: extremes, -0.0, NaN, infinities, strings of 0..17 bytes
    (
        True,
        -128,
        -32768,
        -(2**31),
        -(2**63),
        -0.0,
        -0.0,
        "",
        b"",
        dt.date(1, 1, 1),
        dt.datetime(1, 1, 1, tzinfo=UTC),
        dt.datetime(1, 1, 1),
        Decimal("-99999999999999.9999"),
        Decimal("-" + "9" * 19),
        Decimal("-" + "9" * 28 + ".9999999999"),
    ),
    (
        False,
        127,
        32767,
        2**31 - 1,
        2**63 - 1,
        math.nan,
        math.nan,
        "é",
        b"\x80",
        dt.date(9999, 12, 31),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        Decimal("99999999999999.9999"),
        Decimal("9" * 19),
        Decimal("9" * 28 + ".9999999999"),
    ),
    (
        None,
        0,
        0,
        0,
        0,
        math.inf,
        -math.inf,
        "日本語日本語",
        b"\xff\xff\xff\xff\xff",
        None,
        None,
        None,
        Decimal(0),
        Decimal(0),
        Decimal(0),
    ),
    *[
        (
            None,
            None,
            None,
            None,
            None,
            -math.inf,
            math.inf,
            "x" * n,
            bytes(range(200, 200 + n)),
            None,
            None,
            None,
            None,
            None,
            None,
        )
        for n in range(18)
    ],
    tuple([None] * len(COLUMNS)),
]


def _arrow_batch(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            name: pa.array([r[i] for r in rows], arrow_type)
            for i, (name, _, arrow_type, _) in enumerate(COLUMNS)
        }
    )


def test_random_batches_hash_and_bucket_as_in_spark(spark: Any) -> None:
    from pyspark.sql import functions as F

    ddl = ", ".join(f"{name} {spark_type}" for name, spark_type, _, _ in COLUMNS)
    checked = {"rows": 0, "batches": 0}

    @settings(
        max_examples=8,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(ROW, min_size=20, max_size=60), st.sampled_from([1, 2, 7, 4096]))
    @example(EDGES, 7)
    def check(rows: list[tuple[Any, ...]], buckets: int) -> None:
        batch = _arrow_batch(rows)
        frame = spark.createDataFrame(batch, schema=ddl)
        assert frame.schema.simpleString() == f"struct<{ddl.replace(' ', ':').replace(',:', ',')}>"
        wanted = [F.hash(name).alias(name) for name in NAMES]
        wanted += [F.hash(*cols).alias(key) for key, cols in KEYS.items()]
        wanted += [F.pmod(F.hash(*KEYS["all"]), F.lit(buckets)).alias("bucket")]
        result = frame.select(*wanted).collect()
        ours = {name: spark_hash([batch.column(name)]).tolist() for name in NAMES}
        ours |= {
            key: spark_hash([batch.column(c) for c in cols]).tolist() for key, cols in KEYS.items()
        }
        ours["bucket"] = bucket_ids(batch, KEYS["all"], buckets).tolist()
        for name, values in ours.items():
            theirs = [row[name] for row in result]
            bad = [i for i, (a, b) in enumerate(zip(values, theirs, strict=True)) if a != b]
            assert not bad, (name, [rows[i] for i in bad[:3]], values[bad[0]], theirs[bad[0]])
        checked["rows"] += len(rows)
        checked["batches"] += 1

    check()
    assert checked["batches"] >= 8 and checked["rows"] > 200
