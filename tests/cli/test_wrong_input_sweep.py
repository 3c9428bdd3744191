"""A sweep of the mistakes a person makes with each command, and of damaged tables: every one ends
in a documented exit code (never 1, never 70 "internal"), one JSON error object with --json, no
traceback, and the table unchanged. One line per case: ``(args, exit code)``; ``{t}`` is a loaded
table, ``{csv}`` a CSV file, ``{dir}`` an empty directory, ``{missing}`` a path that does not exist.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

SALES = Path(__file__).resolve().parents[2] / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, op_code string, store_id string, "
    "create_date string"
)

CASES = [
    # no such command, table, option or value
    (["no-such-command"], 2),
    (["snapshot", "{missing}"], 66),
    (["snapshot", "{dir}"], 66),
    (["show", "{csv}"], 66),
    (["history", "{t}", "--limit", "many"], 2),
    (["snapshot", "{t}", "--version", "-3"], 67),
    (["snapshot", "{t}", "--version", "999"], 67),
    (["snapshot", "{t}", "--version", "99999999999999999999999"], 67),
    (["snapshot", "{t}", "--as-of", "yesterday"], 2),
    (["snapshot", "{t}", "--as-of", "9" * 400], 2),
    (["snapshot", "{t}", "--known-at", "1999-01-01"], 67),
    (["snapshot", "{t}", "--timezone", "Mars/Olympus"], 2),
    (["snapshot", "{t}", "--columns", "sell_id,nope"], 65),
    (["snapshot", "{t}", "--columns", ""], 2),
    (["snapshot", "{t}", "--where", "store_id = 'S01' whatever"], 2),
    (["snapshot", "{t}", "--where", "reflect('java.lang.Runtime','getRuntime') IS NULL"], 65),
    (["snapshot", "{t}", "--format", "xml"], 2),
    (["snapshot", "{t}", "--limit", "-1"], 2),
    (["snapshot", "{t}", "--out", "{csv}"], 65),
    (["snapshot", "{t}", "--order-by", "nope"], 65),
    # loads: sources that are not there, not data, or not the table's
    (["load", "{t}", "{missing}"], 66),
    (["load", "{t}", "{t}"], 2),
    (["load", "{t}", "{csv}", "--format", "xml"], 2),
    (["load", "{t}", "{csv}", "--mode", "merge"], 2),
    (["load", "{t}", "{csv}", "--mode", "cdc", "--op-values", "I=insert,U=upsert"], 2),
    (["load", "{t}", "{csv}", "--order-by", "nope"], 65),
    (["load", "{t}", "{csv}", "--effective-from", "soon"], 2),
    (["load", "{t}", "{csv}", "--primary-key", "acct_id"], 2),
    (["create", "{t}", "--schema", "a int"], 73),
    (["create", "{new}", "--schema", "a nosuchtype"], 2),
    (["create", "{new}", "--schema", ""], 2),
    (["create", "{new}", "--schema", "a int, a int"], 2),
    (["create", "{new}", "--schema", "a int", "--primary-key", "b"], 2),
    # statements
    (["apply-updates", "{t}", "{missing}"], 66),
    (["apply-updates", "{t}", "{csv}"], 65),
    (["apply-updates", "{t}", "--materialize"], 2),
    (["delete", "{t}", "--where", ""], 2),
    (["update", "{t}", "--set", "nope = 1"], 65),
    (["restore", "{t}"], 2),
    (["restore", "{t}", "--version", "999"], 2),
    # maintenance and properties
    (["compact", "{t}"], 2),
    (["compact", "{t}", "--major", "--partition", "create_date=1999-01-01"], 2),
    (["compact", "{t}", "--major", "--target-file-size", "huge"], 2),
    (["clean", "{t}", "--retain", "forever"], 2),
    (["clean", "{t}", "--retain", "0s"], 2),
    (["set", "{t}", "no.such.property=1"], 2),
    (["set", "{t}", "compactor.delta.num.threshold=-1"], 2),
    (["set", "{t}", "write.target-file-size=lots"], 2),
    (["set", "{t}", "orc.compress=LZO"], 2),
    (["set", "{t}"], 2),
    (["skew", "{t}", "--column", "nope"], 65),
    (["list-bucket", "{t}", "--column", "store_id", "--keys", "S01", "--auto"], 2),
]


def _fingerprint(root: Path) -> dict[str, str]:
    """Every file under the table with a hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, lakectl_cli, spark) -> Path:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("sweep")
    table = root / "sales"
    created = lakectl_cli(
        "create", table, "--schema", SCHEMA, "--primary-key", "sell_id",
        "--partition-by", "create_date",
    )  # fmt: skip
    assert created.code == 0, created.err
    base = lakectl_cli("load", table, SALES / "base.csv", "--mode", "upsert", "--engine", "arrow")
    assert base.code == 0, base.err
    return table


@pytest.fixture
def places(loaded: Path, tmp_path: Path) -> dict[str, str]:
    table = tmp_path / "sales"
    shutil.copytree(loaded, table)
    (tmp_path / "empty").mkdir()
    shutil.copy(SALES / "cdc_batch_1.csv", tmp_path / "batch.csv")
    return {
        "t": str(table),
        "csv": str(tmp_path / "batch.csv"),
        "dir": str(tmp_path / "empty"),
        "missing": str(tmp_path / "nowhere" / "x"),
        "new": str(tmp_path / "new_table"),
    }


def _check(run, code: int) -> None:  # type: ignore[no-untyped-def]
    assert run.code == code, (run.code, run.out, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out
    error = run.json["error"]  # exactly one JSON object on stdout
    assert error["type"] and error["message"] and error["type"] != "internal"


@pytest.mark.parametrize(("args", "code"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_each_mistake_is_a_clear_error_and_changes_nothing(places, lakectl_cli, args, code) -> None:  # type: ignore[no-untyped-def]
    table = Path(places["t"])
    before = _fingerprint(table)
    run = lakectl_cli(*[a.format(**places) for a in args], "--json")
    _check(run, code)
    assert _fingerprint(table) == before
    assert not Path(places["new"]).exists() or not any(Path(places["new"]).iterdir())


def _damage_log(table: Path) -> None:
    newest = sorted((table / "_lakectl" / "log").glob("*.json"))[-1]
    newest.write_text(newest.read_text()[:40])


def _damage_orc(table: Path) -> None:
    bucket = next(table.rglob("bucket_*"))
    bucket.write_bytes(b"ORC" + b"\x00" * 64)


@pytest.mark.parametrize(
    ("damage", "args", "code"),
    [
        (_damage_log, ["show", "{t}"], 76),
        (_damage_log, ["snapshot", "{t}"], 76),
        (_damage_log, ["load", "{t}", "{csv}", "--mode", "cdc"], 76),
        (_damage_orc, ["snapshot", "{t}"], 76),
    ],
    ids=["log-show", "log-snapshot", "log-load", "orc-snapshot"],
)
def test_a_damaged_table_is_a_clear_error(places, lakectl_cli, damage, args, code) -> None:  # type: ignore[no-untyped-def]
    table = Path(places["t"])
    damage(table)
    before = _fingerprint(table)
    run = lakectl_cli(*[a.format(**places) for a in args], "--json")
    _check(run, code)
    assert _fingerprint(table) == before


@pytest.fixture
def immutable(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Make a directory read-only even for root (``chattr +i``), and writable again after."""
    made: list[Path] = []

    def make(path: Path) -> None:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {done.stderr.decode()[:200]}")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


@pytest.mark.parametrize(
    "args",
    [
        ["set", "{t}", "clean.retain=3d"],
        ["load", "{t}", "{csv}", "--mode", "cdc", "--op-column", "op_code"],
    ],
    ids=["set", "load"],
)
def test_a_read_only_table_directory_is_a_storage_error(
    places, lakectl_cli, immutable, args
) -> None:  # type: ignore[no-untyped-def]
    table = Path(places["t"])
    before = _fingerprint(table)
    for name in ("log", "txns"):
        if (table / "_lakectl" / name).exists():
            immutable(table / "_lakectl" / name)
    run = lakectl_cli(*[a.format(**places) for a in args], "--json")
    _check(run, 74)
    assert "Operation not permitted" in run.json["error"]["message"]
    assert _fingerprint(table) == before
