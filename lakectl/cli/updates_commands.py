"""``apply-updates`` and ``updates``: Type 7 statements."""

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
    format_option,
    make_context,
    parse_time_option,
    render,
    run_operation,
)
from lakectl.errors import UsageError
from lakectl.table.log import ALWAYS

if TYPE_CHECKING:
    from lakectl.ops.materialize import MaterializeResult
    from lakectl.ops.updates import InstalledStatement, InstallResult, Statements

# --- Type 7 statements -------------------------------------------------------------------------


@click.command("apply-updates", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("file", required=False)
@click.option("--timezone", metavar="TZ", help="Zone for times without an offset (default UTC).")
@click.option(
    "--materialize",
    is_flag=True,
    help="Fold the statements effective by --until into the data and retire them.",
)
@click.option(
    "--until", metavar="TIME", help="With --materialize: fold statements effective by TIME."
)
@engine_option
@common_options
def apply_updates(
    table: str,
    file: str | None,
    timezone: str | None,
    materialize: bool,
    until: str | None,
    engine: str | None,
    settings: Settings,
) -> None:
    """Install the UPDATE/DELETE statements of FILE as the table's Type 7 statements.

    In FILE, statements end with ';' and a `-- time=VALUE` line sets the effective time of the
    statements after it (epoch ms, yyyy-MM-dd or ISO date-time; before any: time 0).
    Every statement is checked first (columns, types, allowed functions); nothing is installed
    unless all pass. Runs without Spark.

    With --materialize --until TIME (no FILE), the active statements effective at or before TIME
    are written into the data as one transaction and retired: reads at TIME or later are
    unchanged, reads --as-of an earlier time still apply them to the original rows. --engine
    (with --materialize) says which engine folds them in: arrow needs no JVM.

    \b
    Examples:
      lakectl apply-updates doctors sample_data/doctors/updates.sql
      lakectl snapshot doctors --as-of 2014-01-01
      lakectl apply-updates doctors --materialize --until 2014-09-01
    """
    if materialize or until is not None:
        _materialize_updates(table, file, until, timezone, engine, settings)
        return
    if file is None:
        raise UsageError(
            "apply-updates needs FILE (or --materialize --until TIME)",
            hint="lakectl apply-updates TABLE FILE",
        )
    result = api_table(make_context(settings), table).apply_updates(file, timezone)
    for warning in result.warnings:
        output.warning(warning)
    render(settings, result, _print_install)


def _print_install(result: InstallResult) -> None:
    output.line(
        f"installed {result.installed} statement(s) into {result.table} as version {result.version}; "
        f"{result.active_statements} active"
    )


def _materialize_updates(
    table: str,
    file: str | None,
    until: str | None,
    timezone: str | None,
    engine: str | None,
    settings: Settings,
) -> None:
    if file is not None:
        raise UsageError("--materialize takes no FILE: install and materialize separately")
    until_ms = parse_time_option(until, "--until", timezone)
    if until_ms is None:
        raise UsageError(
            "--materialize needs --until TIME", hint="e.g. --until 2014-09-01 (epoch ms or a date)"
        )
    result = run_operation(
        settings,
        make_context(settings),
        lambda ctx: api_table(ctx, table).materialize(until_ms, engine=engine),
    )
    render(settings, result, _print_materialize)


def _print_materialize(result: MaterializeResult) -> None:
    if result.version is None:
        output.line(
            f"nothing to materialize in {result.table}: no active statement is effective at "
            f"or before {output.format_millis(result.until)} ({result.active_statements} active); "
            "nothing was committed"
        )
    else:
        counts = result.counts
        output.line(
            f"materialized {result.retired_statements} statement(s) into {result.table} as version "
            f"{result.version}: {counts['rewritten']} row(s) rewritten, {counts['deleted']} "
            f"deleted; {result.active_statements} statement(s) still active"
        )
        output.note(f"engine: {result.engine} ({result.engine_reason})")
    if result.held_back:
        output.note(
            f"note: {result.held_back} statement(s) effective by --until stay active: they "
            "follow a later-effective statement in install order"
        )


@click.command("updates", context_settings=CONTEXT_SETTINGS)
@click.argument("table", required=False)
@format_option
@common_options
def updates_cmd(table: str | None, table_format: str, settings: Settings) -> None:
    """List the table's installed Type 7 statements with their effective times (no Spark).

    \b
    Example:
      lakectl updates doctors
    """
    entries = api_table(make_context(settings), table).statements()
    render(settings, entries, lambda e: _print_statements(e, table_format))


# Effective times that mean "from the beginning": a statement file without a time directive
# (0), and changes valid at every time (the log's ALWAYS).
_FROM_THE_START = (0, ALWAYS)


def _effective(entry: InstalledStatement) -> str:
    """When the statement takes effect, in the terminal table: ``always`` for one effective
    from the start, else the ISO time (which csv, tsv and json always give)."""
    if entry.statement.effective_ms in _FROM_THE_START:
        return "always"
    return entry.effective


def _print_statements(entries: Statements, table_format: str) -> None:
    if table_format != "table":
        output.records(entries.records(), table_format, entries.columns)
        return
    rows = [
        [
            _effective(e),
            e.statement.sql if e.problem is None else f"REFUSED: {e.problem}",
            e.version,
            output.format_millis(e.installed_at),
        ]
        for e in entries
    ]
    output.table(None, ["effective (UTC)", "statement", "version", "installed (UTC)"], rows)
