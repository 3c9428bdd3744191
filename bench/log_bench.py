"""Long logs: 5,000 property changes through the Python API, then cold readers.

    python -m bench.log_bench [--commits 5000]

Prints the seconds of the first and last 100 commits (their ratio shows whether a commit's cost
grows with the log; log checkpoints keep it flat) and of `show` and `history --limit 20` in new
processes, once with checkpoints (every 100 commits, the default) and once without.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lakectl.ops.create import create_table
from lakectl.ops.set_properties import set_properties
from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore


def _commits(root: Path, commits: int, interval: int) -> dict[str, float]:
    storage, path = storage_for(str(root))
    store = TableStore(storage, path, "t")
    create_table(store, "id bigint, v string", ("id",), (), 0)
    set_properties(store, (f"log.checkpoint.interval={interval}",))
    times = []
    for i in range(commits):
        start = time.perf_counter()
        set_properties(TableStore(storage, path, "t"), (f"clean.retain={i % 2 + 1}d",))
        times.append(time.perf_counter() - start)
    return {"first_100_s": sum(times[:100]), "last_100_s": sum(times[-100:])}


def _cold(*args: object) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lakectl", *map(str, args)], check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    """Run the bench and print one JSON object of its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5000)
    commits = parser.parse_args().commits
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, interval in (("checkpoints", 100), ("no_checkpoints", 0)):
            root = Path(tmp) / label
            figures = _commits(root, commits, interval)
            figures["last_over_first"] = figures["last_100_s"] / figures["first_100_s"]
            figures["show_cold_s"] = _cold("show", root)
            figures["history_cold_s"] = _cold("history", root, "--limit", "20")
            results[label] = figures
    print(json.dumps({"commits": commits, **results}, indent=2))


if __name__ == "__main__":
    main()
