"""LIKE in Type 7 statements: the compiled (linear) form against Spark's own LIKE.

    python -m bench.like_bench                    # N = 500, 1000, 2000, 8192
    BENCH_LIKE_NATIVE_MAX=2000 python -m bench.like_bench

Each round reads 18 rows of N ``a`` through ``DELETE FROM t WHERE s LIKE '%a%a%b'`` (no row
matches: the worst case of a backtracking matcher), once as lakectl compiles it and once with
Spark's own ``LIKE`` on the same rows (only up to ``BENCH_LIKE_NATIVE_MAX`` characters, default
1000: it grows as N^3). Both results are checked (18 rows kept). Prints one line per N.
"""

from __future__ import annotations

import os
import time

from lakectl.spark.session import SparkSettings, get_session
from lakectl.spark.statement_compile import apply_statements
from lakectl.table.schema import parse_schema
from lakectl.updates.statements import parse_updates_text

SIZES = (500, 1000, 2000, 8192)
ROWS = 18
PATTERN = "%a%a%b"


def _timed(run) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    count = run()
    return time.perf_counter() - started, count


def main() -> None:
    spark = get_session(SparkSettings(master="local[2]"))
    native_max = int(os.environ.get("BENCH_LIKE_NATIVE_MAX", "1000"))
    schema = parse_schema("id int, s string")
    (stmt,) = parse_updates_text(
        f"DELETE FROM t WHERE s LIKE '{PATTERN}';", "bench.updates", None, schema
    ).statements
    apply_statements(spark.range(1).selectExpr("1 AS id", "'a' AS s"), [stmt], schema).count()
    for size in SIZES:
        df = spark.range(ROWS).selectExpr("CAST(id AS INT) AS id", f"repeat('a', {size}) AS s")
        df = df.cache()
        df.count()
        ours, kept = _timed(lambda: apply_statements(df, [stmt], schema).count())  # noqa: B023
        assert kept == ROWS
        line = f"N={size:5d}  lakectl {ours:7.3f} s"
        if size <= native_max:
            native, kept = _timed(
                lambda: df.where(f"NOT (s LIKE '{PATTERN}')").count()  # noqa: B023
            )
            assert kept == ROWS
            line += f"  Spark LIKE {native:8.3f} s"
        else:
            line += "  Spark LIKE (skipped: N^3)"
        print(line, flush=True)
        df.unpersist()


if __name__ == "__main__":
    main()
