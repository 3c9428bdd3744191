"""What every command shares: the common options, one settings object, the Spark context, time
options, and the one way results reach the terminal (text or ``--json``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import click

from lakectl.cli import output
from lakectl.engine import ENGINE_NAMES, Engine, parse_engine
from lakectl.errors import LakectlError, UsageError
from lakectl.table.properties import human_size

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

if TYPE_CHECKING:
    from lakectl.api import Table


class AliasedGroup(click.Group):
    """A group that accepts ``snapshot-at`` for ``snapshot``."""

    aliases: ClassVar[dict[str, str]] = {"snapshot-at": "snapshot"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[Any, Any, list[str]]:
        _, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else None), cmd, rest

    def invoke(self, ctx: click.Context) -> Any:
        # A write to a closed pipe raises BrokenPipeError (Python ignores SIGPIPE); click would
        # turn it into exit 1. :func:`lakectl.cli.main.main` ends the command quietly instead.
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            if output.stdout_closed():
                raise output.OutputClosed() from exc
            raise


@dataclass(frozen=True)
class Settings:
    """The options every command takes, merged from before and after the command name."""

    as_json: bool = False
    warehouse: str | None = None
    master: str | None = None
    remote: str | None = None
    confs: tuple[str, ...] = ()
    verbose: bool = False


def render(settings: Settings, result: Any, text: Callable[[Any], None]) -> None:
    """The one place a command's result is shown: its JSON with ``--json``, else ``text``."""
    if settings.as_json:
        output.emit_json(_json_value(result))
        return
    engine = getattr(result, "engine", None)
    if settings.verbose and isinstance(engine, str) and engine:
        peak = getattr(result, "peak_memory_bytes", None)
        memory = f"; peak memory {human_size(peak)}" if isinstance(peak, int) and peak else ""
        reason = getattr(result, "engine_reason", "") or "asked for"
        output.note(f"engine: {engine} ({reason}){memory}")
    text(result)


def _json_value(result: Any) -> Any:
    if hasattr(result, "to_dict"):
        return result.to_dict()
    if isinstance(result, list):
        return [_json_value(item) for item in result]
    return result


FORMAT_HELP = (
    "How to print the rows: table (fitted to the terminal's width; plain aligned rows, one line "
    "each, when stdout is not a terminal), or csv, tsv or json (an array of objects) with the "
    "field names --json uses. --json prints the whole result (one object) instead."
)


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format table|csv|tsv|json`` for a command that lists rows (``table_format``)."""
    return click.option(
        "--format",
        "table_format",
        type=click.Choice(output.TABLE_FORMATS),
        default="table",
        show_default=True,
        help=FORMAT_HELP,
    )(func)


VERBOSE_HELP = (
    "Also say, on stderr, which engine ran a job that moves data and why (--json always has it)."
)


def engine_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--engine spark|arrow|auto`` for a command that moves data (default: the configured
    engine, see :func:`resolve_engine`)."""
    return click.option(
        "--engine",
        type=click.Choice(ENGINE_NAMES),
        default=None,
        help="spark: run the job in Spark. arrow: run it in this process with pyarrow, "
        "without starting a JVM (for small tables). auto: arrow when the job reads and writes "
        "at most the table property engine.auto.max-bytes and the Arrow engine can do it, else "
        "spark. [default: the `engine` setting (lakectl.toml, env LAKECTL_ENGINE), else spark]",
    )(func)


def resolve_engine(config: Any, value: str | None) -> Engine:
    """The engine a command runs in: ``--engine`` when given, else the configured one."""
    return parse_engine(value) if value else parse_engine(config.engine, source="engine setting")


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options every command takes (also accepted before the command name)."""

    @click.option(
        "--json", "as_json", is_flag=True, default=None, help="Print the result (or error) as JSON."
    )
    @click.option(
        "--warehouse",
        metavar="URL",
        help="Root for table names [env LAKECTL_WAREHOUSE; default ./warehouse].",
    )
    @click.option(
        "--master", metavar="URL", help="Spark master, e.g. local[*] or spark://host:7077."
    )
    @click.option(
        "--remote", metavar="URL", help="Spark Connect server, e.g. sc://127.0.0.1:15002."
    )
    @click.option(
        "--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable)."
    )
    @click.option(
        "--debug",
        is_flag=True,
        default=None,
        help="Show Spark's own output and the full stack of an unexpected error.",
    )
    @click.option("--verbose", is_flag=True, default=None, help=VERBOSE_HELP)
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        as_json: bool | None,
        warehouse: str | None,
        master: str | None,
        remote: str | None,
        confs: tuple[str, ...],
        debug: bool | None,  # read by lakectl.cli.main.main before parsing, as --json is too
        verbose: bool | None,
        **kwargs: Any,
    ) -> Any:
        ctx = click.get_current_context()
        root = ctx.find_root().params
        settings = Settings(
            as_json=bool(as_json if as_json is not None else root.get("as_json")),
            warehouse=warehouse or root.get("warehouse"),
            master=master or root.get("master"),
            remote=remote or root.get("remote"),
            confs=tuple(root.get("confs") or ()) + confs,
            verbose=bool(verbose if verbose is not None else root.get("verbose")),
        )
        ctx.meta["lakectl.json"] = settings.as_json
        return func(*args, settings=settings, **kwargs)

    return wrapper


def load_cli_config(settings: Settings):  # -> Config
    """The effective configuration for these options; its warnings (e.g. an unknown key in
    lakectl.toml) go to stderr, never into the JSON on stdout."""
    from lakectl.config import load_config

    config = load_config(
        warehouse=settings.warehouse,
        master=settings.master,
        remote=settings.remote,
        conf=settings.confs,
    )
    for warning in config.warnings:
        output.warning(warning)
    return config


def make_context(settings: Settings):  # -> Context
    from lakectl.ops.context import Context

    return Context(config=load_cli_config(settings))


def api_table(ctx: Any, ref: str | None) -> Table:
    """The library's :class:`~lakectl.api.Table` for ``ref``: every command that reads or
    changes a table goes through it, so the CLI and the Python API are one code path (its
    errors name the command line's flags)."""
    from lakectl.api import Table

    return Table(ctx, ref, flag_names=True)


def run_operation(settings: Settings, ctx: Any, operation: Callable[[Any], Any]) -> Any:
    """Run ``operation(ctx)`` with a status line on a terminal (none with ``--json``) and return
    its result, for :func:`render`."""
    from lakectl.spark.task_progress import active_tasks

    with output.progress(not settings.as_json, active_tasks) as report:
        ctx.progress = report
        return operation(ctx)


def parse_time_option(value: str | None, option: str, timezone: str | None = None) -> int | None:
    if value is None:
        return None
    from lakectl.times import parse_time

    try:
        parsed = parse_time(value, timezone)
    except LakectlError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from exc
    if parsed.warning:
        output.warning(f"{option}: {parsed.warning}")
    return parsed.millis
