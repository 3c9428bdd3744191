"""What an installation is: ``lakectl --version`` and ``lakectl completion SHELL``.

Neither imports pyspark: both answer at once, with or without Java.
"""

from __future__ import annotations

import platform
from importlib import metadata

import click
from click.shell_completion import get_completion_class

from lakectl import __version__, data_source_jar
from lakectl.cli import output
from lakectl.cli.common import CONTEXT_SETTINGS

SHELLS = ("bash", "zsh", "fish")
PROG = "lakectl"
# The variable click's completion scripts set when they call lakectl back for candidates.
COMPLETE_VAR = "_LAKECTL_COMPLETE"


def version_info() -> dict[str, str | None]:
    """lakectl's version, its pyspark and Python, and the Spark data source jar (the fast read
    path; None when not found): what ``lakectl --version --json`` prints."""
    jar = data_source_jar.jar_path()
    return {
        "version": __version__,
        "pyspark": _installed("pyspark"),
        "python": platform.python_version(),
        "data_source_jar": None if jar is None else str(jar),
    }


def version_text() -> str:
    """:func:`version_info` for people, saying where the jar was expected when it is missing."""
    info = version_info()
    lines = [f"{PROG} {info['version']} (pyspark {info['pyspark']}, Python {info['python']})"]
    jar = info["data_source_jar"]
    if jar is not None:
        lines.append(f"Spark data source: found, {jar}")
    else:
        lines.append(
            f"Spark data source: NOT found (expected at {data_source_jar.JAR}); reads of tables "
            "with deltas take the slower path of the kernel in Spark's Python tasks. Build it "
            "with a JDK (make, or a package build)."
        )
    return "\n".join(lines)


def print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """The ``--version`` option's callback: print :func:`version_text` and exit."""
    if not value or ctx.resilient_parsing:
        return
    if (ctx.obj or {}).get("as_json"):  # --json anywhere: set by lakectl.cli.main.main
        output.emit_json(version_info())
    else:
        click.echo(version_text())
    ctx.exit()


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    Completes command names, options and their choices, and TABLE arguments with the names of
    the tables under the warehouse. Load it from the shell's startup file.

    \b
    Examples:
      eval "$(lakectl completion bash)"    # in ~/.bashrc
      eval "$(lakectl completion zsh)"     # in ~/.zshrc, after compinit
      lakectl completion fish > ~/.config/fish/completions/lakectl.fish
    """
    root = click.get_current_context().find_root().command
    script_class = get_completion_class(shell)
    assert script_class is not None  # click ships all of SHELLS
    click.echo(script_class(root, {}, PROG, COMPLETE_VAR).source())
