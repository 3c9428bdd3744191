"""The ``lakectl`` command line: parse options, call one operation, render its result.

Every command shares ``--json``, ``--warehouse``, ``--master``, ``--remote`` and ``--conf``
(:mod:`lakectl.cli.common`); the commands live in one module per group; errors are mapped to exit
codes in :func:`main` and nowhere else.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from lakectl.cli import (
    alter_commands,
    install_commands,
    load_commands,
    maintenance_commands,
    output,
    read_commands,
    restore_commands,
    row_commands,
    server_commands,
    skew_commands,
    stream_commands,
    table_commands,
    updates_commands,
    warehouse_commands,
)
from lakectl.cli.common import CONTEXT_SETTINGS, VERBOSE_HELP, AliasedGroup
from lakectl.errors import InternalError, LakectlError, UsageError, engine_error


@click.group(cls=AliasedGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=install_commands.print_version,
    help="Show the version and whether the Spark data source was found, then exit.",
)
@click.option(
    "--json", "as_json", is_flag=True, default=False, help="Print results and errors as JSON."
)
@click.option(
    "--warehouse",
    metavar="URL",
    help="Root for table names [env LAKECTL_WAREHOUSE; default ./warehouse].",
)
@click.option("--master", metavar="URL", help="Spark master (default local[*]).")
@click.option(
    "--debug",
    is_flag=True,
    default=False,
    help="Show Spark's own output, and the full stack of an unexpected error [env LAKECTL_DEBUG=1].",
)
@click.option("--remote", metavar="URL", help="Spark Connect server, e.g. sc://127.0.0.1:15002.")
@click.option(
    "--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable)."
)
@click.option("--verbose", is_flag=True, default=False, help=VERBOSE_HELP)
def cli(**_: Any) -> None:
    """Maintain Hive-ACID-layout tables on local disks, S3 or HDFS with Spark.

    TABLE is a name under the warehouse (--warehouse, LAKECTL_WAREHOUSE, lakectl.toml; default
    ./warehouse) or a location (/path, file://, s3://, hdfs://).

    \b
    Example:
      lakectl create sales --schema "sell_id bigint, change_ts string, op_code string, \\
          total_amt double, create_date string" --primary-key sell_id --partition-by create_date
      lakectl load sales batch1.csv --mode cdc --op-column op_code --order-by change_ts
      lakectl snapshot sales --where "create_date = '2024-01-02'"
    """


for command in (
    table_commands.create,
    load_commands.load,
    read_commands.snapshot,
    read_commands.changes,
    table_commands.show,
    table_commands.history,
    updates_commands.apply_updates,
    updates_commands.updates_cmd,
    maintenance_commands.compact,
    maintenance_commands.compactions,
    maintenance_commands.clean,
    table_commands.set_cmd,
    alter_commands.alter,
    table_commands.checkpoint,
    table_commands.config_cmd,
    skew_commands.skew,
    skew_commands.list_bucket,
    server_commands.server,
    stream_commands.stream,
    row_commands.delete,
    row_commands.update,
    restore_commands.restore,
    warehouse_commands.tables,
    warehouse_commands.maintain,
    install_commands.completion,
):
    cli.add_command(command)
warehouse_commands.add_table_completion(cli)


# --- entry point ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; map errors to exit codes (0 ok, 2 usage, 65 bad input, 70 internal, 75
    conflict, ...). Any other exception becomes an :class:`InternalError`: a short message, no
    stack unless ``--debug`` asks for it. A reader closing stdout early (``| head -1``) ends
    the command with exit 0 and nothing on stderr."""
    args = list(argv if argv is not None else sys.argv[1:])
    debug = output.debug_requested(args)
    with output.debug_mode(debug), output.table_warnings():
        try:
            # Without standalone mode, click returns the code a command exits with (ctx.exit).
            code = cli.main(
                args=args,
                prog_name="lakectl",
                standalone_mode=False,
                obj={"as_json": _wants_json(args)},
            )
            sys.stdout.flush()
            return code if isinstance(code, int) and not isinstance(code, bool) else 0
        except output.OutputClosed:
            output.discard_stdout()
            return 0
        except LakectlError as exc:
            output.emit_error(exc, _wants_json(args))
            return exc.exit_code
        except click.exceptions.Exit as exc:
            return int(exc.exit_code)
        except click.ClickException as exc:
            output.emit_error(UsageError(exc.format_message()), _wants_json(args))
            return 2
        except click.exceptions.Abort:
            output.stderr.print("aborted")
            return 130
        except KeyboardInterrupt:
            output.stderr.print("interrupted")
            return 130
        except Exception as exc:  # the one catch-all: no traceback unless --debug
            if isinstance(exc, BrokenPipeError) and output.stdout_closed():
                output.discard_stdout()
                return 0
            if debug:
                output.print_stack(exc)
            error = engine_error(exc) or InternalError.wrapping(exc)
            output.emit_error(error, _wants_json(args))
            return error.exit_code


def _wants_json(args: list[str]) -> bool:
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
