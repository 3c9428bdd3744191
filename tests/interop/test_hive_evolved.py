"""A table in Hive's layout whose schema evolved as Hive evolves it: ``ALTER TABLE ADD COLUMNS``
then ``CHANGE COLUMN`` (a rename), each followed by inserts, so older files hold fewer columns
and older names. Hive's ACID reader maps a file's ``row`` fields by position and reads NULL for
the columns a file lacks; lakectl must read the same rows, in every engine.

The files are written with pyarrow in Hive 3's ACID format (no Hive server runs here): a base
with ``(id, name)``, a delta with ``(id, name, score)``, a delta with ``(id, label, score)`` and
a delete delta removing one row of the base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pytest

BUCKET = 536870912  # bucket 0 in Hive's bucket codec


def _write(path: Path, row_fields: list[tuple[str, pa.DataType]], events: list[dict]) -> None:
    schema = pa.schema(
        [
            ("operation", pa.int32()),
            ("originalTransaction", pa.int64()),
            ("bucket", pa.int32()),
            ("rowId", pa.int64()),
            ("currentTransaction", pa.int64()),
            ("row", pa.struct(row_fields)),
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(events, schema=schema)
    orc.write_table(table, str(path))


def _event(op: int, txn: int, row_id: int, row: dict | None, current: int | None = None) -> dict:
    return {
        "operation": op,
        "originalTransaction": txn,
        "bucket": BUCKET,
        "rowId": row_id,
        "currentTransaction": txn if current is None else current,
        "row": row,
    }


@pytest.fixture(scope="module")
def hive_evolved(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hive_evolved") / "t"
    first = [("id", pa.int32()), ("name", pa.string())]
    added = [*first, ("score", pa.float64())]
    renamed = [("id", pa.int32()), ("label", pa.string()), ("score", pa.float64())]
    _write(
        root / "base_0000001" / "bucket_00000",
        first,
        [_event(0, 1, i, {"id": i, "name": f"n{i}"}) for i in range(3)],
    )
    _write(
        root / "delta_0000002_0000002_0000" / "bucket_00000",
        added,
        [_event(0, 2, 0, {"id": 10, "name": "ten", "score": 1.5})],
    )
    _write(
        root / "delta_0000003_0000003_0000" / "bucket_00000",
        renamed,
        [_event(0, 3, 0, {"id": 20, "label": "twenty", "score": None})],
    )
    _write(
        root / "delete_delta_0000004_0000004_0000" / "bucket_00000",
        renamed,
        [_event(2, 1, 1, None, current=4)],  # deletes id 1 of the base
    )
    return root


# What Hive reads: the newest schema, older files' fields by position, NULL where they end.
EXPECTED = [
    {"id": 0, "label": "n0", "score": None},
    {"id": 2, "label": "n2", "score": None},
    {"id": 10, "label": "ten", "score": 1.5},
    {"id": 20, "label": "twenty", "score": None},
]


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        ({k: r[k] for k in ("id", "label", "score")} for r in rows), key=lambda r: r["id"]
    )


def _read_as_hive_does(lakectl_cli: Any, table: Path, engine: str, native: str) -> None:
    run = lakectl_cli(
        "--json",
        "snapshot",
        str(table),
        "--engine",
        engine,
        "--conf",
        f"spark.lakectl.read.native={native}",
    )
    assert run.code == 0, run.out
    assert run.json["columns"] == ["id", "label", "score"]
    assert _sorted(run.json["rows"]) == EXPECTED


def test_an_evolved_hive_table_reads_as_hive_reads_it_without_a_jvm(hive_evolved, lakectl_cli):
    _read_as_hive_does(lakectl_cli, hive_evolved, "arrow", "true")


@pytest.mark.parametrize("native", ["true", "false"])
def test_an_evolved_hive_table_reads_as_hive_reads_it_in_spark(
    hive_evolved, lakectl_cli, spark, native
):
    """Through lakectl's data source and through Spark's ORC scan."""
    _read_as_hive_does(lakectl_cli, hive_evolved, "spark", native)
