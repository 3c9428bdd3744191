"""Reading a load's source and shaping its batch with the Arrow engine (no JVM): the values,
types and errors the Spark engine gives (tests/arrow/test_load_source_matches_spark.py holds
the two engines to each other)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakectl.arrow.batch import shape_batch_arrow
from lakectl.arrow.source import csv_fields, read_source_arrow, source_schema
from lakectl.errors import (
    BadInputError,
    SourceNotFoundError,
    SourceParseError,
    UsageError,
)
from lakectl.ops.create import build_metadata
from lakectl.table.batch_checks import ACTION_COL, ORDER_COL, POSITION_COL, BatchOptions
from lakectl.table.log import LoadMode
from lakectl.table.schema import parse_schema

UPSERT = BatchOptions(LoadMode.UPSERT)
CDC = BatchOptions(LoadMode.CDC, "op", {"I": "insert", "U": "update", "D": "delete"}, "ts")
UTC = dt.UTC


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def _meta(schema: str, key=("id",), parts=()):
    return build_metadata(parse_schema(schema), key, parts)


# --- CSV ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ("a,b,,", ["a", "b", "", ""]),
        ('"x, y",""', ["x, y", ""]),
        ('"he said ""hi""",b', ['he said "hi"', "b"]),
        ('"ab"c,d', ['"ab"c', "d"]),  # a closing quote followed by text: the raw text
        ('"a" ,b', ["a", "b"]),  # blanks after a closing quote are skipped
        (' "a",b', [' "a"', "b"]),  # a field not starting with a quote keeps its quotes
        ('a"b,"c', ['a"b', "c"]),  # a line ending inside quotes ends the field
        ("  a ,b ", ["  a ", "b "]),
    ],
)
def test_a_csv_line_splits_as_sparks_parser_splits_it(line, fields):
    assert csv_fields(line) == fields


def test_csv_values_are_text_with_empty_fields_null(tmp_path):
    path = _write(
        tmp_path,
        "a.csv",
        '\ufeffid,Name,note\r\n1,"x, y",\r\n\r\n   \r\n2,"",  \r\n3,"null",\\N\r4,Zoë 𝄞,""\n',
    )
    table = read_source_arrow(path, "csv", infer=False)
    assert table.schema == pa.schema(
        [("id", pa.string()), ("Name", pa.string()), ("note", pa.string())]
    )
    assert table.to_pylist() == [
        {"id": "1", "Name": "x, y", "note": None},
        {"id": "2", "Name": None, "note": "  "},
        {"id": "3", "Name": "null", "note": "\\N"},
        {"id": "4", "Name": "Zoë 𝄞", "note": None},
    ]


def test_a_csv_record_of_the_wrong_width_is_reported_with_its_file_and_line(tmp_path):
    path = _write(tmp_path, "a.csv", "id,v\n1,a\n\n2,b,c\n")
    with pytest.raises(BadInputError) as caught:
        read_source_arrow(path, "csv", infer=False)
    assert caught.value.message == (
        f"malformed CSV: {path}, line 4: 3 field(s) where the header has 2; nothing was loaded"
    )
    assert "double quotes" in (caught.value.hint or "")


def test_csv_files_of_a_folder_share_one_header(tmp_path):
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "a.csv").write_text("id,v\n1,a\n")
    (folder / "b.csv").write_text("ID,V\n2,b\n")
    (folder / "_SUCCESS").write_text("")
    table = read_source_arrow(str(folder), "csv", infer=False)
    assert table.to_pylist() == [{"id": "1", "v": "a"}, {"id": "2", "v": "b"}]
    (folder / "c.csv").write_text("v,id\n3,c\n")
    with pytest.raises(SourceParseError, match=r"c\.csv"):
        read_source_arrow(str(folder), "csv", infer=False)


@pytest.mark.parametrize("header", ["id,ID", "id,,v"])
def test_a_csv_header_with_a_repeated_or_empty_name_cannot_be_parsed(tmp_path, header):
    path = _write(tmp_path, "a.csv", f"{header}\n" + ",".join("1" * header.count(",")) + ",1\n")
    with pytest.raises(SourceParseError, match="CSV header"):
        read_source_arrow(path, "csv", infer=False)


def test_csv_types_are_inferred_as_spark_infers_them(tmp_path):
    path = _write(
        tmp_path,
        "a.csv",
        "i,l,d,big,dt,ts,b,s,n,e,sp,mix,ym,inf\n"
        "1,3000000000,1.5,99999999999999999999,2024-01-05,2024-01-05 10:00:00,true,x,,1E+2, 1,1,"
        "2024-01,Inf\n"
        "-2,4,2,5,2024-02-29,2024-01-05,FALSE,y,,5,2,2024-01-05,2024-02,-Inf\n",
    )
    table = read_source_arrow(path, "csv", infer=True)
    assert [(c.name, c.type) for c in source_schema(table).columns] == [
        ("i", "int"),
        ("l", "bigint"),
        ("d", "double"),
        ("big", "decimal(20,0)"),
        ("dt", "date"),
        ("ts", "timestamp"),
        ("b", "boolean"),
        ("s", "string"),
        ("n", "string"),
        ("e", "double"),
        ("sp", "double"),
        ("mix", "string"),
        ("ym", "timestamp"),
        ("inf", "double"),
    ]
    first = table.to_pylist()[0]
    assert first["big"] == Decimal("99999999999999999999")
    assert first["ts"] == dt.datetime(2024, 1, 5, 10, tzinfo=UTC)
    assert first["ym"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert first["inf"] == float("inf")
    assert table.column("ts")[1].as_py() == dt.datetime(2024, 1, 5, tzinfo=UTC)


def test_inference_refuses_what_it_cannot_type_as_spark_would(tmp_path):
    path = _write(tmp_path, "a.csv", "id,n\n1,١٢\n")
    with pytest.raises(UsageError) as caught:
        read_source_arrow(path, "csv", infer=True)
    assert "column 'n'" in caught.value.message
    assert "--engine spark" in (caught.value.hint or "")
    assert read_source_arrow(path, "csv", infer=False).column("n").to_pylist() == ["١٢"]


CELL_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cells=st.lists(CELL_TEXT, min_size=1, max_size=4))
def test_any_quoted_cell_text_reads_back_as_written(tmp_path, cells):
    header = ",".join(f"c{i}" for i in range(len(cells)))
    line = ",".join('"' + c.replace('"', '""') + '"' for c in cells)
    path = _write(tmp_path, "h.csv", f"{header}\n{line}\n")
    table = read_source_arrow(path, "csv", infer=False)
    assert table.to_pylist()[0] == {f"c{i}": (c or None) for i, c in enumerate(cells)}


NUMBERISH = st.text(st.sampled_from("0123456789+-.eE:TZ x,"), max_size=12)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(NUMBERISH, min_size=1, max_size=5))
def test_every_value_of_an_inferred_column_fits_its_type(tmp_path, values):
    """What Spark's inference guarantees: no value of the column is lost in its type."""
    lines = "".join(f'{i},"{v}"\n' for i, v in enumerate(values))
    path = _write(tmp_path, "n.csv", "id,v\n" + lines)
    table = read_source_arrow(path, "csv", infer=True)
    got = table.column("v").to_pylist()
    assert [g is None for g in got] == [v == "" for v in values]
    text = read_source_arrow(path, "csv", infer=False)
    meta = build_metadata(source_schema(table), ("id",))
    shaped, _ = shape_batch_arrow(text, meta, UPSERT, path)
    assert shaped.column("v").to_pylist() == got


# --- JSON lines --------------------------------------------------------------------------------


def test_json_types_are_inferred_as_spark_infers_them(tmp_path):
    path = _write(
        tmp_path,
        "a.json",
        '{"id":1,"name":"a","amt":1.5,"flag":true,"big":12345678901234567890,"mixed":1}\n\n'
        '[{"id":2,"name":null,"amt":2,"flag":false,"big":1,"mixed":"s"}]\n'
        '{"id":3,"mixed":2.50, "empty": null}\n',
    )
    table = read_source_arrow(path, "json", infer=False)
    assert [(c.name, c.type) for c in source_schema(table).columns] == [
        ("amt", "double"),
        ("big", "decimal(20,0)"),
        ("empty", "string"),
        ("flag", "boolean"),
        ("id", "bigint"),
        ("mixed", "string"),
        ("name", "string"),
    ]
    assert table.column("mixed").to_pylist() == ["1", "s", "2.50"]
    assert table.column("amt").to_pylist() == [1.5, 2.0, None]


@pytest.mark.parametrize(
    ("text", "error", "fragment"),
    [
        ('{"id":1}\n{"id":\n', SourceParseError, "line 2"),
        ("5\n", SourceParseError, "must be an object"),
        ('{"id":1,"ID":2}\n', SourceParseError, "differ only in case"),
        ('{"id":1,"a":{"b":1}}\n', UsageError, "holds an object"),
        ("\n  \n", BadInputError, "the batch is empty (no columns, no rows)"),
    ],
)
def test_json_the_arrow_engine_cannot_load_is_refused(tmp_path, text, error, fragment):
    path = _write(tmp_path, "a.json", text)
    with pytest.raises(error) as caught:
        read_source_arrow(path, "json", infer=False)
    assert fragment in caught.value.message


def test_a_missing_source_is_named(tmp_path):
    with pytest.raises(SourceNotFoundError, match="does not exist"):
        read_source_arrow(str(tmp_path / "nope.csv"), "csv", infer=False)


# --- Parquet, ORC, Avro ------------------------------------------------------------------------


def test_columnar_files_read_with_sparks_types(tmp_path):
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "u": pa.array([1, 2**32 - 1], pa.uint32()),
            "name": pa.array(["a", "b"]).dictionary_encode(),
            "ts": pa.array([0, 1_000_000_000], pa.timestamp("ns", tz="UTC")),
            "local": pa.array([0, 1_000], pa.timestamp("ms")),
            "amt": pa.array([Decimal("1.50"), None], pa.decimal128(5, 2)),
        }
    )
    pq.write_table(table, tmp_path / "a.parquet")
    read = read_source_arrow(str(tmp_path / "a.parquet"), "parquet", infer=False)
    assert [(c.name, c.type) for c in source_schema(read).columns] == [
        ("id", "int"),
        ("u", "bigint"),
        ("name", "string"),
        ("ts", "timestamp"),
        ("local", "timestamp_ntz"),
        ("amt", "decimal(5,2)"),
    ]
    orc.write_table(table.drop_columns(["name", "u"]), tmp_path / "a.orc")
    read = read_source_arrow(str(tmp_path / "a.orc"), "orc", infer=False)
    assert read.column("local").type == pa.timestamp("us", tz="UTC")  # ORC's are instants
    nested = pa.table({"id": [1], "s": pa.array([{"a": 1}])})
    pq.write_table(nested, tmp_path / "n.parquet")
    with pytest.raises(UsageError, match="column 's'"):
        read_source_arrow(str(tmp_path / "n.parquet"), "parquet", infer=False)


# --- shaping -----------------------------------------------------------------------------------


def test_a_cdc_batch_is_shaped_with_actions_order_and_positions(tmp_path):
    path = _write(
        tmp_path,
        "a.csv",
        "ID,OP,ts,day,v\n1,I,2024-01-05 10:00:00,2024-01-05,1.5\n"
        "2,D,2024-01-05 11:00:00,2024-01-06,\n1,U,2024-01-05 12:00:00,2024-01-05,x\n",
    )
    meta = _meta(
        "id int, ts timestamp, v string, day date, note string default 'n/a'", parts=("day",)
    )
    raw = read_source_arrow(path, "csv", infer=False)
    shaped, stats = shape_batch_arrow(raw, meta, CDC, path)
    assert shaped.schema.names == [
        "id",
        "ts",
        "v",
        "note",
        "day",
        POSITION_COL,
        ACTION_COL,
        ORDER_COL,
    ]
    assert shaped.schema.field("day").type == pa.date32()
    assert shaped.column(ACTION_COL).to_pylist() == ["insert", "delete", "update"]
    assert shaped.column(POSITION_COL).to_pylist() == [0, 1, 2]
    assert shaped.column("note").to_pylist() == ["n/a"] * 3
    assert shaped.column(ORDER_COL) == shaped.column("ts")
    assert stats.rows == 3
    assert stats.partitions == (("2024-01-05",), ("2024-01-06",))


@pytest.mark.parametrize(
    ("text", "schema", "options", "message"),
    [
        (
            "id,amount\n1,12\n2,12x\n3,1e\n",
            "id int, amount int",
            UPSERT,
            "column 'amount': 2 value(s) do not fit type int, e.g. '12x'",
        ),
        ("id,v\n1,a\n,b\n", "id int, v string", UPSERT, "key column 'id' is null in 1 row(s)"),
        (
            "id,op\n1,I\n2,X\n3,\n",
            "id int, ts timestamp",
            CDC,
            "column 'op': 2 row(s) have an unknown op code, e.g. 'X' (known: D, I, U)",
        ),
        ("id,v\n", "id int, v string", UPSERT, "the batch is empty (no rows); nothing was loaded"),
        (
            "v,extra\na,b\n",
            "id int, v string",
            UPSERT,
            "missing column(s) id and unknown column(s) extra; the table has id, v",
        ),
    ],
)
def test_bad_batches_are_refused_with_the_spark_engines_message(
    tmp_path, text, schema, options, message
):
    path = _write(tmp_path, "a.csv", text)
    raw = read_source_arrow(path, "csv", infer=False)
    with pytest.raises(BadInputError) as caught:
        shape_batch_arrow(raw, _meta(schema), options, path)
    assert caught.value.message == f"{path}: {message}"


PLAIN_TEXT = st.one_of(
    st.from_regex(r"-?[0-9]{1,20}(\.[0-9]{1,4})?", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2})?", fullmatch=True),
    st.text(st.sampled_from("0123456789-.: +eE"), max_size=20),
)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.none() | PLAIN_TEXT, min_size=1, max_size=8))
def test_text_casts_give_the_expression_layers_value_for_every_text(texts):
    """Casts of text take Arrow's kernels for plain texts: the values stay Spark's."""
    from lakectl.arrow.casts import spark_cast
    from lakectl.expr.spark_values import cast_function

    array = pa.array(texts, pa.string())
    for target in ("tinyint", "int", "bigint", "double", "decimal(6,2)", "date", "timestamp"):
        got = spark_cast(array, "string", target, "v")
        if target == "date":
            got = got.cast(pa.int32())
        elif target == "timestamp":
            got = got.cast(pa.int64())
        convert = cast_function("string", target)
        assert convert is not None
        expected = [None if t is None else convert(t) for t in texts]
        assert got.to_pylist() == expected, target


def test_an_all_null_parquet_column_written_without_a_type_loads_as_nulls(tmp_path):
    """pyarrow writes a column of only None as Parquet's null type; Spark reads it as NULLs of
    any column type, and so does the Arrow engine."""
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"id": [1, 2], "v": [None, None]}), path)
    raw = read_source_arrow(str(path), "parquet", infer=False)
    shaped, stats = shape_batch_arrow(raw, _meta("id bigint, v int"), UPSERT, str(path))
    assert shaped.column("v").to_pylist() == [None, None]
    assert shaped.schema.field("v").type == pa.int32() and stats.rows == 2
