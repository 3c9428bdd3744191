"""The Arrow engine's load holds one partition's rows at a time: its batch is read a part at a
time, set aside by target partition and written a partition at a time. Parts read separately
give the batch read whole, errors count the whole batch, and the load's peak memory follows
its largest partition, not its batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakectl
from lakectl.arrow import source as arrow_source
from lakectl.arrow.batch import BatchOptions, BatchShaper, shape_batch_arrow
from lakectl.arrow.partitioned_batch import PartitionedBatch
from lakectl.errors import BadInputError
from lakectl.table.batch_checks import POSITION_COL
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata
from lakectl.table.schema import parse_schema

ROOT = Path(__file__).resolve().parents[2]


def test_lines_split_across_reads_are_the_lines_of_the_whole_text() -> None:
    text = 'a,b\r\n1,2\r\r\n\n3,4\n \n5,"x\ny"\r6,7'
    whole = list(arrow_source._lines(text))
    for size in range(1, len(text) + 1):
        parts = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(arrow_source._split_lines(parts)) == whole, size


def test_a_csv_read_in_small_parts_is_the_csv_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "a.csv").write_bytes('\ufeffid,v\r\n1,x\r\n2,\r\n\r\n3,"q,""r"\n'.encode())
    (folder / "b.csv").write_text("ID,V\n4,é\n5,z\n6,w")
    whole = arrow_source.read_source_arrow(str(folder), "csv", infer=False)
    inferred = arrow_source.read_source_arrow(str(folder), "csv", infer=True)
    monkeypatch.setattr(arrow_source, "CHUNK_ROWS", 2)
    monkeypatch.setattr(arrow_source, "_READ_BYTES", 3)
    read = arrow_source.read_source_batches(str(folder), "csv", infer=False)
    parts = list(read.tables)
    assert [p.num_rows for p in parts] == [2, 2, 2]
    assert pa.concat_tables(parts).equals(whole)
    assert whole.column("id").to_pylist() == ["1", "2", "3", "4", "5", "6"]
    assert whole.column("v").to_pylist() == ["x", None, 'q,"r', "é", "z", "w"]
    assert arrow_source.read_source_arrow(str(folder), "csv", infer=True).equals(inferred)
    assert inferred.schema.types == [pa.int32(), pa.string()]


def test_a_batch_shaped_in_parts_counts_its_problems_over_every_part() -> None:
    meta = TableMetadata(parse_schema("id bigint, qty int"), primary_key=("id",))
    options = BatchOptions(LoadMode.UPSERT, None, None, None)
    text = pa.table({"id": ["1", "2", "x", "4", "y", "6"], "qty": ["1", "a", "3", "b", "c", "6"]})
    with pytest.raises(BadInputError) as whole:
        shape_batch_arrow(text, meta, options, "b.csv")
    shaper = BatchShaper(text.schema, meta, options, "b.csv")
    shaped = [shaper.shape(text.slice(at, 2)) for at in range(0, 6, 2)]
    with pytest.raises(BadInputError) as parted:
        shaper.finish()
    assert str(parted.value) == str(whole.value)
    assert "column 'id': 2 value(s) do not fit type bigint, e.g. 'x'" in str(parted.value)
    positions = pa.concat_tables(shaped).column(POSITION_COL).to_pylist()
    assert positions == [0, 1, 2, 3, 4, 5]


# In a new process: a first small load (the imports and first calls a load makes, not
# measured), then the load measured, its batch read in parts of 16,384 rows (the test's batch
# is small next to the default part), on one thread (one partition in memory at a time).
_LOAD = """
import json, os, sys
os.cpu_count = lambda: 1
import lakectl
from lakectl.arrow import source
from lakectl.arrow.bucket_compaction import peak_memory_bytes
source.CHUNK_ROWS = 16_384
table = lakectl.open_table(sys.argv[1])
table.load(sys.argv[3], mode="append", engine="arrow")
before = peak_memory_bytes()
done = table.load(sys.argv[2], mode="append", engine="arrow")
print(json.dumps({"before": before, "peak": done.peak_memory_bytes, "rows": done.inserted}))
"""


def _in_new_process(code: str, *args: Path) -> dict[str, Any]:
    """Run ``code`` in a new Python process (its memory its own); the JSON its last line
    prints."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _batch(path: Path, rows: int, partitions: int, start: int = 0) -> Path:
    """A Parquet batch of ``rows`` rows of about 200 bytes over ``partitions`` partitions."""
    keys = range(start, start + rows)
    pq.write_table(
        pa.table(
            {
                "id": pa.array(keys, pa.int64()),
                "note": pa.array([f"{i:012d}" + "x" * 180 for i in keys], pa.string()),
                "day": pa.array([f"2024-01-0{1 + i % partitions}" for i in keys], pa.string()),
            }
        ),
        path,
        row_group_size=16_384,
    )
    return path


def _load_peak(tmp_path: Path, name: str, parts: int) -> tuple[int, int]:
    """The growth of a new process's peak memory over an Arrow load of the same rows spread
    over ``parts`` partitions, and the rows loaded."""
    batch = _batch(tmp_path / f"{name}.parquet", 320_000, parts)
    first = _batch(tmp_path / f"{name}-first.parquet", 100, parts, start=-100)
    table = tmp_path / name
    lakectl.create_table(
        str(table),
        schema="id bigint, note string, day string",
        primary_key="id",
        partition_by="day",
    )
    done = _in_new_process(_LOAD, table, batch, first)
    return done["peak"] - done["before"], done["rows"]


@pytest.mark.skipif(sys.platform != "linux", reason="peak resident memory as Linux reports it")
def test_a_loads_peak_memory_follows_its_largest_partition_not_its_batch(tmp_path: Path) -> None:
    one, rows = _load_peak(tmp_path, "one", 1)
    eight, rows_eight = _load_peak(tmp_path, "eight", 8)
    assert rows == rows_eight == 320_000
    batch_bytes = 320_000 * 200  # the batch's note column alone
    assert one > batch_bytes / 2, (one, eight)
    assert eight < one * 0.6, (one, eight)


def test_a_loads_rows_set_aside_on_disk_are_removed_whatever_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    made: list[str] = []
    real_init = PartitionedBatch.__init__

    def init(self: PartitionedBatch, *args: Any) -> None:
        real_init(self, *args)
        made.append(self._dir)

    monkeypatch.setattr(PartitionedBatch, "__init__", init)
    table = lakectl.create_table(
        str(tmp_path / "t"), schema="id bigint, qty int, day string", partition_by="day"
    )
    good = tmp_path / "good.csv"
    good.write_text("id,qty,day\n1,5,a\n2,6,b\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,qty,day\n3,7,a\n4,seven,b\n")
    assert table.load(str(good), mode="append", engine="arrow").inserted == 2
    with pytest.raises(BadInputError, match="column 'qty': 1 value"):
        table.load(str(bad), mode="append", engine="arrow")
    assert len(made) == 2 and all(Path(d).parent == spill for d in made)
    assert list(spill.iterdir()) == []
    assert table.history()[-1].version == 1


def test_the_key_lookup_probes_about_a_partition_at_a_time_and_finds_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakectl.arrow.key_lookup import PartitionKeyLookup, lookup_spec
    from lakectl.scan.target import plan_lakectl
    from lakectl.storage.fs import storage_for
    from lakectl.table.store import TableStore

    sizes = {"a": 3, "b": 10, "c": 2, "d": 2, "e": 2, "f": 2, "g": 2}
    table = lakectl.create_table(
        str(tmp_path / "t"),
        schema="id bigint, v string, day string",
        primary_key="id",
        partition_by="day",
    )
    rows = [(n, day) for n, day in enumerate(d for d, k in sizes.items() for _ in range(k))]
    batch = tmp_path / "b.csv"
    batch.write_text("id,v,day\n" + "".join(f"{n},v{n},{day}\n" for n, day in rows))
    table.load(str(batch), mode="append", engine="arrow")
    storage, root = storage_for(str(tmp_path / "t"))
    store = TableStore(storage, root, "t")
    state = store.read_state()
    valid, plans, _ = plan_lakectl(store, state)
    plans = sorted(plans, key=lambda p: p.values)
    meta = state.metadata
    spec = lookup_spec(meta.data_schema, meta.primary_key, None)
    assert spec is not None
    wanted = pa.array([0, 5, 14, 20, 22, 99], pa.int64())
    probed: list[list[int]] = []
    real_probe = PartitionKeyLookup._probe

    def probe(self: PartitionKeyLookup, pending: list[Any]) -> Any:
        probed.append([events.num_rows for _, events, _ in pending])
        return real_probe(self, pending)

    monkeypatch.setattr(PartitionKeyLookup, "_probe", probe)
    found = {}
    for probe_rows in (None, 1, 10**9):
        probed.clear()
        lookup = PartitionKeyLookup(
            storage, spec, [pa.int64()], ["day"], wanted, valid, probe_rows=probe_rows
        )
        matches = pa.Table.from_batches(list(lookup.matches(plans)))
        ids, days = matches.column("id").to_pylist(), matches.column("day").to_pylist()
        found[probe_rows] = sorted(zip(ids, days, strict=True))
        if probe_rows is None:  # small partitions together, up to the largest one's events
            assert probed == [[3], [10], [2, 2, 2, 2, 2]]
    assert found[None] == found[1] == found[10**9]
    assert found[None] == [(0, "a"), (5, "b"), (14, "c"), (20, "f"), (22, "g")]


def test_a_parquet_row_group_is_read_in_parts_equal_to_the_file_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "one-group.parquet"
    pq.write_table(pa.table({"id": range(10), "v": [f"x{i}" for i in range(10)]}), path)
    whole = arrow_source.read_source_arrow(str(path), "parquet", infer=False)
    monkeypatch.setattr(arrow_source, "CHUNK_ROWS", 4)
    monkeypatch.setattr(arrow_source, "_PARQUET_DECODE_ROWS", 3)
    parts = list(arrow_source.read_source_batches(str(path), "parquet", infer=False).tables)
    assert [p.num_rows for p in parts] == [6, 4]
    assert pa.concat_tables(parts).equals(whole)
    assert whole.column("id").to_pylist() == list(range(10))


# In a new process: a small load first (the imports and first calls, not measured), then a cdc
# load measured from the process's resident memory just before it (the high-water mark reset).
_CDC_LOAD = """
import json, os, sys
os.cpu_count = lambda: 1
import lakectl
from lakectl.arrow import source
source.CHUNK_ROWS = 16_384
options = dict(mode="cdc", op_column="op", order_by="ts", engine="arrow")
table = lakectl.open_table(sys.argv[1])
table.load(sys.argv[3], **options)
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")
with open("/proc/self/status") as status:
    before = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
done = table.load(sys.argv[2], **options)
print(json.dumps({"growth": done.peak_memory_bytes - before, "counts": done.counts}))
"""


def _cdc_batch(path: Path, keys: range, partitions: int, op: str | None, month: int) -> Path:
    """A batch of ``keys`` (an op code unless ``op`` is None, a change time, a note, the
    partition: key modulo ``partitions``)."""
    import numpy as np
    import pyarrow.compute as pc

    ids = np.arange(keys.start, keys.stop, dtype=np.int64)

    def text(prefix: str, values: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(prefix, pa.array(values).cast(pa.string()), "")

    columns = {
        "id": pa.array(ids),
        "ts": text(f"2024-{month:02d}-01 00:00:", 10 + ids % 50),
        "note": text("n", ids),
        "day": text("d", 10 + ids % partitions),
    }
    if op is not None:
        columns["op"] = pa.array([op] * len(keys))
    pq.write_table(pa.table(columns), path, row_group_size=16_384)
    return path


def _cdc_growth(tmp_path: Path, rows: int, partitions: int) -> tuple[int, dict[str, int]]:
    """The growth of a new process's memory over a cdc load of ``rows`` changes (a quarter
    updates of stored keys, the rest new keys; the partitions as many rows each whatever
    ``rows``) into a table of the keys it updates, and the load's counts."""
    table = tmp_path / f"t{rows}"
    lakectl.create_table(
        str(table),
        schema="id bigint, ts string, note string, day string",
        primary_key="id",
        partition_by="day",
    )
    stored = range(rows // 4, rows // 2)  # the keys the batch updates
    base = _cdc_batch(tmp_path / f"base{rows}.parquet", stored, partitions, None, 5)
    lakectl.open_table(str(table)).load(str(base), mode="append", engine="arrow")
    changes = range(rows // 4, rows + rows // 4)
    batch = _cdc_batch(tmp_path / f"cdc{rows}.parquet", changes, partitions, "U", 6)
    warm = _cdc_batch(tmp_path / f"warm{rows}.parquet", range(-10, 0), partitions, "I", 6)
    done = _in_new_process(_CDC_LOAD, table, batch, warm)
    return done["growth"], done["counts"]


@pytest.mark.skipif(sys.platform != "linux", reason="resident memory as Linux reports it")
def test_a_keyed_loads_memory_grows_by_a_few_dozen_bytes_per_change_of_its_batch(
    tmp_path: Path,
) -> None:
    # Twice the changes over twice the partitions: the largest partition is the same size, so
    # the difference is what the load holds per change of the whole batch (its key, order
    # value and action, and what deciding it takes: about 0.3 KB per change before it was
    # narrowed to those columns; measured about 0.1 KB since).
    n = 100_000
    one, counts = _cdc_growth(tmp_path, n, 8)
    two, counts_two = _cdc_growth(tmp_path, 2 * n, 16)
    assert counts == {
        "inserted": n * 3 // 4,
        "updated": n // 4,
        "deleted": 0,
        "ignored": 0,
        "superseded_in_batch": 0,
    }
    assert counts_two["inserted"] == 2 * counts["inserted"]
    assert (two - one) / n < 200, (one, two)
