"""``tables`` and ``maintain``: the whole warehouse at once (for cron), and table-name completion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from click.shell_completion import CompletionItem

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    common_options,
    format_option,
    make_context,
    render,
    run_operation,
)
from lakectl.table.properties import human_size

if TYPE_CHECKING:
    from lakectl.api import Warehouse
    from lakectl.ops.maintain import MaintainResult
    from lakectl.ops.tables import TablesResult

SOME_TABLES_FAILED = 79
"""``maintain``'s exit code when at least one table failed (the others were maintained)."""


def api_warehouse(ctx: Any) -> Warehouse:
    """The library's :class:`~lakectl.api.Warehouse` for this command's configuration."""
    from lakectl.api import Warehouse

    return Warehouse(ctx, flag_names=True)


@click.command(context_settings=CONTEXT_SETTINGS)
@format_option
@common_options
def tables(table_format: str, settings: Settings) -> None:
    """List the lakectl tables of the warehouse (--warehouse), one line each (no Spark).

    Per table: version (newest write id), rows, bytes, delta directories a reader merges,
    pending compaction (what `compact --auto` would do now: partitions per kind) and the last
    commit. A table lakectl cannot read is listed with its error. Folders without a `_lakectl`
    directory (Hive-written tables) are not listed.

    \b
    Example:
      lakectl tables --warehouse /data/warehouse
      lakectl tables --format csv
    """
    ctx = make_context(settings)
    result = api_warehouse(ctx).tables()
    render(settings, result, lambda r: _print_tables(r, table_format))


def _print_tables(result: TablesResult, table_format: str) -> None:
    plain = table_format == "table"
    rows = [
        [
            t.table,
            t.version,
            t.rows,
            human_size(t.bytes) if plain and t.bytes is not None else t.bytes,
            t.deltas,
            t.pending if plain else ", ".join(p["type"] for p in t.pending_compaction),
            output.format_millis(t.last_commit) if plain else t.to_dict()["last_commit"],
            (t.error or {}).get("message", ""),
        ]
        for t in result.tables
    ]
    if plain:
        rows = [["-" if v is None else v for v in row] for row in rows]
    columns = ["table", "version", "rows", "bytes", "deltas", "pending_compaction"]
    columns += ["last_commit" + (" (UTC)" if plain else ""), "error"]
    output.table(f"tables in {result.warehouse}" if plain else None, columns, rows, table_format)
    if plain and not result.tables:
        output.note(f"no lakectl tables in {result.warehouse}")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("table_names", nargs=-1, metavar="[TABLE]...")
@click.option(
    "--dry-run", is_flag=True, help="Print each table's plan with its reasons; change nothing."
)
@click.option(
    "--wait",
    is_flag=True,
    help="Wait for a table another maintenance run holds, instead of skipping it.",
)
@common_options
def maintain(table_names: tuple[str, ...], dry_run: bool, wait: bool, settings: Settings) -> None:
    """Compact, clean and checkpoint every table of the warehouse (or the TABLEs named), as each
    table's properties and state call for: one command for cron.

    Per table, in order: `compact --auto` when a partition passes the table's compactor.*
    thresholds; `clean` with the table's clean.retain when it would delete anything
    (replaced directories outside the window, files of dead writers, crashed compactions) or
    expire log entries; a log checkpoint when log.checkpoint.interval entries have no
    checkpoint. Planning reads the log and the listing only; Spark starts only to compact.

    Each table is maintained under its lock (_lakectl/maintain.lock): a second run skips a
    table the first one holds (status "skipped"), or waits for it with --wait. A lock whose
    process is gone (or, from another host, older than 6 hours) is taken over. A table that
    fails is reported with its error and the others are still maintained. Exit code 0 when no
    table failed (skipped ones included), 79 when some failed.

    \b
    Example:
      lakectl maintain --warehouse /data/warehouse --dry-run
      lakectl maintain --json
      lakectl maintain sales orders --wait
    """
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_warehouse(ctx).maintain(table_names, dry_run=dry_run, wait=wait),
    )
    render(settings, result, _print_maintain)
    if result.failed:
        raise click.exceptions.Exit(SOME_TABLES_FAILED)


def _print_maintain(result: MaintainResult) -> None:
    rows = []
    for t in result.tables:
        actions = ", ".join(_action_label(a) for a in t.actions) or "-"
        if t.error:
            detail = str(t.error.get("message", ""))
        elif t.reason:
            detail = t.reason
        else:
            detail = "; ".join(
                f"{a.action.kind}: {a.summary if a.status == 'done' else a.action.reason}"
                for a in t.actions
            )
        rows.append([t.table, t.status, actions, detail or "nothing to do"])
    where = f" in {result.warehouse}" if result.warehouse else ""
    title = ("maintenance plan" if result.dry_run else "maintenance") + where
    output.table(title, ["table", "status", "actions", "detail"], rows)
    for t in result.tables:
        if t.error and t.error.get("hint"):
            output.note(f"{t.table}: hint: {t.error['hint']}")
    ok = len(result.tables) - result.failed - result.skipped
    output.line(
        f"{len(result.tables)} table(s): {ok} ok, {result.skipped} skipped, {result.failed} failed"
    )


def _action_label(a: Any) -> str:
    kinds = sorted({p["type"] for p in a.action.details.get("partitions", ()) if p["type"]})
    label = a.action.kind + (f" ({'/'.join(kinds)})" if kinds else "")
    return label if a.status in ("done", "planned") else f"{label} {a.status}"


# --- table-name completion ----------------------------------------------------------------------

TABLE_ARGUMENTS = ("table", "table_names")


def complete_table_names(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The warehouse's table names starting with ``incomplete`` (the warehouse as the command
    line so far, the environment or lakectl.toml give it); nothing when it cannot be listed."""
    if "/" in incomplete or incomplete.startswith((".", "~")):
        return []  # a path: the shell completes files
    from lakectl.api import open_warehouse

    warehouse = ctx.params.get("warehouse") or ctx.find_root().params.get("warehouse")
    try:
        names = open_warehouse(warehouse).table_names()
    except Exception:  # completion never prints an error into the user's shell
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def add_table_completion(command: click.Command) -> None:
    """Complete table names for the TABLE arguments of ``command`` and its subcommands."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_table_completion(sub)
    for param in command.params:
        if isinstance(param, click.Argument) and param.name in TABLE_ARGUMENTS:
            # What click.Argument(shell_complete=...) sets, for arguments declared elsewhere.
            param._custom_shell_complete = complete_table_names
