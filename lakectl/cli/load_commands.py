"""``load``: one batch as one transaction; the batch options ``stream`` shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    engine_option,
    make_context,
    parse_time_option,
    render,
    run_operation,
)
from lakectl.cli.table_options import (
    Decorator,
    buckets_option,
    partition_by_option,
    primary_key_option,
    schema_option,
)

# --- load -------------------------------------------------------------------------------------

if TYPE_CHECKING:
    from lakectl.ops.load import LoadResult


def batch_options(
    *, format_help: str, mode_help: str, key_help: str, partition_help: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options ``load`` and ``stream`` share: format, mode, key, partitioning, op codes and
    change order (``fmt``, ``mode``, ``primary_key``, ``partition_by``, ``op_column``,
    ``op_values``, ``order_by``)."""
    options: list[Decorator] = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["csv", "json", "parquet", "orc", "avro"]),
            help=format_help,
        ),
        click.option(
            "--mode", type=click.Choice(["append", "upsert", "cdc"]), default=None, help=mode_help
        ),
        primary_key_option(key_help),
        partition_by_option(partition_help),
        click.option("--op-column", metavar="COL", help="CDC op code column [default op_code]."),
        click.option(
            "--op-values",
            default="I=insert,U=update,D=delete",
            show_default=True,
            help="Op code meanings.",
        ),
        click.option(
            "--order-by",
            metavar="COL",
            help="Change-order column: a change older than the stored version is ignored.",
        ),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


evolve_option = click.option(
    "--evolve",
    is_flag=True,
    default=False,
    help="Add the batch's columns the table lacks (at the end, nullable) in a schema commit "
    "just before the load; without it they are an error.",
)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("source")
@batch_options(
    format_help="Source format (default: from the file extension).",
    mode_help="append: insert only; upsert: insert or replace by key; cdc: rows carry an op "
    "code. Default: cdc with --op-column, upsert with a key, else append.",
    key_help="Key columns (comma-separated) of the table --create makes; else, if given, "
    "the table's own.",
    partition_help="Partition columns (comma-separated) of the table --create makes; else, "
    "if given, the table's own.",
)
@click.option(
    "--create",
    is_flag=True,
    default=False,
    help="Create the table when it does not exist (with --primary-key, --partition-by, "
    "--buckets and --schema as `create` takes them; columns from the source without "
    "--schema). Without it, a missing table is an error (exit 66).",
)
@schema_option(
    required=False,
    help="Columns of the table --create makes, as for `create` (default: the source's).",
)
@buckets_option("Bucket files per partition of the table --create makes (0: no bucketing).")
@click.option(
    "--force",
    is_flag=True,
    default=False,
    help="Load the source even if the log says it was loaded already (same location and "
    "content); without it such a load is skipped (exit 0).",
)
@click.option(
    "--effective-from",
    metavar="TIME",
    help="Valid time from which the loaded rows count for --as-of reads (default: always).",
)
@evolve_option
@engine_option
@common_options
def load(
    table: str,
    source: str,
    effective_from: str | None,
    evolve: bool,
    create: bool,
    schema_text: str | None,
    buckets: int,
    force: bool,
    engine: str | None,
    settings: Settings,
    **batch: Any,
) -> None:
    """Load a batch (insert/update/delete) as one transaction.

    Writes new delta and delete-delta directories only; existing files are never rewritten.
    Safe to retry: a source already loaded (same location and content) is skipped, and a
    source without rows (empty, or a CSV header only) commits nothing; both exit 0 before
    Spark starts.

    \b
    Example:
      lakectl load sales sample_data/sales/cdc_batch_1.csv --mode cdc \\
          --op-column op_code --order-by change_ts
    """
    ctx = make_context(settings)
    effective_at = parse_time_option(effective_from, "--effective-from")
    result = run_operation(
        settings,
        ctx,
        lambda ctx: api_table(ctx, table).load(
            source,
            mode=batch["mode"],
            format=batch["fmt"],
            op_column=batch["op_column"],
            op_values=batch["op_values"],
            order_by=batch["order_by"],
            effective_from=effective_at,
            primary_key=batch["primary_key"],
            partition_by=batch["partition_by"],
            evolve=evolve,
            create=create,
            buckets=buckets,
            schema=schema_text,
            force=force,
            engine=engine,
        ),
    )
    render(settings, result, lambda r: _print_load(r, source))


def _print_load(result: LoadResult, source: str) -> None:
    if result.status == "skipped":
        output.line(
            f"skipped {source}: already loaded into {result.table} as version "
            f"{result.loaded_by} (same location and content; --force loads it again)"
        )
        return
    if result.status == "empty":
        output.line(f"nothing to load: {source} has no rows; nothing was committed")
        return
    c = result.counts
    created = " (table created)" if result.created_table else ""
    output.line(
        f"loaded {source} into {result.table} as version {result.write_id}{created} in {result.seconds:.1f}s"
    )
    output.line("  " + ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in c.items()))
    if result.evolved:
        output.note(f"added column(s) {', '.join(result.evolved)} to the table")
