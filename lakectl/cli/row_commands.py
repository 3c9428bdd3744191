"""``lakectl delete`` and ``lakectl update``: change the rows matching a condition, now, as one
transaction (unlike the Type 7 statements of ``apply-updates``, applied on read).

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
from lakectl.table.log import Operation

if TYPE_CHECKING:
    from lakectl.ops.dml import DmlResult

_DRY_RUN = click.option(
    "--dry-run", is_flag=True, help="Count the rows that would change per partition; write nothing."
)


def _print_change(result: DmlResult) -> None:
    verb = {"delete": "deleted", "update": "updated"}[result.kind]
    count = result.deleted if result.kind is Operation.DELETE else result.updated
    rows = [[p.partition or "(table)", p.deleted, p.updated] for p in result.partitions]
    if rows:
        title = f"{'would change' if result.dry_run else 'changed'} ({result.table})"
        output.table(title, ["partition", "deleted", "updated"], rows)
    scan = f"read {result.partitions_read} of {result.partitions_total} partition(s)"
    if result.dry_run:
        output.line(f"dry run: {count:,} row(s) would be {verb}; nothing was written ({scan})")
    elif result.version is None:
        output.line(f"no row matched; nothing was committed ({scan})")
    else:
        output.line(
            f"{verb} {count:,} row(s) in {result.table} as version {result.version} "
            f"in {result.seconds:.1f}s ({scan})"
        )


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--where", required=True, metavar="EXPR", help="Which rows to delete (SQL over the columns)."
)
@_DRY_RUN
@engine_option
@common_options
def delete(table: str, where: str, dry_run: bool, engine: str | None, settings: Settings) -> None:
    """Delete the rows matching --where, now, as one transaction.

    Writes delete events only (the stored files stay; time travel to earlier versions still
    shows the rows until `clean`). The condition is checked like a Type 7 statement: only the
    table's columns and the vetted functions. A condition on partition columns reads only the
    partitions it can match; `--engine auto` weighs the size of those.

    \b
    Example:
      lakectl delete sales --where "acct_id = 1013" --dry-run
      lakectl delete sales --where "create_date = '2024-01-02' AND status_id = 'VOID'"
    """
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).delete(where, dry_run=dry_run, engine=engine),
    )
    render(settings, result, _print_change)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--set",
    "assignments",
    required=True,
    metavar="ASSIGNMENTS",
    help="New values, e.g. \"status_id = 'PAID', total_amt = total_amt * 1.1\".",
)
@click.option("--where", metavar="EXPR", help="Which rows to change (default: every row).")
@_DRY_RUN
@engine_option
@common_options
def update(
    table: str,
    assignments: str,
    where: str | None,
    dry_run: bool,
    engine: str | None,
    settings: Settings,
) -> None:
    """Change the rows matching --where, now, as one transaction.

    Writes delete events for the old rows and the new versions as new rows, as a load does;
    rows the change leaves as they were are not rewritten. Checked like a Type 7 statement.

    \b
    Example:
      lakectl update sales --set "status_id = 'REFUNDED'" --where "sell_id = 17" --dry-run
    """
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).update_rows(
            assignments, where, dry_run=dry_run, engine=engine
        ),
    )
    render(settings, result, _print_change)
