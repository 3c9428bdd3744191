"""One snapshot read in a new process, as a cron job's ``lakectl snapshot`` makes it: the
JVM has compiled nothing yet. Run by the compaction bench (``python -m bench.cold_read TABLE
SEQ``); prints one JSON line: the session start and the read (Spark's analysis and planning of
the snapshot query, the merge-on-read, an aggregate over every column), in wall and CPU seconds.
Reading the log and listing the files come before the timed read, as in the bench's warm reads.

``SEQ`` is the last log record of the state to read (``-1``: the newest), so the layout of a
table before a compaction can be read again while its files are still there.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    table, seq = argv[0], int(argv[1])
    started = time.perf_counter()
    from bench import load_bench as lb
    from bench.compact_bench import _layout, _read_layout

    lb.start_session().range(1).count()
    session_s = time.perf_counter() - started
    ctx = lb.lakectl_context(table.rsplit("/", 1)[0])
    timing = _read_layout(ctx, _layout(ctx, table, seq), "cold_read")
    print(
        json.dumps(
            {
                "session_s": round(session_s, 3),
                "read_s": round(timing.seconds, 3),
                "read_cpu_s": timing.detail.get("cpu_s"),
                "rows": timing.detail["rows"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
