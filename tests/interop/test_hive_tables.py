"""Tables Hive wrote (../shared/interop) read as Hive reads them.

Every expectation is computed independently from the raw ORC files with pyorc: insert events
minus delete events matched by (originalTransaction, bucket, rowId), for the valid write ids;
original files get Hive 3's synthetic row ids. The README's figures are asserted as well.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import pyorc
import pytest

from lakectl.errors import FormatError
from lakectl.storage.fs import storage_for
from lakectl.table.orc_files import require_acid_file

NO_OPEN = 9223372036854775807
DELETE = 2
ORIGINAL = re.compile(r"^(\d+)_\d+(?:_copy_(\d+))?$")


# --- an independent oracle from the raw files -------------------------------------------------


def read_orc(path: Path) -> list[tuple]:
    with path.open("rb") as handle:
        return list(pyorc.Reader(handle))


def decode_bucket(value: int) -> int:
    """Hive BucketCodec V1: bits 16..27 hold the bucket id."""
    return (value >> 16) & 0xFFF


class Valid:
    """Write ids a reader sees: at most ``hwm`` and not in ``exceptions``."""

    def __init__(self, hwm: int = NO_OPEN, exceptions: Iterable[int] = ()) -> None:
        self.hwm, self.exceptions = hwm, set(exceptions)

    def __call__(self, write_id: int) -> bool:
        return write_id <= self.hwm and write_id not in self.exceptions


def acid_rows(insert_files: list[Path], delete_files: list[Path], valid: Valid) -> list[tuple]:
    """Rows of ACID event files after applying the valid delete events."""
    deleted = {
        (e[1], e[2], e[3])
        for f in delete_files
        for e in read_orc(f)
        if e[0] == DELETE and valid(e[4])
    }
    return [
        tuple(e[5])
        for f in insert_files
        for e in read_orc(f)
        if e[0] != DELETE and valid(e[4]) and (e[1], e[2], e[3]) not in deleted
    ]


def original_rows(table: Path) -> list[tuple]:
    """Original files with synthetic ROW__IDs (write id 0, bucket from the file name, rowId
    counted across the bucket's files, `_copy_N` after the base file), minus delete events."""
    by_bucket: dict[int, list[tuple[int, Path]]] = {}
    for f in table.iterdir():
        m = ORIGINAL.match(f.name)
        if f.is_file() and m:
            by_bucket.setdefault(int(m.group(1)), []).append((int(m.group(2) or 0), f))
    identified: dict[tuple[int, int, int], tuple] = {}
    for bucket, files in by_bucket.items():
        row_id = 0
        for _, f in sorted(files):
            for row in read_orc(f):
                identified[(0, bucket, row_id)] = row
                row_id += 1
    for d in table.glob("delete_delta_*"):
        for f in d.glob("bucket_*"):
            for e in read_orc(f):
                if e[0] == DELETE:
                    identified.pop((e[1], decode_bucket(e[2]), e[3]), None)
    return list(identified.values())


def spark_value(value):
    """How a value comes back through Spark and lakectl's JSON output."""
    if isinstance(value, datetime):
        # Spark hands timestamps to Python as naive local time; JSON renders them ISO.
        return value.astimezone().replace(tzinfo=None).isoformat()
    return value


def snapshot_rows(result) -> list[tuple]:
    data = result.json
    return [tuple(r[c] for c in data["columns"]) for r in data["rows"]]


def tree_state(root: Path) -> list[tuple[str, int, int]]:
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    )


@pytest.fixture(autouse=True)
def interop_is_left_untouched(interop):
    """Reading Hive tables must never write into them (no _lakectl, no staging, nothing)."""
    before = tree_state(interop)
    yield
    assert tree_state(interop) == before


@pytest.fixture
def snapshot(lakectl_cli, spark):
    def run(path: Path, *args: str):
        result = lakectl_cli("snapshot", str(path), "--json", *args)
        assert result.code == 0, result.err
        return result

    return run


# --- nation_acid: one delta, two delete deltas ------------------------------------------------

NATION_VALID = {
    "all": (None, Valid()),
    "upto3": (f"default.nation_acid:3:{NO_OPEN}::", Valid(3)),
    "upto2": (f"default.nation_acid:2:{NO_OPEN}::", Valid(2)),
    "3aborted": (f"default.nation_acid:4:{NO_OPEN}::3", Valid(4, {3})),
    "3open": ("default.nation_acid:4:3:3:", Valid(4, {3})),
}


@pytest.mark.parametrize("case", list(NATION_VALID))
def test_nation_acid_matches_the_raw_events(interop, snapshot, case):
    table = interop / "tables" / "nation_acid"
    text, valid = NATION_VALID[case]
    result = snapshot(table, *(["--valid-write-ids", text] if text else []))
    assert result.json["columns"] == ["n_nationkey", "n_name", "n_regionkey", "n_comment"]
    expected = acid_rows(
        list(table.glob("delta_*/bucket_*")), list(table.glob("delete_delta_*/bucket_*")), valid
    )
    got = snapshot_rows(result)
    assert Counter(got) == Counter(expected)
    keys = Counter(r[0] for r in got)
    # The README's figures.
    if case == "all":
        assert len(got) == 23_000 and keys[5] == 0 and keys[19] == 0
    elif case == "upto3":
        assert len(got) == 24_000 and keys[5] == 0 and keys[19] == 1000
    elif case == "upto2":
        assert len(got) == 25_000 and keys[5] == 1000 and keys[19] == 1000
    else:  # delete delta 3 invisible, 4 visible
        assert len(got) == 24_000 and keys[5] == 1000 and keys[19] == 0
    assert set(keys) <= set(range(25))


def test_nation_acid_filter_on_the_raw_delta(interop, snapshot):
    table = interop / "tables" / "nation_acid"
    raw = ("--valid-write-ids", f"default.nation_acid:2:{NO_OPEN}::")
    five = snapshot(table, *raw, "--where", "n_nationkey = 5", "--columns", "n_nationkey,n_name")
    assert five.json["columns"] == ["n_nationkey", "n_name"]
    assert len(five.json["rows"]) == 1000
    assert {r["n_name"] for r in five.json["rows"]} == {"ETHIOPIA"}
    assert snapshot(table, *raw, "--where", "n_nationkey = 100").json["rows"] == []


# --- compacted base, streaming ----------------------------------------------------------------


def test_compacted_base_with_lower_case_acid_columns(interop, snapshot):
    table = interop / "tables" / "compacted_base"
    got = snapshot_rows(snapshot(table))
    expected = acid_rows(list(table.glob("base_*/bucket_*")), [], Valid())
    assert sorted(got) == sorted(expected) == [(1,), (2,), (3,)]


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        (None, Valid()),
        (f"default.streaming:1:{NO_OPEN}::", Valid(1)),
        ("default.streaming:2:1:1:", Valid(2, {1})),
    ],
)
def test_streaming_delta_with_two_transactions(interop, snapshot, text, valid):
    table = interop / "tables" / "streaming"
    got = snapshot_rows(snapshot(table, *(["--valid-write-ids", text] if text else [])))
    expected = acid_rows(list((table / "delta_1_2").iterdir()), [], valid)
    assert sorted(got) == sorted(expected)
    assert len(got) == {None: 4}.get(text, 2)


# --- original (pre-ACID) files ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["nation_original", "dummy_original", "alltypes_original"])
def test_original_files_with_synthetic_row_ids(interop, snapshot, name):
    table = interop / "tables" / name
    got = snapshot_rows(snapshot(table))
    expected = [tuple(spark_value(v) for v in row) for row in original_rows(table)]
    assert Counter(got) == Counter(expected)
    if name == "nation_original":
        # rowId 24 of bucket 0 is the last nation.
        assert len(got) == 24
        assert 24 not in {r[0] for r in got}
    elif name == "dummy_original":
        # rowId 2 of bucket 0: the third row of 000000_0; copies of bucket 2 are all there.
        third = read_orc(table / "000000_0")[2]
        assert third not in got
        assert len(got) == sum(len(read_orc(f)) for f in table.glob("0*")) - 1
    else:
        assert len(got) == 7300


# --- delete deltas alone (fixtures/fullacid_delete_delta_test) --------------------------------

ROW_SCHEMA = "struct<col:int>"
EVENT_SCHEMA = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
    f"currentTransaction:bigint,row:{ROW_SCHEMA}>"
)


def _write_orc(path: Path, schema: str, rows: list[tuple], acid: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        writer = pyorc.Writer(handle, schema)
        if acid:
            writer.set_user_metadata(**{"hive.acid.version": b"2"})
        writer.writerows(rows)
        writer.close()
    if acid:
        (path.parent / "_orc_acid_version").write_text("2")


@pytest.fixture
def delete_delta_table(interop, tmp_path) -> Path:
    """Rows (originalTransaction 0..9, bucket 536870912, rowId 0) plus the fixture's deltas."""
    table = tmp_path / "deletes"
    _write_orc(table / "000000_0", ROW_SCHEMA, [(0,)], acid=False)
    for w in range(1, 10):
        event = (0, w, 536870912, 0, w, (w,))
        _write_orc(
            table / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", EVENT_SCHEMA, [event], acid=True
        )
    for d in (interop / "fixtures" / "fullacid_delete_delta_test").iterdir():
        shutil.copytree(d, table / d.name)
    return table


def test_fixture_delete_events_are_as_documented(interop):
    fixtures = interop / "fixtures" / "fullacid_delete_delta_test"
    events = {d.name: read_orc(d / "bucket_00000") for d in fixtures.iterdir()}
    assert [e[:5] for e in events["delete_delta_0000004_0000004_0000"]] == [
        (DELETE, 2, 536870912, 0, 4)
    ]
    assert events["delete_delta_0000004_0000004"] == events["delete_delta_0000004_0000004_0000"]
    assert [e[1] for e in events["delete_delta_0000007_0000007_0000"]] == [6]


@pytest.mark.parametrize(
    ("text", "valid", "expected"),
    [
        (None, Valid(), {0, 1, 3, 4, 5, 7, 8, 9}),
        (f"default.t:5:{NO_OPEN}::", Valid(5), {0, 1, 3, 4, 5}),
        (f"default.t:9:{NO_OPEN}::4", Valid(9, {4}), {0, 1, 2, 3, 5, 7, 8, 9}),
    ],
)
def test_fixture_delete_deltas_delete_their_rows(
    delete_delta_table, snapshot, text, valid, expected
):
    table = delete_delta_table
    got = {
        r[0] for r in snapshot_rows(snapshot(table, *(["--valid-write-ids", text] if text else [])))
    }
    deleted = {
        (e[1], e[2], e[3])
        for f in table.glob("delete_delta_*/bucket_*")
        for e in read_orc(f)
        if valid(e[4])
    }
    # Row w has identity (w, 536870912, 0) and is visible when write id w is.
    oracle = {w for w in range(10) if valid(w) and (w, 536870912, 0) not in deleted}
    assert got == oracle == expected


def test_show_counts_compacted_delete_delta_once(delete_delta_table, lakectl_cli):
    result = lakectl_cli("show", str(delete_delta_table), "--json")
    assert result.code == 0, result.err
    (part,) = result.json["partitions"]
    assert part["deltas"] == 9
    # delete_delta_4_4 (compacted) makes delete_delta_4_4_0000 obsolete, as in Hive.
    assert part["delete_deltas"] == 2
    assert part["obsolete_dirs"] == 1
    assert part["rows"] == 10 - 2


# --- show (no Spark) --------------------------------------------------------------------------


def _data_bytes(table: Path) -> int:
    return sum(
        p.stat().st_size
        for p in table.rglob("*")
        if p.is_file() and not p.name.startswith(("_", "."))
    )


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("nation_acid", (), {"base": None, "deltas": 1, "delete_deltas": 2, "rows": 23_000}),
        (
            "nation_acid",
            ("--valid-write-ids", f"default.nation_acid:3:{NO_OPEN}::"),
            {"base": None, "deltas": 1, "delete_deltas": 1, "rows": 24_000},
        ),
        (
            "nation_acid",
            ("--valid-write-ids", f"default.nation_acid:2:{NO_OPEN}::"),
            {"base": None, "deltas": 1, "delete_deltas": 0, "rows": 25_000},
        ),
        (
            "compacted_base",
            (),
            {"base": "base_0000001", "deltas": 0, "delete_deltas": 0, "rows": 3},
        ),
        ("streaming", (), {"base": None, "deltas": 1, "delete_deltas": 0, "rows": 4}),
        ("nation_original", (), {"base": None, "deltas": 0, "delete_deltas": 1, "rows": 24}),
        ("dummy_original", (), {"base": None, "deltas": 0, "delete_deltas": 1, "rows": 19}),
        ("alltypes_original", (), {"base": None, "deltas": 0, "delete_deltas": 0, "rows": 7300}),
    ],
)
def test_show_hive_tables(interop, lakectl_cli, name, args, expected):
    table = interop / "tables" / name
    result = lakectl_cli("show", str(table), "--json", *args)
    assert result.code == 0, result.err
    data = result.json
    assert data["kind"] == "hive"
    assert data["primary_key"] == [] and data["partition_by"] == []
    (part,) = data["partitions"]
    assert {k: part[k] for k in expected} == expected
    assert data["totals"]["rows"] == expected["rows"]
    if not args:
        assert part["bytes"] == data["totals"]["bytes"] == _data_bytes(table)


def test_show_hive_schema(interop, lakectl_cli):
    data = lakectl_cli("show", str(interop / "tables" / "nation_acid"), "--json").json
    assert data["schema"] == [
        {"name": "n_nationkey", "type": "int"},
        {"name": "n_name", "type": "string"},
        {"name": "n_regionkey", "type": "int"},
        {"name": "n_comment", "type": "string"},
    ]
    types = {
        c["name"]: c["type"]
        for c in lakectl_cli("show", str(interop / "tables" / "alltypes_original"), "--json").json[
            "schema"
        ]
    }
    assert types["bool_col"] == "boolean"
    assert types["tinyint_col"] == "tinyint"
    assert types["bigint_col"] == "bigint"
    assert types["float_col"] == "float"
    assert types["timestamp_col"] == "timestamp"


def test_show_text_output(interop, lakectl_cli):
    result = lakectl_cli("show", str(interop / "tables" / "nation_acid"))
    assert result.code == 0
    assert "(hive)" in result.out
    assert "23,000 rows" in result.out


# --- the ACID file check ----------------------------------------------------------------------


def test_require_acid_file_accepts_hive_3_file(interop):
    path = interop / "fixtures" / "acid_version_validation" / "acid_version_hive_3" / "00000_0"
    storage, p = storage_for(str(path))
    footer = require_acid_file(storage, p)
    assert footer.is_acid
    assert footer.acid_version == 2
    assert footer.rows == 1
    assert footer.row_columns == (("a", "bigint"),)
    (event,) = read_orc(path)
    assert event[2] == 537001984 and decode_bucket(event[2]) == 2
    assert event[5] == (10,)


def test_require_acid_file_refuses_file_without_acid_metadata(interop):
    path = (
        interop
        / "fixtures"
        / "acid_version_validation"
        / "no_orc_acid_version_in_metadata"
        / "00000_0"
    )
    storage, p = storage_for(str(path))
    with pytest.raises(FormatError) as info:
        require_acid_file(storage, p)
    message = info.value.message
    assert str(path) in message
    assert "is not a Hive ACID file" in message
    assert "struct<id,data,comment>" in message
    assert info.value.exit_code == 76


def test_require_acid_file_refuses_other_acid_versions(tmp_path):
    path = tmp_path / "bucket_00000"
    with path.open("wb") as handle:
        writer = pyorc.Writer(handle, EVENT_SCHEMA)
        writer.set_user_metadata(**{"hive.acid.version": b"1"})
        writer.write((0, 1, 536870912, 0, 1, (1,)))
        writer.close()
    storage, p = storage_for(str(path))
    with pytest.raises(FormatError, match=r"hive\.acid\.version=1"):
        require_acid_file(storage, p)


def test_not_an_orc_file(tmp_path):
    path = tmp_path / "bucket_00000"
    path.write_bytes(b"definitely not ORC")
    storage, p = storage_for(str(path))
    with pytest.raises(FormatError, match="not a readable ORC file"):
        require_acid_file(storage, p)


def test_orc_file_without_a_struct_top_level(tmp_path):
    path = tmp_path / "bucket_00000"
    with path.open("wb") as handle:
        writer = pyorc.Writer(handle, "int")
        writer.write(5)
        writer.close()
    storage, p = storage_for(str(path))
    with pytest.raises(FormatError, match="top-level type is int, not a struct"):
        require_acid_file(storage, p)


def test_acid_file_outside_a_delta_is_refused(interop, lakectl_cli):
    path = interop / "fixtures" / "acid_version_validation" / "acid_version_hive_3"
    result = lakectl_cli("show", str(path), "--json")
    assert result.code == 76
    assert result.json["error"]["type"] == "format"
    assert "an ACID file outside a base/delta directory" in result.json["error"]["message"]
