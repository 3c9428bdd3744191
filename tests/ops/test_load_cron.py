"""A cron job loading a landing folder, as users write one: one ``lakectl load`` per file, run
again and again. Replayed files are skipped and empty ones commit nothing, both before any JVM
starts; a typo'd table name is "not found" with a did-you-mean; a file with a new column is
loaded with ``--evolve`` and later files without it get NULL; a malformed file is refused naming
its line; two overlapping runs of the same file commit it once. The table equals DuckDB's
oracle of the accepted files and the log holds one load commit per accepted file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from lakectl.storage.fs import storage_for
from lakectl.table.log import DATA_OPS
from lakectl.table.store import TableStore
from tests.support.paths import REPO

pytestmark = pytest.mark.usefixtures("spark")

HEADER = "order_id,amount,status,change_ts,op_code"
LOAD_ARGS = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
# The job as its users write it: load each landing file; a file lakectl refuses as bad input
# (exit 65) moves to rejected/; anything else stops the run with lakectl's exit code.
CRON_SCRIPT = """#!/bin/sh
table="$1"; landing="$2"; shift 2
mkdir -p "$landing/rejected"
for f in "$landing"/*.csv; do
    $LAKECTL load "$table" "$f" "$@" --json >>"$landing/../runs.json"
    rc=$?
    echo "$(basename "$f") $rc" >>"$landing/../codes.txt"
    case $rc in
        0) ;;
        65) mv "$f" "$landing/rejected/" ;;
        *) exit $rc ;;
    esac
done
"""
FILES = {
    "h01.csv": f"{HEADER}\n1,10.0,NEW,2024-01-01 01:00,I\n2,20.0,NEW,2024-01-01 01:01,I\n"
    "3,30.0,NEW,2024-01-01 01:02,I\n",
    "h02.csv": f"{HEADER}\n1,11.0,PAID,2024-01-01 02:00,U\n3,30.0,NEW,2024-01-01 02:01,D\n"
    "4,40.0,NEW,2024-01-01 02:02,I\n",
    "h03.csv": f"{HEADER}\n",  # an hour without changes: the header only
    "h04.csv": "",  # an empty file
    "h05.csv": f"{HEADER},promo\n5,50.0,NEW,2024-01-01 05:00,I,SPRING\n"
    "2,21.0,PAID,2024-01-01 05:01,U,SPRING\n",
    "h06.csv": f"{HEADER}\n6,60.0,NEW,2024-01-01 06:00,I\n1,12.0,SHIPPED,2024-01-01 06:01,U\n",
    "h07.csv": f"{HEADER}\n7,70.0,NEW,2024-01-01 07:00,I\n8,80.0,NEW,2024-01-01 07:01,I,extra\n",
}
LATE = {"h08.csv": f"{HEADER}\n9,90.0,NEW,2024-01-01 08:00,I\n4,41.0,PAID,2024-01-01 08:01,U\n"}


def _oracle(files: list[Path]) -> list[tuple]:
    """The table the accepted files make: the newest change per key (by change_ts), deletes
    dropped; a file without ``promo`` has NULL there."""
    db = duckdb.connect()
    names = ", ".join(f"'{f}'" for f in files)
    rows = db.execute(
        f"""
        WITH changes AS (
            SELECT * FROM read_csv([{names}], header = true, union_by_name = true,
                                   all_varchar = true)
        ), latest AS (
            SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY change_ts DESC) AS n
            FROM changes
        )
        SELECT CAST(order_id AS BIGINT), CAST(amount AS DOUBLE), status, change_ts, promo
        FROM latest WHERE n = 1 AND op_code <> 'D' ORDER BY 1
        """
    ).fetchall()
    db.close()
    return rows


def _table_rows(lakectl_cli, wh: Path) -> list[tuple]:
    done = lakectl_cli(
        "snapshot", "orders", "--warehouse", wh, "--format", "json", "--engine", "arrow"
    )
    assert done.code == 0, done.err
    data = done.json
    rows = data["rows"] if isinstance(data, dict) else data
    cols = ("order_id", "amount", "status", "change_ts", "promo")
    return sorted(tuple(r[c] for c in cols) for r in rows)


def _load_commits(wh: Path) -> list[str]:
    """The source file name of each load commit in the log, in commit order."""
    storage, path = storage_for(str(wh / "orders"))
    store = TableStore(storage, path, "orders")
    return [
        Path(r.info["source"]).name for r in store.read_state().records if r.operation in DATA_OPS
    ]


def _documents(path: Path) -> list[dict]:
    """The JSON documents the runs printed one after the other into ``path``."""
    text, decoder, docs = path.read_text(), json.JSONDecoder(), []
    position = 0
    while text[position:].strip():
        position += len(text[position:]) - len(text[position:].lstrip())
        doc, position = decoder.raw_decode(text, position)
        docs.append(doc)
    return docs


def _fake_java(tmp: Path) -> tuple[dict[str, str], Path]:
    """An environment whose only ``java`` fails loudly, leaving a marker when it is run."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir()
    marker = tmp / "jvm-started"
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\ntouch {marker}\necho 'a JVM was started' >&2\nexit 99\n")
    java.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "LAKECTL_FAILPOINTS")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    env["LAKECTL"] = f"{sys.executable} -m lakectl"
    return env, marker


def test_a_cron_job_over_a_landing_folder(lakectl_cli, tmp_path, monkeypatch):
    wh, landing = tmp_path / "wh", tmp_path / "landing"
    landing.mkdir()
    (landing / "rejected").mkdir()
    for name, text in FILES.items():
        (landing / name).write_text(text)
    script = tmp_path / "load_landing.sh"
    script.write_text(CRON_SCRIPT)
    script.chmod(0o755)

    def run(table: str, name: str, *extra: str):
        return lakectl_cli(
            "load", table, landing / name, *LOAD_ARGS, *extra, "--warehouse", wh, "--json"
        )

    # The first run, in this process (the session's Spark). The first file creates the table.
    schema = "order_id bigint, amount double, status string, change_ts string"
    first = run("orders", "h01.csv", "--create", "--primary-key", "order_id", "--schema", schema)
    assert first.code == 0, first.err
    assert first.json["status"] == "loaded" and first.json["created_table"] is True
    assert run("orders", "h02.csv").code == 0
    for name in ("h03.csv", "h04.csv"):
        empty = run("orders", name)
        assert (empty.code, empty.json["status"]) == (0, "empty"), empty.err
    evolved = run("orders", "h05.csv", "--evolve")
    assert (evolved.code, evolved.json["evolved"]) == (0, ["promo"]), evolved.err
    no_promo = run("orders", "h06.csv")  # the new nullable column is absent: NULL
    assert no_promo.code == 0, no_promo.err
    malformed = run("orders", "h07.csv")
    assert malformed.code == 65
    error = malformed.json["error"]["message"]
    assert f"{landing / 'h07.csv'}, line 3: 6 field(s) where the header has 5" in error
    shutil.move(landing / "h07.csv", landing / "rejected" / "h07.csv")
    replay = run("orders", "h02.csv")
    assert (replay.code, replay.json["status"], replay.json["loaded_by"]) == (0, "skipped", 2)
    accepted = ["h01.csv", "h02.csv", "h05.csv", "h06.csv"]
    assert _load_commits(wh) == accepted

    # The next runs, as cron starts them: the script in a new process each, with a `java`
    # that fails if started. Every file was loaded already, or is empty: all exit 0 without a
    # JVM. The same script with a typo'd table name stops at once with exit 66.
    env, marker = _fake_java(tmp_path)
    args = [str(script), "orders", str(landing), *LOAD_ARGS, "--warehouse", str(wh)]
    replayed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    codes = (tmp_path / "codes.txt").read_text().split("\n")
    assert [c for c in codes if c] == [f"h0{i}.csv 0" for i in range(1, 7)]
    statuses = [doc["status"] for doc in _documents(tmp_path / "runs.json")]
    assert statuses == ["skipped", "skipped", "empty", "empty", "skipped", "skipped"]
    args[1] = "ordrs"
    typo = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert typo.returncode == 66, typo.stderr[-2000:]
    error = _documents(tmp_path / "runs.json")[-1]["error"]
    assert "table ordrs does not exist" in error["message"]
    assert "did you mean orders?" in error["message"] and "--create" in error["hint"]
    assert not marker.exists(), "a JVM was started"
    assert not (wh / "ordrs").exists()

    # Two runs overlap on a new file: another run (a helper thread here, on the same session)
    # reads and writes it and stops before its commit while this one loads the same file and
    # commits; the other then commits after it. The file is committed once; the later run says
    # skipped.
    (landing / "h08.csv").write_text(LATE["h08.csv"])
    reached, go = tmp_path / "reached", tmp_path / "go"
    hold = f"load.before_commit=touch:{reached},load.before_commit=wait:{go}"
    monkeypatch.setenv("LAKECTL_FAILPOINTS", hold)
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(run, "orders", "h08.csv")
        try:
            deadline = time.monotonic() + 300
            while not reached.exists() and not other.done() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert reached.exists(), other.result().err[-3000:] if other.done() else "timeout"
            # The other run waits inside its failpoint; this one runs without stopping.
            monkeypatch.delenv("LAKECTL_FAILPOINTS")
            mine = run("orders", "h08.csv")  # this run commits first
            assert (mine.code, mine.json["status"]) == (0, "loaded"), mine.err
        finally:  # never leave the other run waiting
            go.touch()
        late = other.result()
    assert late.code == 0, late.err[-3000:]
    assert (late.json["status"], late.json["loaded_by"]) == ("skipped", mine.json["version"])

    accepted.append("h08.csv")
    assert _load_commits(wh) == accepted
    assert _table_rows(lakectl_cli, wh) == _oracle([landing / n for n in accepted])
