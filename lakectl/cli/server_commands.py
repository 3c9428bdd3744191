"""``lakectl server start|stop|status``: a background Spark Connect server for interactive use.

Registered on the main group by :mod:`lakectl.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from lakectl.cli import output
from lakectl.cli.common import CONTEXT_SETTINGS, Settings, common_options

_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")

NOT_RUNNING = 3
"""``server status``'s exit code when no server runs (as an init script's ``status``)."""


def _render(status: Any, as_json: bool) -> None:
    if as_json or click.get_current_context().find_root().params.get("as_json"):
        output.emit_json(status.to_dict())
        return
    if status.running:
        verb = "started" if status.action == "started" else "running"
        output.line(f"Spark Connect server {verb} at {status.url} (pid {status.pid})")
        output.line(f"  log: {status.log}")
        output.line(f"  use it: lakectl --remote {status.url} snapshot TABLE")
        output.line(f"     or: export LAKECTL_REMOTE={status.url}")
        output.line(f'     or: remote = "{status.url}" in lakectl.toml')
    elif status.action == "stopped" and status.pid:
        output.line(f"stopped the Spark Connect server (pid {status.pid})")
    else:
        output.line("no lakectl Spark Connect server is running")


@click.group(context_settings=CONTEXT_SETTINGS)
def server() -> None:
    """Run a Spark Connect server in the background so commands skip the JVM start.

    The server listens on 127.0.0.1 only; its pid file and log are under
    $XDG_STATE_HOME/lakectl (default ~/.local/state/lakectl).

    \b
    Example:
      lakectl server start
      export LAKECTL_REMOTE=sc://127.0.0.1:15002
      lakectl server status
      lakectl server stop
    """


@server.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--port",
    type=click.IntRange(1024, 65535),
    help="Port on 127.0.0.1 [default: 15002, Spark Connect's own]; a port in use is an error "
    "(exit 69).",
)
@click.option(
    "--timeout", type=float, default=180.0, show_default=True, help="Seconds to wait for it."
)
@common_options
def start(port: int | None, timeout: float, settings: Settings) -> None:
    """Start the server and wait until it accepts connections.

    The server's driver uses --master (default local[*]) and --conf.

    \b
    Example:
      lakectl server start
      lakectl server start --port 15003
      lakectl server start --master local[4] --conf spark.driver.memory=8g
    """
    from lakectl.config import load_config
    from lakectl.errors import UsageError
    from lakectl.ops.server import start_server

    if settings.remote:
        raise UsageError(
            "server start starts a Spark Connect server; --remote names one to use",
            hint="give its driver a --master, or drop --remote",
        )
    config = load_config(master=settings.master, conf=settings.confs)
    status = start_server(port, master=config.master, conf=config.spark_conf, timeout=timeout)
    _render(status, settings.as_json)


@server.command(context_settings=CONTEXT_SETTINGS)
@_JSON
def stop(as_json: bool) -> None:
    """Stop the server started by `lakectl server start`.

    \b
    Example:
      lakectl server stop
    """
    from lakectl.ops.server import stop_server

    _render(stop_server(), as_json)


@server.command(context_settings=CONTEXT_SETTINGS)
@_JSON
def status(as_json: bool) -> None:
    """Say whether the server is running, and its --remote URL.

    Exits 0 when it runs and 3 when no server runs (with --json, the status object either way,
    "running": false).

    \b
    Example:
      lakectl server status --json
    """
    from lakectl.ops.server import server_status

    current = server_status()
    _render(current, as_json)
    if not current.running:
        click.get_current_context().exit(NOT_RUNNING)
