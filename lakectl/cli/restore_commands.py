"""``lakectl restore``: make a table read as it did at an earlier version, as one new commit.

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
    parse_time_option,
    render,
    run_operation,
)

if TYPE_CHECKING:
    from lakectl.ops.restore import RestoreResult


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option("--version", type=int, help="Restore the state right after this version.")
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    help="Restore the table as it was at TIME (the newest version committed by then).",
)
@click.option("--dry-run", is_flag=True, help="Count what would change; write nothing.")
@engine_option
@common_options
def restore(
    table: str,
    version: int | None,
    as_of: str | None,
    dry_run: bool,
    engine: str | None,
    settings: Settings,
) -> None:
    """Make the table read as it did at an earlier version, as one new commit.

    Rows added since are deleted, rows deleted or changed since are written again, and the
    Type 7 statements installed or retired since are undone. History is kept: the versions in
    between stay reachable by time travel until `clean` removes their files.

    \b
    Example:
      lakectl restore sales --version 3 --dry-run
      lakectl restore sales --as-of "2024-06-01 12:00"
    """
    at = parse_time_option(as_of, "--as-of")
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).restore(
            version, as_of=at, dry_run=dry_run, engine=engine
        ),
    )
    render(settings, result, _print_restore)


def _print_restore(result: RestoreResult) -> None:
    what = (
        f"{result.deleted:,} row(s) deleted, {result.reinserted:,} written again, "
        f"{result.statements_retired} statement(s) retired, "
        f"{result.statements_reactivated} active again"
    )
    if result.dry_run:
        output.line(f"dry run: restoring version {result.restored_version} would change: {what}")
    elif result.version is None:
        output.line(
            f"{result.table} already reads as version {result.restored_version}; nothing was committed"
        )
    else:
        output.line(
            f"restored {result.table} to version {result.restored_version} as version "
            f"{result.version}: {what}"
        )
