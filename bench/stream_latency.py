"""Streaming bench: arrival-to-readable latency, and deltas per partition under load.

    python -m bench.stream_latency                 # 20 drops for latency, then 200 micro-batches
    python -m bench.stream_latency --drops 30 --batches 0
    python -m bench.run_all --only stream          # the same, from the bench runner

Two phases, each with a real ``lakectl stream`` process (``--master local[2]``, like a user's):

1. **Latency.** After a warm-up file, ``--drops`` CDC files are dropped one every ``--interval``
   seconds (written under a hidden name, then renamed: the arrival moment). A file is readable
   from the moment the commit record naming it exists (``lakectl snapshot`` reads exactly the
   committed records), so latency = ``committed_at`` of that record - arrival. The bench polls
   the log every 50 ms and also records when it saw the record. At the end one ``lakectl
   snapshot`` process checks that every row is there. Target: worst <= 15 s.
2. **Deltas.** ``--batches`` files dropped at once into a second stream run with
   ``--max-files-per-batch 1``: that many back-to-back micro-batches (transactions), each adding a
   delta and a delete delta to both partitions, while ``compact --auto`` runs in the background.
   The bench reads the table's read plan (no Spark) every second: the most delta + delete-delta
   directories any partition held. Target: <= compactor.delta.num.threshold (10) + 6.

Figures, the machine's load average and the stream's own JSON go to bench/results/stream-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
DAYS = ("2024-01-01", "2024-01-02")
LATENCY_TARGET_S = 15.0
DELTA_TARGET = 10 + 6


def log(message: str) -> None:
    print(f"[stream bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Feed:
    """CDC files: new keys in both partitions, updates and deletes of earlier ones."""

    def __init__(self) -> None:
        self.next_id = 1
        self.ts = 0
        self.live: list[tuple[int, str]] = []
        self.expected: set[int] = set()

    def file(self, rows: int) -> str:
        lines = ["id,ts,v,day,op_code"]
        for i in range(rows):
            self.ts += 1
            if i % 5 == 3 and len(self.live) > 10:
                key, day = self.live.pop(0)
                lines.append(f"{key},{self.ts},,{day},D")
                self.expected.discard(key)
            elif i % 5 == 4 and self.live:
                key, day = self.live[-1]
                lines.append(f"{key},{self.ts},u{self.ts},{day},U")
            else:
                key, day = self.next_id, DAYS[i % 2]
                self.next_id += 1
                self.live.append((key, day))
                self.expected.add(key)
                lines.append(f"{key},{self.ts},i{self.ts},{day},I")
        return "\n".join(lines) + "\n"


def drop(land: Path, name: str, text: str) -> float:
    tmp = land / f".{name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, land / name)
    return time.time()


def lakectl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lakectl", *args], cwd=REPO, capture_output=True, text=True
    )


def committed_files(table: Path) -> dict[str, int]:
    """Landing file -> committed_at (ms) of the stream record naming it."""
    from lakectl.storage.fs import storage_for
    from lakectl.table.store import TableStore

    storage, path = storage_for(str(table))
    out = {}
    for record in TableStore(storage, path).read_state().records:
        for name in record.info.get("stream", {}).get("files", ()):
            out[name] = record.committed_at
    return out


def max_deltas(table: Path) -> int:
    from lakectl.scan.target import plan_lakectl
    from lakectl.storage.fs import storage_for
    from lakectl.table.store import TableStore

    storage, path = storage_for(str(table))
    store = TableStore(storage, path)
    _, plans, _ = plan_lakectl(store, store.read_state())
    return max((len(p.deltas) + len(p.delete_deltas) for p in plans), default=0)


def deltas_over_log(table: Path) -> dict[str, int]:
    """Replay the log: per committed state, the most delta + delete-delta directories a reader
    of that state reads in one partition (exact, where 1 s sampling may miss a peak). ``clean``
    must not have run: the directories of every state are still on disk."""
    from lakectl.scan.target import plan_lakectl
    from lakectl.storage.fs import storage_for
    from lakectl.table.store import TableStore

    storage, path = storage_for(str(table))
    store = TableStore(storage, path)
    state = store.read_state()
    peak, data_commits = 0, 0
    for record in state.records:
        if record.operation in ("cdc", "upsert", "append"):
            data_commits += 1
        if record.seq == 0:
            continue
        _, plans, _ = plan_lakectl(store, state.prefix(record.seq))
        peak = max([peak] + [len(p.deltas) + len(p.delete_deltas) for p in plans])
    compactions = sum(r.operation == "compact" for r in state.records)
    return {"max_deltas": peak, "data_commits": data_commits, "compactions": compactions}


def start_stream(table: Path, land: Path, out: Path, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "lakectl", "--master", "local[2]", "stream", str(table)]
    args += [str(land), "--op-column", "op_code", "--order-by", "ts", "--json", *extra]
    return subprocess.Popen(args, cwd=REPO, stdout=open(out, "w"), stderr=subprocess.DEVNULL)


def stop_stream(proc: subprocess.Popen, out: Path) -> dict[str, Any]:
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(300)
    text = out.read_text()
    if code != 0 or "{" not in text:
        raise RuntimeError(f"stream exited {code}: {text[-2000:]}")
    return json.loads(text[text.index("{") :])


def wait_until(check, timeout: float, what: str, step: float = 0.05) -> None:
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


def new_table(root: Path, name: str) -> tuple[Path, Path]:
    table, land = root / name, root / f"{name}_landing"
    land.mkdir(parents=True)
    schema = "id bigint, ts bigint, v string, day string"
    result = lakectl("create", str(table), "--schema", schema, "--primary-key", "id",
                     "--partition-by", "day")  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return table, land


def latency_phase(root: Path, drops: int, interval: float, trigger: str) -> dict[str, Any]:
    table, land = new_table(root, "latency")
    feed = Feed()
    out = root / "latency_stream.json"
    proc = start_stream(table, land, out, "--trigger", trigger)
    log("latency: waiting for the stream (warm-up file)")
    drop(land, "warmup.csv", feed.file(50))
    wait_until(lambda: "warmup.csv" in committed_files(table), 600, "the warm-up commit", 0.2)
    arrivals: dict[str, float] = {}
    seen: dict[str, float] = {}

    def watch() -> None:
        while len(seen) < drops:
            now = time.time()
            for name in committed_files(table):
                if name in arrivals and name not in seen:
                    seen[name] = now
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    loads = []
    for i in range(drops):
        name = f"drop{i:03d}.csv"
        arrivals[name] = drop(land, name, feed.file(200))
        loads.append(os.getloadavg()[0])
        log(f"latency: dropped {name}")
        time.sleep(interval)
    watcher.join(120)
    committed = committed_files(table)
    stream_json = stop_stream(proc, out)
    latencies = sorted(committed[n] / 1000 - arrivals[n] for n in arrivals if n in committed)
    observed = sorted(seen[n] - arrivals[n] for n in arrivals if n in seen)
    check = lakectl("snapshot", str(table), "--json", "--limit", "0", "--columns", "id")
    rows = {r["id"] for r in json.loads(check.stdout)["rows"]} if check.returncode == 0 else None
    return {
        "drops": drops,
        "interval_s": interval,
        "trigger": trigger,
        "committed": len(latencies),
        "commit_latency_s": _summary(latencies),
        "observed_by_poller_s": _summary(observed),
        "all_latencies_s": [round(x, 3) for x in latencies],
        "loadavg_during": _summary(loads),
        "rows_check": "ok"
        if rows == feed.expected
        else f"MISMATCH: {len(rows or ())} rows, expected {len(feed.expected)}",
        "stream": stream_json,
    }


def delta_phase(root: Path, batches: int, timeout: float) -> dict[str, Any]:
    table, land = new_table(root, "deltas")
    feed = Feed()
    out = root / "delta_stream.json"
    # One file per Spark micro-batch (maxFilesPerTrigger): a backlog runs back to back.
    proc = start_stream(table, land, out, "--trigger", "1s", "--max-files-per-batch", "1",
                        "--max-batches", str(batches + 1))  # fmt: skip
    drop(land, "warmup.csv", feed.file(20))
    wait_until(lambda: "warmup.csv" in committed_files(table), 600, "the warm-up commit", 0.2)
    started = time.time()
    for i in range(batches):
        drop(land, f"b{i:04d}.csv", feed.file(20))
    peak, samples, loads = 0, [], []
    while proc.poll() is None:
        if time.time() - started > timeout:
            log(f"deltas: stopping the stream after {timeout:.0f}s (SIGTERM)")
            proc.send_signal(signal.SIGTERM)
            proc.wait(600)
            break
        try:
            now = max_deltas(table)
        except Exception:  # the table is being written: the next sample will do
            now = peak
        peak = max(peak, now)
        samples.append(now)
        loads.append(os.getloadavg()[0])
        time.sleep(1.0)
    text = out.read_text()
    stream_json = json.loads(text[text.index("{") :]) if "{" in text else {"output": text}
    replay = deltas_over_log(table)
    return {
        "micro_batches": batches,
        "committed_micro_batches": replay["data_commits"],
        "max_deltas_per_partition_replayed": replay["max_deltas"],
        "compactions_committed": replay["compactions"],
        "seconds": round(time.time() - started, 1),
        "max_deltas_per_partition_sampled": peak,
        "max_deltas_per_partition_stream": stream_json.get("max_deltas_per_partition"),
        "final_deltas_per_partition": max_deltas(table),
        "target": DELTA_TARGET,
        "loadavg_during": _summary(loads),
        "stream": stream_json,
    }


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 3),
        "worst": round(max(values), 3),
        "best": round(min(values), 3),
    }


def render(report: dict[str, Any]) -> str:
    lines = [f"lakectl stream bench  {report['started']}  {os.cpu_count()} cpus"]
    lat = report.get("latency")
    if lat:
        c, o = lat["commit_latency_s"], lat["observed_by_poller_s"]
        verdict = "PASS" if c.get("worst", 1e9) <= LATENCY_TARGET_S else "FAIL"
        lines.append(
            f"  latency, {lat['committed']}/{lat['drops']} drops every {lat['interval_s']}s, "
            f"trigger {lat['trigger']}: arrival -> commit median {c.get('median')} s, worst "
            f"{c.get('worst')} s (target <= {LATENCY_TARGET_S}: {verdict}); seen by a 50 ms log "
            f"poller median {o.get('median')} s, worst {o.get('worst')} s; rows {lat['rows_check']}"
        )
        lines.append(f"    load average (1 min) during drops: {lat['loadavg_during']}")
    deltas = report.get("deltas")
    if deltas:
        verdict = "PASS" if deltas["max_deltas_per_partition_replayed"] <= DELTA_TARGET else "FAIL"
        lines.append(
            f"  deltas, {deltas['committed_micro_batches']} micro-batches committed in "
            f"{deltas['seconds']} s: most delta+delete-delta dirs in a partition over every log "
            f"state {deltas['max_deltas_per_partition_replayed']} (sampled 1/s: "
            f"{deltas['max_deltas_per_partition_sampled']}; after each commit: "
            f"{deltas['max_deltas_per_partition_stream']}), at "
            f"the end {deltas['final_deltas_per_partition']}; target <= {DELTA_TARGET}: {verdict}; "
            f"compactions {deltas['stream'].get('compactions')}"
        )
        lines.append(f"    load average (1 min) during: {deltas['loadavg_during']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_latency", description=__doc__)
    parser.add_argument("--drops", type=int, default=20)
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between drops")
    parser.add_argument("--trigger", default="1s")
    parser.add_argument("--batches", type=int, default=200, help="0: skip the delta phase")
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("BENCH_DATA_DIR")
        or os.path.join(tempfile.gettempdir(), "lakectl-bench"),
    )
    parser.add_argument(
        "--delta-timeout", type=float, default=3600, help="stop the delta phase after SECONDS"
    )
    parser.add_argument("--replay", metavar="TABLE", help="only replay TABLE's log (deltas)")
    parser.add_argument("--quick", action="store_true", help="20 drops, 50 micro-batches")
    args = parser.parse_args(argv)
    if args.replay:
        print(json.dumps(deltas_over_log(Path(args.replay))))
        return 0
    if args.quick:
        args.batches = min(args.batches, 50)
    root = Path(args.data_dir) / f"stream-{os.getpid()}"
    root.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S")}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"stream-{stamp}.json"
    if args.drops:
        report["latency"] = latency_phase(root, args.drops, args.interval, args.trigger)
        path.write_text(json.dumps(report, indent=1) + "\n")
    if args.batches:
        log(f"deltas: {args.batches} micro-batches")
        report["deltas"] = delta_phase(root, args.batches, args.delta_timeout)
        path.write_text(json.dumps(report, indent=1) + "\n")
    text = render(report)
    print(text)
    path.with_suffix(".txt").write_text(text + "\n")
    log(f"results in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
