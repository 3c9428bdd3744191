"""``delete``, ``update`` and ``restore`` with the Arrow engine, without a JVM: every version
reads as DuckDB computes it (the same statements on the same rows, a restore as the rows of the
restored version), a writer stopped at each failpoint changes nothing and a rerun commits once,
bad ``--where``/``--set`` fail alike in both engines, and the engine choice is reported.

The same operations through Spark, compared file for file and record for record:
tests/ops/test_dml_engines_agree.py.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lakectl
from lakectl.table.log import Operation
from lakectl.table.transaction import failpoints_of
from tests.support.arrow_tables import append_rows, table_store
from tests.support.cli import run_lakectl, run_lakectl_until_crash

SCHEMA = "id bigint, qty int, amt double, tag string, day string"
COLUMNS = ("id", "qty", "amt", "tag", "day")
DAYS = ("d0", "d1", None)
ENGINES = ("spark", "arrow")


def _row(i: int) -> dict[str, Any]:
    amt = None if i % 7 == 0 else i * 1.5
    return {"id": i, "qty": i % 5, "amt": amt, "tag": f"t{i % 3}", "day": DAYS[i % 3]}


FIRST = [_row(i) for i in range(24)]
SECOND = [_row(i) for i in range(24, 36)]

# (kind, text, where): statements DuckDB evaluates as Spark does on these rows; ("restore", v).
STEPS: list[tuple[Any, ...]] = [
    ("delete", "qty = 3", None),
    ("update", "amt = amt * 2, tag = 'x'", "id % 4 = 1"),
    ("update", "day = 'd9'", "id < 6"),  # moves rows between partitions, the NULL one too
    ("restore", 2),
    ("delete", "day IS NULL", None),
    ("update", "qty = qty + 10", None),  # every row
    ("restore", 4),  # a version that was restored over: its rows are written again
    ("delete", "amt > 20 AND tag <> 't1'", None),
    ("alter", "note string default 'n'", "qty bigint"),  # a schema change: no version
    ("update", "note = 'changed', qty = qty * 3", "id % 2 = 0"),
    ("restore", 5),  # across the schema change: the whole table compared, rows in new columns
    ("delete", "note = 'n' AND qty > 2", None),
]


def _build(path: Path, *, partitioned: bool, buckets: int = 0) -> None:
    lakectl.create_table(
        str(path),
        schema=SCHEMA,
        primary_key="id",
        partition_by="day" if partitioned else None,
        buckets=buckets,
    )
    append_rows(path, FIRST)
    append_rows(path, SECOND)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("arrow_dml")
    _build(root / "parted", partitioned=True)
    _build(root / "plain", partitioned=False)
    _build(root / "bucketed", partitioned=True, buckets=3)
    return root


def _rows(path: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    data = lakectl.open_table(str(path)).scan(version=version).to_arrow()
    return _by_id([tuple(sorted(r.items())) for r in data.to_pylist()])


def _by_id(rows: list[tuple[tuple[str, Any], ...]]) -> list[tuple[tuple[str, Any], ...]]:
    """Rows as (column, value) pairs by name, ordered by id."""
    return sorted(rows, key=lambda r: dict(r)["id"])


class Oracle:
    """The table's rows at each version, computed by DuckDB."""

    def __init__(self) -> None:
        self.db = duckdb.connect()
        self.db.execute(
            "CREATE TABLE t (id BIGINT, qty INTEGER, amt DOUBLE, tag VARCHAR, day VARCHAR)"
        )
        self.versions: dict[int, list[tuple[tuple[str, Any], ...]]] = {0: []}

    def insert(self, version: int, rows: list[dict[str, Any]]) -> None:
        self.db.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)", [tuple(r[c] for c in COLUMNS) for r in rows]
        )
        self.versions[version] = self.rows()

    def rows(self) -> list[tuple[tuple[str, Any], ...]]:
        result = self.db.execute("SELECT * FROM t")
        names = [d[0] for d in result.description]
        return _by_id([tuple(sorted(zip(names, r, strict=True))) for r in result.fetchall()])

    def alter(self, step: tuple[Any, ...]) -> None:
        """A schema change (no version): rows stored before read the new column's default."""
        _, added, widened = step
        name, _, _, default = added.split()
        self.db.execute(f"ALTER TABLE t ADD COLUMN {name} VARCHAR DEFAULT {default}")
        column, _ = widened.split()
        self.db.execute(f"ALTER TABLE t ALTER {column} TYPE BIGINT")

    def apply(self, version: int, step: tuple[Any, ...]) -> None:
        if step[0] == "restore":
            then = self.versions[step[1]]
            self.db.execute("DELETE FROM t")
            for row in then:  # rows of an older schema: columns added since take their default
                names = ", ".join(name for name, _ in row)
                marks = ", ".join("?" * len(row))
                values = [value for _, value in row]
                self.db.execute(f"INSERT INTO t ({names}) VALUES ({marks})", values)
        else:
            kind, text, where = step
            condition = f" WHERE {where}" if where else ""
            sql = f"DELETE FROM t WHERE {text}" if kind == "delete" else f"UPDATE t SET {text}"
            self.db.execute(sql + ("" if kind == "delete" else condition))
        self.versions[version] = self.rows()


def run_step(table: lakectl.Table, step: tuple[Any, ...], engine: str) -> Any:
    """One step through the Python API with ``engine``."""
    if step[0] == "restore":
        return table.restore(step[1], engine=engine)
    kind, text, where = step
    if kind == "delete":
        return table.delete(text, engine=engine)
    return table.update_rows(text, where, engine=engine)


@pytest.mark.parametrize("layout", ["parted", "plain", "bucketed"])
def test_every_version_reads_as_duckdb_computes_it(built, tmp_path, layout) -> None:
    path = tmp_path / layout
    shutil.copytree(built / layout, path)
    oracle = Oracle()
    oracle.insert(1, FIRST)
    oracle.insert(2, SECOND)
    table = lakectl.open_table(str(path))
    for step in STEPS:
        if step[0] == "alter":
            table.alter(step[1], widen=step[2])
            oracle.alter(step)
            continue
        before = oracle.rows()
        result = run_step(table, step, "arrow")
        assert result.engine == "arrow" and result.engine_reason == "asked for"
        assert result.version == max(oracle.versions) + 1, step
        oracle.apply(result.version, step)
        after = oracle.rows()
        if step[0] == "delete":
            assert result.deleted == len(before) - len(after), step
        elif step[0] == "update":
            assert result.updated == len(set(after) - set(before)), step
        assert _rows(path) == after, step
        if step[0] == "restore":
            assert result.method == ("full" if step[1] == 5 else "changes"), step
    for version, rows in oracle.versions.items():
        if version:
            assert _rows(path, version) == rows, version


def test_a_dry_run_counts_and_writes_nothing(built, tmp_path) -> None:
    path = tmp_path / "t"
    shutil.copytree(built / "parted", path)
    before = _files(path)
    result = lakectl.open_table(str(path)).delete("qty = 3", dry_run=True, engine="arrow")
    expected = [r for r in FIRST + SECOND if r["qty"] == 3]
    assert (result.deleted, result.version, result.engine) == (len(expected), None, "arrow")
    parts = {p.partition: p.deleted for p in result.partitions}
    assert sum(parts.values()) == len(expected)
    assert "day=__HIVE_DEFAULT_PARTITION__" in parts
    assert _files(path) == before


def _files(path: Path) -> dict[str, str]:
    return {
        f.relative_to(path).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in path.rglob("*")
        if f.is_file()
    }


def _reads(path: Path) -> tuple[Any, ...]:
    """What a reader of the table sees: the log (bytes) and the rows."""
    log = sorted(
        (f.relative_to(path).as_posix(), hashlib.sha256(f.read_bytes()).hexdigest())
        for f in (path / "_lakectl").rglob("*")
        if f.is_file() and f.parent.name in ("log", "checkpoints")
    )
    return log, _rows(path)


WRITERS = {
    "delete": (("delete", "{t}", "--where", "qty = 3"), Operation.DELETE),
    "update": (("update", "{t}", "--set", "qty = 0", "--where", "id = 1"), Operation.UPDATE),
    "restore": (("restore", "{t}", "--version", "1"), Operation.RESTORE),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_stopped_at_each_failpoint_nothing_changes_and_a_rerun_commits_once(
    built, tmp_path, writer
) -> None:
    path = tmp_path / "t"
    shutil.copytree(built / "parted", path)
    command, operation = WRITERS[writer]
    args = [a.format(t=path) for a in command] + ["--engine", "arrow", "--json"]
    before = _reads(path)
    for point in failpoints_of(operation)[:-1]:
        killed = run_lakectl_until_crash(*args, failpoint=point)
        assert killed.code == 137, (point, killed.err[-2000:])
        assert _reads(path) == before, point
    rerun = run_lakectl(*args)
    assert rerun.code == 0, rerun.err
    assert rerun.json["engine"] == "arrow"
    records = table_store(path).read_state().records
    assert len(records) == len(before[0]) + 1
    assert records[-1].operation is operation
    assert records[-1].write_id == rerun.json["version"]
    assert _reads(path)[1] != before[1]


BAD = [
    ("delete", "{t}", "--where", "nope = 1"),
    ("delete", "{t}", "--where", "qty = "),
    ("delete", "{t}", "--where", "rand() > 0.5"),
    ("update", "{t}", "--set", "nope = 1"),
    ("update", "{t}", "--set", "qty = 'a' +", "--where", "id = 1"),
    ("update", "{t}", "--set", "qty = 1", "--where", ""),
    ("restore", "{t}", "--version", "99"),
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a[2:]))
def test_bad_input_fails_alike_in_both_engines(built, args) -> None:
    path = built / "parted"
    before = _files(path)
    runs = [run_lakectl(*[a.format(t=path) for a in args], "--engine", e) for e in ENGINES]
    assert runs[0].code in (2, 65), runs[0].err
    assert (runs[1].code, runs[1].err) == (runs[0].code, runs[0].err)
    assert "Traceback" not in runs[0].err
    assert _files(path) == before


def test_auto_picks_arrow_for_a_small_table_and_says_why(built, tmp_path) -> None:
    path = tmp_path / "t"
    shutil.copytree(built / "parted", path)
    run = run_lakectl("delete", path, "--where", "qty = 4", "--engine", "auto", "--json")
    assert run.code == 0, run.err
    assert run.json["engine"] == "arrow"
    assert run.json["engine_reason"].startswith("auto: ") and "at most" in run.json["engine_reason"]
    run = run_lakectl("restore", path, "--version", "2", "--engine", "auto", "--json")
    assert (run.code, run.json["engine"], run.json["counts"]["reinserted"]) == (0, "arrow", 7)


@pytest.mark.parametrize("writer", ["delete", "update", "restore"])
def test_a_commit_to_a_partition_it_read_since_is_a_conflict(
    built, tmp_path, monkeypatch, writer
) -> None:
    """A load commits between the writer's read and its commit: the writer fails with exit 75,
    nothing of it is visible and its files are gone; the load's rows stay."""
    import threading

    path = tmp_path / "t"
    shutil.copytree(built / "parted", path)
    reached, go = tmp_path / "reached", tmp_path / "go"
    prefix = "restore" if writer == "restore" else "dml"
    monkeypatch.setenv(
        "LAKECTL_FAILPOINTS",
        f"{prefix}.after_begin=touch:{reached},{prefix}.before_commit=wait:{go}",
    )
    command, _ = WRITERS[writer]
    args = [a.format(t=path) for a in command] + ["--engine", "arrow", "--json"]
    runs = []
    thread = threading.Thread(target=lambda: runs.append(run_lakectl(*args)))
    thread.start()
    for _ in range(600):
        if reached.exists() or not thread.is_alive():
            break
        threading.Event().wait(0.05)
    assert reached.exists(), runs
    extra = {"id": 100, "qty": 3, "amt": 1.0, "tag": "t0", "day": "d0"}
    version = append_rows(path, [extra])
    go.touch()
    thread.join(60)
    assert runs[0].code == 75, runs[0].err
    assert runs[0].json["error"]["type"] == "conflict"
    state = table_store(path).read_state()
    assert state.records[-1].write_id == version
    mine = version - 1  # the writer's write id, taken before the load's, aborted
    assert mine in state.valid_write_ids().exceptions
    assert not list(path.rglob(f"*_{mine:07d}_{mine:07d}*"))
    assert dict(_rows(path)[-1])["id"] == 100
