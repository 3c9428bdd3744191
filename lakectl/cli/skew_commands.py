"""``lakectl skew`` and ``lakectl list-bucket``: parse options, run, render.

Registered on the main group by :mod:`lakectl.cli.main`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    engine_option,
    make_context,
    render,
    run_operation,
)

_PARTITION_OPTION = click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="COL=VALUE",
    help="Only this partition (repeatable; default: all).",
)

if TYPE_CHECKING:
    from lakectl.ops.list_bucket import ListBucketResult
    from lakectl.ops.skew import SkewResult


def _label(values: tuple[str | None, ...] | list[str | None]) -> str:
    shown = ["NULL" if v is None else v for v in values]
    return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--column",
    "columns",
    multiple=True,
    required=True,
    metavar="COL",
    help="Column to measure (repeat for value combinations, e.g. --column x --column y).",
)
@_PARTITION_OPTION
@click.option("--top", type=int, default=10, show_default=True, help="Heaviest values to show.")
@click.option(
    "--min-share",
    type=float,
    default=0.01,
    show_default=True,
    help="Recommend a directory for values holding at least this share of a partition's rows.",
)
@click.option(
    "--max-values",
    type=int,
    default=10,
    show_default=True,
    help="Recommend at most this many values per partition.",
)
@engine_option
@common_options
def skew(
    table: str,
    columns: tuple[str, ...],
    partitions: tuple[str, ...],
    top: int,
    min_share: float,
    max_values: int,
    engine: str | None,
    settings: Settings,
) -> None:
    """Show per partition the heaviest values of a column, their share of rows, and which
    values deserve a list-bucketing directory.

    One pass over the stored rows of the current snapshot. The recommendation is what
    `list-bucket --auto` uses with the same --min-share / --max-values. --engine arrow counts
    in this process without a JVM (columns of integer, string, date or boolean type).

    \b
    Example:
      lakectl skew events --column x --top 10
      lakectl skew events --column x --column y --partition ds=2024-01-02 --json
      lakectl skew events --column x --engine arrow
    """
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).skew(
            columns,
            partitions=partitions,
            top=top,
            min_share=min_share,
            max_values=max_values,
            engine=engine,
        ),
    )
    render(settings, result, _print_skew)


def _print_skew(result: SkewResult) -> None:
    for p in result.partitions:
        rows = [(_label(v.values), v.rows, v.share) for v in p.top]
        others = (p.rows - sum(v.rows for v in p.top), p.others_share) if p.rows else None
        output.bar_chart(
            f"{p.partition or '(table)'}: {p.rows:,} rows, {p.distinct:,} distinct "
            f"{', '.join(result.columns)}",
            rows,
            {_label(v) for v in p.recommended},
            average=p.rows / p.distinct if p.distinct else None,
            others=others,
        )
        advice = (
            f"recommended: {', '.join(_label(v) for v in p.recommended)} "
            f"({p.recommended_share:.0%} of rows)"
            if p.recommended
            else f"recommended: none (no value holds {result.min_share:.1%} of the rows)"
        )
        if p.current is not None:
            advice += f"; now list-bucketed by {p.current.describe()}"
        output.line("  " + advice)


@click.command("list-bucket", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="COL",
    help="Skewed column (repeat for nested directories: --column x --column y).",
)
@click.option(
    "--keys",
    metavar="VALUES",
    help="Skewed values: 6,20,30 or, for several columns, \"(10,'a'),(20,'b')\".",
)
@click.option("--auto", is_flag=True, help="Take the values `lakectl skew` recommends.")
@click.option("--off", is_flag=True, help="Rewrite list-bucketed partitions plain again.")
@_PARTITION_OPTION
@click.option(
    "--min-share", type=float, default=0.01, show_default=True, help="For --auto (see skew)."
)
@click.option(
    "--max-values", type=int, default=10, show_default=True, help="For --auto (see skew)."
)
@click.option("--dry-run", is_flag=True, help="Show what would be rewritten; change nothing.")
@engine_option
@common_options
def list_bucket(
    table: str,
    columns: tuple[str, ...],
    keys: str | None,
    auto: bool,
    off: bool,
    partitions: tuple[str, ...],
    min_share: float,
    max_values: int,
    dry_run: bool,
    engine: str | None,
    settings: Settings,
) -> None:
    """Rewrite partitions into one directory per skewed value plus a default directory.

    Each chosen partition gets a new base split as Hive's list bucketing laid it out
    (`base_N/x=6/`, ..., `base_N/HIVE_DEFAULT_LIST_BUCKETING_DIR_NAME/`); the mapping is kept per
    partition in the log and shown by `show`. One transaction: readers see all of it or none.
    `snapshot --where "x = 6"` then reads only that directory (plus later deltas). Loads keep
    working; a major compaction keeps the layout. Refused: bucketed tables (--buckets), partition
    columns, column types other than integers/string/date/boolean. --engine arrow rewrites
    in this process without a JVM (with --auto, it counts the skew there too).

    \b
    Example:
      lakectl list-bucket events --column x --keys 6,20,30,40
      lakectl list-bucket events --column x --auto --partition ds=2024-01-02
      lakectl list-bucket events --column x --column y --keys "(10,'a'),(20,'c')"
      lakectl list-bucket events --off
      lakectl list-bucket events --column x --keys 6,20 --engine arrow
    """
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).list_bucket(
            columns,
            keys=keys,
            auto=auto,
            off=off,
            partitions=partitions,
            dry_run=dry_run,
            min_share=min_share,
            max_values=max_values,
            engine=engine,
        ),
    )
    render(settings, result, _print_list_bucket)


def _print_list_bucket(result: ListBucketResult) -> None:
    rows = [
        [
            d.relative or "(table)",
            d.current.describe() if d.current else "plain",
            d.wanted.describe() if d.wanted else "plain",
            "rewrite" if d.compaction is not None else d.reason,
        ]
        for d in result.decisions
    ]
    title = f"list bucketing for {result.table}" + (" (dry run)" if result.dry_run else "")
    output.table(title, ["partition", "before", "after", "action"], rows)
    if result.log_seq is not None:
        output.line(
            f"rewrote {len(result.rewritten)} partition(s), {result.rows_written:,} rows, as "
            f"version {result.version} in {result.seconds:.1f}s"
        )
    elif not result.dry_run:
        output.line("nothing to rewrite")
