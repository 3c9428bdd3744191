"""A load's batch read and shaped by the Arrow engine equals the Spark engine's: the same
columns, types and values for awkward sources, and the same error (class and message; the
class alone for a source that cannot be parsed, whose Spark message is Spark's own)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lakectl.arrow.batch import shape_batch_arrow
from lakectl.arrow.source import read_source_arrow, source_schema
from lakectl.errors import LakectlError, SourceParseError
from lakectl.ops.create import build_metadata
from lakectl.storage.fs import storage_for
from lakectl.storage.source_files import first_malformed_csv_line, malformed_csv_error
from lakectl.table.batch_checks import POSITION_COL, BatchOptions
from lakectl.table.log import LoadMode
from lakectl.table.schema import parse_schema

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
CDC = BatchOptions(LoadMode.CDC, "op_code", {"I": "insert", "U": "update", "D": "delete"})
UPSERT = BatchOptions(LoadMode.UPSERT)
ORDERED = BatchOptions(LoadMode.UPSERT, order_by="ts")

# (name, file name, text, table schema (None: inferred from the batch), key, partitions, options)
CASES: list[tuple[str, str, str, str | None, tuple[str, ...], tuple[str, ...], BatchOptions]] = [
    (
        "quotes_empty_and_null_text",
        "a.csv",
        'id,Name,note\n1,"x, y",\n2,"",  \n3,"he said ""hi""","null"\n\n 	\n4,ünï,\\N\n',
        "id int, name string, note string",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "header_case_and_absent_columns",
        "b.csv",
        "ID,AMOUNT\n1,1.5\n2,\n",
        "id int, amount decimal(10,2), note string, flag boolean default true",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "numbers_dates_and_times_as_text",
        "c.csv",
        "id,i,l,d,f,dec,day,ts,b\n"
        "1, 7 ,3000000000,1e3,1.5f,12.345,2024-01-05,2024-01-05 10:00:00,true\n"
        "2,+8,-4,-0.5,NaN,-0.005,2024-1-5,2024-01-05T10:00:00+02:00,NO\n"
        "3,,,Infinity,,99999999.99,2024-02-29 ,2024-01-05,1\n",
        "id int, i int, l bigint, d double, f float, dec decimal(10,2), day date, ts timestamp, "
        "b boolean",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "bad_number",
        "d.csv",
        "id,amount\n1,12\n2,12x\n3,1e\n",
        "id int, amount int",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "decimal_too_wide",
        "e.csv",
        "id,amount\n1,123456789.5\n",
        "id int, amount decimal(5,2)",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "missing_and_unknown_columns",
        "h.csv",
        "v,extra\na,b\n",
        "id int, v string",
        ("id",),
        (),
        UPSERT,
    ),
    ("short_record", "j.csv", "id,v\n1,a\n2\n", "id int, v string", ("id",), (), UPSERT),
    (
        "cdc_codes",
        "m.csv",
        "id,v,OP_CODE\n1,a,I\n2,b,U\n3,,D\n",
        "id int, v string",
        ("id",),
        (),
        CDC,
    ),
    (
        "partitions_and_order",
        "p.csv",
        "id,day,ts\n1,2024-01-05,2024-01-05 10:00:00\n2,2024-01-06,2024-01-05 11:00:00\n"
        "3,2024-01-05,2024-01-05 09:00:00\n",
        "id int, ts timestamp, day date",
        ("id",),
        ("day",),
        ORDERED,
    ),
    (
        "unicode_and_crlf",
        "q.csv",
        '\ufeffid,name\r\n1,"Zoë ☃"\r\n2,𝄞\r\n',
        "id int, name string",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "inferred_types",
        "r.csv",
        "i,l,d,big,dt,ts,b,s,n,e,sp,mix,ym\n"
        "1,3000000000,1.5,99999999999999999999,2024-01-05,2024-01-05 10:00:00,true,x,,1E+2, 1,1,"
        "2024-01\n"
        "-2,4,2,5,2024-02-29,2024-01-05,FALSE,y,,5,2,2024-01-05,2024-02\n",
        None,
        ("i",),
        (),
        UPSERT,
    ),
    (
        "inferred_types_of_odd_texts",
        "r2.csv",
        "id,a,b,c,d,e,f,g,h,i,j,k,l\n"
        '1,2024-01-05 10:00,0.5e-3,1d,true ,+5,-0,1.,NaN,Infinity,"1,000",2024-01-05T10:00:00.1+01:00,'
        "0x1p3\n"
        "2,2024-01-05,.5,2f,false,007,12345678901,-.5,-Infinity,-Inf,2,2024-01-05 10:00:00 UTC,7\n",
        None,
        ("id",),
        (),
        UPSERT,
    ),
    (
        "json_types_and_missing_keys",
        "s.json",
        '{"id":1,"name":"a","amt":1.5,"flag":true,"big":12345678901234567890,"mixed":1}\n\n'
        '{"id":2,"name":null,"amt":2,"flag":false,"big":1,"mixed":"s"}\n'
        '{"id":3,"mixed":2.50}\n',
        None,
        ("id",),
        (),
        UPSERT,
    ),
    (
        "json_into_table_types",
        "t.json",
        '{"id":1,"amt":"12.5","day":"2024-01-05","n":3000000000}\n{"ID":2,"amt":7}\n',
        "id int, amt decimal(10,2), day date, n int",
        ("id",),
        (),
        UPSERT,
    ),
    (
        "json_texts_of_mixed_values",
        "w.json",
        '{"id":1,"v":1e5,"w":true,"x":-0}\n{"id":2,"v":"t","w":"u","x":"y"}\n'
        '{"id":3,"v":-1.25E-3,"w":false,"x":12}\n{"id":4,"v":NaN,"x":1.0}\n',
        None,
        ("id",),
        (),
        UPSERT,
    ),
    (
        "quote_oddities",
        "x.csv",
        'id,v,w\n1,"ab"c,d\n2,"a" ,b\n3, "a",b\n4,a"b,"c\n',
        "id int, v string, w string",
        ("id",),
        (),
        UPSERT,
    ),
    ("json_array_line", "v.json", '[{"id":1},{"id":2}]\n', "id int", ("id",), (), UPSERT),
]


def _meta(raw_schema: str | None, key: tuple[str, ...], parts: tuple[str, ...]):
    return build_metadata(parse_schema(raw_schema), key, parts) if raw_schema else None


def _spark_rows(spark, path: str, fmt: str, case) -> tuple[Any, ...]:
    from pyspark.sql import functions as F

    from lakectl.spark.batch import shape_batch
    from lakectl.spark.sources import read_source

    _, _, _, schema, key, parts, options = case
    try:
        raw = read_source(spark, path, fmt, infer=schema is None)
        meta = _meta(schema, key, parts) or _inferred_meta(raw.schema.fields, key, parts)
        batch, stats = shape_batch(raw, meta, options, path)
        columns = [
            F.unix_micros(F.col(f"`{f.name}`")).alias(f.name)
            if f.dataType.simpleString() == "timestamp"
            else F.col(f"`{f.name}`")
            for f in batch.schema.fields
        ]
        try:
            rows = batch.select(*columns).orderBy(POSITION_COL).collect()
        except Exception as exc:  # a FAILFAST error the checks' pass did not meet
            raise SourceParseError(str(exc)[:200]) from exc
    except SourceParseError as exc:
        if fmt == "csv":  # as `load` reports it
            found = first_malformed_csv_line(*storage_for(path), path)
            if found is not None:
                return _error(malformed_csv_error(found))
        return _error(exc)
    except LakectlError as exc:
        return _error(exc)
    names = [n for n in batch.columns if n != POSITION_COL]
    values = [tuple(_plain(r[n]) for n in names) for r in rows]
    types = [c.type for c in meta.schema.columns]
    return (names, types, values, stats.rows, sorted(stats.partitions))


def _inferred_meta(fields, key, parts):
    from lakectl.table.schema import Column, Schema, normalize_type

    schema = Schema(
        tuple(Column(f.name, normalize_type(f.dataType.simpleString())) for f in fields)
    )
    return build_metadata(schema, key, parts)


def _arrow_rows(path: str, fmt: str, case) -> tuple[Any, ...]:
    import pyarrow as pa

    _, _, _, schema, key, parts, options = case
    try:
        raw = read_source_arrow(path, fmt, infer=schema is None)
        meta = _meta(schema, key, parts) or build_metadata(source_schema(raw), key, parts)
        batch, stats = shape_batch_arrow(raw, meta, options, path)
    except LakectlError as exc:
        return _error(exc)
    names = [n for n in batch.schema.names if n != POSITION_COL]
    columns = []
    for name in names:
        column = batch.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        columns.append([_plain(v) for v in column.to_pylist()])
    values = list(zip(*columns, strict=True))
    types = [c.type for c in meta.schema.columns]
    return (names, types, values, stats.rows, sorted(stats.partitions))


def _plain(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime):
        raise AssertionError("timestamps are compared as microseconds")
    return value


def _error(exc: LakectlError) -> tuple[Any, ...]:
    if isinstance(exc, SourceParseError):
        return ("error", "SourceParseError")
    return ("error", type(exc).__name__, exc.message, exc.hint)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_arrow_batch_equals_sparks(spark, tmp_path, case):
    _, name, text, *_ = case
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    fmt = "csv" if name.endswith(".csv") else "json"
    expected = _spark_rows(spark, str(path), fmt, case)
    assert _arrow_rows(str(path), fmt, case) == expected


@pytest.mark.parametrize(
    ("source", "fmt", "schema", "key", "parts", "options"),
    [
        ("sales/base.csv", "csv", None, ("sell_id",), ("create_date",), UPSERT),
        (
            "sales/cdc_batch_1.csv",
            "csv",
            "sell_id bigint, acct_id bigint, change_ts timestamp, create_ts timestamp, "
            "payment_type_id string, status_id string, total_amt decimal(10,2), batch int, "
            "store_id string, create_date date",
            ("sell_id",),
            ("create_date",),
            CDC,
        ),
        ("doctors/doctors.avro", "avro", None, ("number",), (), UPSERT),
    ],
    ids=["sales_base_inferred", "sales_cdc", "doctors_avro"],
)
def test_arrow_batch_of_the_samples_equals_sparks(spark, source, fmt, schema, key, parts, options):
    case = (source, source, "", schema, key, parts, options)
    path = str(SAMPLES / source)
    expected = _spark_rows(spark, path, fmt, case)
    assert expected[0] != "error"
    assert _arrow_rows(path, fmt, case) == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_arrow_batch_of_columnar_files_equals_sparks(spark, tmp_path, fmt):
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "ID": pa.array([1, 2, 3], pa.int64()),
            "n": pa.array([5, 2**40 + 7, None], pa.int64()),  # wraps into an int, as Spark's cast
            "amt": pa.array([Decimal("1.505"), None, Decimal("-2.000")], pa.decimal128(6, 3)),
            "day": pa.array(["2024-01-05", "x", None]),
            "ts": pa.array([0, 1_700_000_000_123_456, None], pa.timestamp("us", tz="UTC")),
        }
    )
    path = tmp_path / f"a.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        orc.write_table(table, path)
    for schema in ("id bigint, n int, amt decimal(10,2), day string, ts timestamp", None):
        case = (fmt, path.name, "", schema, ("id",), (), UPSERT)
        expected = _spark_rows(spark, str(path), fmt, case)
        assert _arrow_rows(str(path), fmt, case) == expected
    case = (fmt, path.name, "", "id bigint, day date", ("id",), (), UPSERT)
    table = table.drop_columns(["n", "amt", "ts"])
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        orc.write_table(table, path)
    expected = _spark_rows(spark, str(path), fmt, case)
    assert expected[0] == "error"
    assert _arrow_rows(str(path), fmt, case) == expected
