"""What people see on a terminal, through a real pseudo-terminal: tables fit 80, 120 and 200
columns (exact screens under tests/cli/screens/), snapshots come in key order with a footer
naming version and time, and the status line reports Spark's tasks while a job runs.

The table is written once with the shared Spark session; the screens come from commands that
need no JVM (``snapshot --engine arrow``, ``history``, ``show``, ``updates``), run by one child
process per width whose stdout and stderr are terminals of that size.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import lakectl
from lakectl.cli import output
from lakectl.spark.task_progress import active_tasks
from tests.support.cli import run_lakectl
from tests.support.paths import REPO

SCREENS = Path(__file__).parent / "screens"
# Set to write the screens afresh (then read them before committing).
WRITE_SCREENS = os.environ.get("LAKECTL_WRITE_SCREENS") == "1"

SCHEMA = "id bigint, store string, note string, amount double, qty int, day string"
NOTES = [
    "",
    "gift wrap",
    "returned: the customer found a scratch on the lid and asked for a new one",
    "paid by card",
]
# Keys out of order and over two loads, so the files' order is not the key order.
FIRST = [17, 3, 9, 14, 1, 20, 6, 11, 8, 2, 19, 5]
SECOND = [4, 16, 7, 12, 18, 10, 13, 15, 3, 9]
UPDATES = """update sales set store = 'S99' where id = 1;
-- time=2024-03-01
update sales set qty = 0 where id = 2;
"""
COMMANDS = [
    ["snapshot", "sales", "--engine", "arrow"],
    ["history", "sales"],
    ["show", "sales"],
    ["updates", "sales"],
]


def _row(key: int, version: int) -> list[object]:
    return [
        key,
        f"S{key % 3 + 1:02d}",
        NOTES[key % len(NOTES)],
        round(key * 3.25 + version, 2),
        key % 7 * version,
        f"2024-01-0{key % 3 + 1}",
    ]


def _batch(path: Path, keys: list[int], version: int) -> str:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "store", "note", "amount", "qty", "day"])
        writer.writerows(_row(k, version) for k in keys)
    return path.name


@pytest.fixture(scope="module")
def root(spark: object) -> Iterator[Path]:
    """A warehouse with ``sales`` (key id, by day; two loads, two statements) and ``nokey``,
    under a path as long on every machine (lines that name it fold the same way)."""
    root = Path(tempfile.mkdtemp(prefix="lakectl-screens-", dir="/tmp"))
    before = Path.cwd()
    os.chdir(root)  # sources by relative name: the history's source column is the same each run
    try:
        sales = lakectl.create_table(
            "warehouse/sales", schema=SCHEMA, primary_key="id", partition_by="day", spark=spark
        )
        sales.load(_batch(root / "batch_1.csv", FIRST, 1), mode="upsert")
        sales.load(_batch(root / "batch_2.csv", SECOND, 2), mode="upsert")
        (root / "fixes.sql").write_text(UPDATES)
        assert run_lakectl("apply-updates", "warehouse/sales", "fixes.sql").code == 0
        nokey = lakectl.create_table(
            "warehouse/nokey", schema="id bigint, name string", spark=spark
        )
        nokey.load(_batch_plain(root / "plain.csv"), mode="append")
    finally:
        os.chdir(before)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _batch_plain(path: Path) -> str:
    path.write_text("id,name\n3,c\n1,a\n2,b\n")
    return path.name


# --- screens through a pseudo-terminal --------------------------------------------------------

DRIVER = """
import json, sys
from lakectl.cli.main import main
for args in json.loads(sys.argv[1]):
    print("$ lakectl " + " ".join(args), flush=True)
    print(f"[exit {main([*args, '--warehouse', 'warehouse'])}]", flush=True)
"""
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def _terminal(rows: int, columns: int) -> tuple[int, int]:
    master, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return master, child


def _run_on_terminals(root: Path, columns: int, env_columns: int | None) -> tuple[str, str]:
    """stdout and stderr of the commands, each a terminal ``columns`` wide (``COLUMNS`` set to
    ``env_columns`` when given: it wins over the terminal's size)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(PYTHONPATH=str(REPO), TERM="xterm-256color")
    env.pop("FORCE_COLOR", None)
    if env_columns is not None:
        env["COLUMNS"] = str(env_columns)
    out_master, out_child = _terminal(50, columns)
    err_master, err_child = _terminal(50, columns)
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(COMMANDS)],
        stdin=subprocess.DEVNULL,
        stdout=out_child,
        stderr=err_child,
        cwd=root,
        env=env,
    )
    os.close(out_child)
    os.close(err_child)
    received = {out_master: bytearray(), err_master: bytearray()}
    open_fds = set(received)
    deadline = time.monotonic() + 120
    while open_fds and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_fds), [], [], 1)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child side closed
                chunk = b""
            if chunk:
                received[fd] += chunk
            else:
                open_fds.discard(fd)
    assert process.wait(timeout=30) == 0
    for fd in received:
        os.close(fd)
    out, err = (received[fd].decode().replace("\r\n", "\n") for fd in (out_master, err_master))
    return out, err


def _screen(text: str, root: Path) -> str:
    """What stays on the screen, with what differs between runs replaced: commit times (by as
    many characters) and the table's location."""
    return _TIME.sub("YYYY-MM-DD hh:mm:ss", text.replace(str(root), "<tmp>"))


def _lines_left(stream: str) -> list[str]:
    """The lines a terminal keeps of ``stream``: escape sequences dropped, and each line as it
    was last redrawn (after its last carriage return)."""
    lines = [_CSI.sub("", line).rsplit("\r", 1)[-1] for line in stream.split("\n")]
    return [line for line in lines if line.strip()]


@pytest.mark.parametrize(("columns", "env_columns"), [(80, None), (120, None), (80, 200)])
def test_tables_fit_the_terminal(root: Path, columns: int, env_columns: int | None) -> None:
    out, err = _run_on_terminals(root, columns, env_columns)
    width = env_columns or columns
    screen = _screen(out, root)
    expected = SCREENS / f"screens_{width}.txt"
    if WRITE_SCREENS:
        expected.write_text(screen)
    assert screen == expected.read_text()
    assert max(len(line) for line in screen.splitlines()) <= width
    footer = _lines_left(err)
    assert "20 row(s) of version 3 as of now; in key order (id)" in footer


def test_piped_output_is_unchanged_plain_rows(root: Path) -> None:
    run = run_lakectl("snapshot", "sales", "--warehouse", root / "warehouse", "--engine", "arrow")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].split() == ["id", "store", "note", "amount", "qty", "day"]
    assert [int(line.split()[0]) for line in lines[1:]] == list(range(1, 21))
    assert NOTES[2] in run.out  # whole, never cut
    assert run.err.splitlines() == ["sales @ version 3", "20 row(s)"]


# --- key order --------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["spark", "arrow"])
def test_snapshots_are_in_key_order_by_default(root: Path, engine: str) -> None:
    warehouse = root / "warehouse"
    run = run_lakectl("snapshot", "sales", "--warehouse", warehouse, "--engine", engine, "--json")
    assert run.code == 0, run.err
    assert run.json["order_by"] == ["id"]
    assert [r["id"] for r in run.json["rows"]] == list(range(1, 21))
    # the key is read for the order even when --columns leaves it out
    narrow = run_lakectl(
        "snapshot", "sales", "--warehouse", warehouse, "--engine", engine, "--json",
        "--columns", "amount", "--limit", "3",
    )  # fmt: skip
    assert narrow.code == 0, narrow.err
    assert narrow.json["rows"] == [{"amount": 4.25}, {"amount": 7.5}, {"amount": 11.75}]
    nokey = run_lakectl("snapshot", "nokey", "--warehouse", warehouse, "--engine", engine, "--json")
    assert nokey.code == 0, nokey.err
    assert nokey.json["order_by"] == []
    api = lakectl.open_table(str(warehouse / "sales")).scan(engine=engine).collect()  # type: ignore[arg-type]
    assert api.order_by == []  # the library sorts only when asked


# --- progress ---------------------------------------------------------------------------------


def test_elapsed_time_reads_as_people_write_it() -> None:
    assert [output.elapsed(s) for s in (0.4, 59.9, 65, 3600 + 180)] == [
        "0s",
        "59s",
        "1m 05s",
        "1h 03m",
    ]


def test_the_status_line_shows_phase_elapsed_time_and_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rich.console import Console

    screen = io.StringIO()
    monkeypatch.setattr(output, "stderr", Console(file=screen, force_terminal=True, width=80))
    with output.progress(True, lambda: "stage 4: 3/8 tasks") as report:
        report("reading")
        time.sleep(output.PROGRESS_TICK * 1.5)
    assert "reading  0s  stage 4: 3/8 tasks" in _CSI.sub("", screen.getvalue())
    quiet = io.StringIO()
    monkeypatch.setattr(output, "stderr", Console(file=quiet, force_terminal=False))
    with output.progress(True, lambda: "stage 4: 3/8 tasks") as report:
        report("reading")
    assert quiet.getvalue() == ""


def test_spark_task_counts_while_a_job_runs(spark: object) -> None:
    assert active_tasks() is None  # no job running
    seen: list[str] = []
    job = threading.Thread(
        target=lambda: (
            spark.sparkContext.parallelize(range(2), 2)  # type: ignore[attr-defined]
            .map(lambda x: time.sleep(1.0) or x)
            .collect()
        )
    )
    job.start()
    deadline = time.monotonic() + 30
    while job.is_alive() and time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if (counts := active_tasks()) is not None:
                seen.append(counts)
        time.sleep(0.2)
    job.join()
    assert seen and all(re.fullmatch(r"stage \d+: [0-2]/2 tasks", s) for s in seen), seen
