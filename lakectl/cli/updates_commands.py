"""``apply-updates`` and ``updates``: Type 7 statements."""

from __future__ import annotations

import click

from lakectl.cli import output
from lakectl.cli.common import (
    CONTEXT_SETTINGS,
    Settings,
    common_options,
    format_option,
    make_context,
    parse_time_option,
    run_operation,
)
from lakectl.errors import UsageError

# --- Type 7 statements -------------------------------------------------------------------------


@click.command("apply-updates", context_settings=CONTEXT_SETTINGS)
@click.argument("table")
@click.argument("file", required=False)
@click.option("--timezone", metavar="TZ", help="Zone for times without an offset (default UTC).")
@click.option(
    "--materialize",
    is_flag=True,
    help="Fold the statements effective by --until into the data and retire them (Spark).",
)
@click.option(
    "--until", metavar="TIME", help="With --materialize: fold statements effective by TIME."
)
@common_options
def apply_updates(
    table: str,
    file: str | None,
    timezone: str | None,
    materialize: bool,
    until: str | None,
    settings: Settings,
) -> None:
    """Install the UPDATE/DELETE statements of FILE as the table's Type 7 statements.

    In FILE, statements end with ';' and a `-- time=VALUE` line sets the effective time of the
    statements after it (epoch ms, yyyy-MM-dd or ISO date-time; before any: time 0).
    Every statement is checked first (columns, types, allowed functions); nothing is installed
    unless all pass. Runs without Spark.

    With --materialize --until TIME (no FILE), the active statements effective at or before TIME
    are written into the data as one transaction and retired: reads at TIME or later are
    unchanged, reads --as-of an earlier time still apply them to the original rows.

    \b
    Examples:
      lakectl apply-updates doctors sample_data/doctors/updates.sql
      lakectl snapshot doctors --as-of 2014-01-01
      lakectl apply-updates doctors --materialize --until 2014-09-01
    """
    from lakectl.ops.updates import install

    if materialize or until is not None:
        _materialize_updates(table, file, until, timezone, settings)
        return
    if file is None:
        raise UsageError(
            "apply-updates needs FILE (or --materialize --until TIME)",
            hint="lakectl apply-updates TABLE FILE",
        )
    ctx = make_context(settings)
    result = install(ctx, table, file, timezone)
    for warning in result.warnings:
        output.note(f"warning: {warning}")
    if settings.as_json:
        output.emit_json(result.to_json())
        return
    output.line(
        f"installed {result.installed} statement(s) into {result.table} as version {result.version}; "
        f"{result.total_active} active"
    )


def _materialize_updates(
    table: str, file: str | None, until: str | None, timezone: str | None, settings: Settings
) -> None:
    from lakectl.ops.materialize import materialize

    if file is not None:
        raise UsageError("--materialize takes no FILE: install and materialize separately")
    until_ms = parse_time_option(until, "--until", timezone)
    if until_ms is None:
        raise UsageError(
            "--materialize needs --until TIME", hint="e.g. --until 2014-09-01 (epoch ms or a date)"
        )
    ctx = make_context(settings)
    result = run_operation(settings, ctx, materialize, table, until_ms)
    if result is None:
        return
    if result.version is None:
        output.line(
            f"nothing to materialize in {result.table}: no active statement is effective at "
            f"or before {output.format_millis(until_ms)} ({result.remaining} active); "
            "nothing was committed"
        )
    else:
        counts = result.counts
        output.line(
            f"materialized {result.retired} statement(s) into {result.table} as version "
            f"{result.version}: {counts['rewritten']} row(s) rewritten, {counts['deleted']} "
            f"deleted; {result.remaining} statement(s) still active"
        )
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
    from lakectl.ops.updates import list_installed

    ctx = make_context(settings)
    entries = list_installed(ctx.table(table))
    if settings.as_json:
        output.emit_json([e.to_json() for e in entries])
        return
    rows = [
        [
            e.to_json()["effective"],
            e.statement.sql if e.problem is None else f"REFUSED: {e.problem}",
            e.version,
            output.format_millis(e.installed_at),
        ]
        for e in entries
    ]
    output.table(
        None, ["effective (UTC)", "statement", "version", "installed (UTC)"], rows, table_format
    )
