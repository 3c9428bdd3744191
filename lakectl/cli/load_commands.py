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
    make_context,
    parse_time_option,
    render,
    run_operation,
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
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["csv", "json", "parquet", "orc", "avro"]),
            help=format_help,
        ),
        click.option(
            "--mode", type=click.Choice(["append", "upsert", "cdc"]), default=None, help=mode_help
        ),
        click.option("--primary-key", metavar="COLS", help=key_help),
        click.option("--partition-by", metavar="COLS", help=partition_help),
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
    key_help="Key columns (when the load creates the table).",
    partition_help="Partition columns (when the load creates the table).",
)
@click.option(
    "--effective-from",
    metavar="TIME",
    help="Valid time from which the loaded rows count for --as-of reads (default: always).",
)
@evolve_option
@common_options
def load(
    table: str,
    source: str,
    effective_from: str | None,
    evolve: bool,
    settings: Settings,
    **batch: Any,
) -> None:
    """Load a batch (insert/update/delete) as one transaction.

    Writes new delta and delete-delta directories only; existing files are never rewritten.

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
        ),
    )
    render(settings, result, lambda r: _print_load(r, source))


def _print_load(result: LoadResult, source: str) -> None:
    c = result.counts
    created = " (table created)" if result.created_table else ""
    output.line(
        f"loaded {source} into {result.table} as version {result.write_id}{created} in {result.seconds:.1f}s"
    )
    output.line("  " + ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in c.items()))
    if result.evolved:
        output.note(f"added column(s) {', '.join(result.evolved)} to the table first")
