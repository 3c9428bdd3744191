"""``alter``: change a table's schema (no Spark)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    api_table,
    common_options,
    make_context,
    render,
)

if TYPE_CHECKING:
    from lakectl.ops.alter import AlterResult


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.option(
    "--add-column",
    "add_columns",
    multiple=True,
    metavar="'NAME TYPE [NOT NULL] [DEFAULT V]'",
    help="Add a column at the end (repeatable); rows stored before read its default, or NULL.",
)
@click.option(
    "--widen",
    multiple=True,
    metavar="'NAME TYPE'",
    help="Widen a column's type (repeatable): int -> bigint (tinyint/smallint up), "
    "float -> double, decimal(p,s) -> decimal(p2,s) with p2 > p.",
)
@click.option(
    "--rename-column",
    "renames",
    multiple=True,
    metavar="OLD=NEW",
    help="Rename a data column (repeatable). Not partition columns, list-bucketed columns or "
    "columns an active statement names.",
)
@common_options
def alter(
    table: str,
    add_columns: tuple[str, ...],
    widen: tuple[str, ...],
    renames: tuple[str, ...],
    settings: Settings,
) -> None:
    """Change a table's schema as one commit, without rewriting a file. Runs without Spark.

    Files written before keep their columns: they read the added columns' defaults (or NULL),
    widened columns as the new type and renamed columns under the new name (a file's columns
    are matched by position). Reads of a version before the commit (--version, --known-at)
    show the schema of that version.

    \b
    Example:
      lakectl alter sales --add-column "discount double default 0" --widen "qty bigint"
      lakectl alter sales --rename-column qty=quantity
    """
    result = api_table(make_context(settings), table).alter(
        add_columns, widen=widen, rename=renames
    )
    render(settings, result, _print_alter)


def _print_alter(result: AlterResult) -> None:
    for name in result.added:
        column = result.schema[name]
        default = f" default {column.default}" if column.default is not None else ""
        output.line(f"added {name} {column.type}{default}")
    for text in result.widened:
        output.line(f"widened {text}")
    for text in result.renamed:
        output.line(f"renamed {text}")
    output.note(f"committed as log entry {result.log_seq}")
