"""The thin command-line layer: each command lives in its own module and calls one service.

`main` turns every EnvbuilderError into its message and exit code; no traceback reaches a user.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console

from envbuilder import __version__
from envbuilder.errors import EnvbuilderError

err_console = Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envbuilder")
def cli() -> None:
    """Reproducible GPU inference stacks: matrix -> lock -> image -> serve -> smoke."""


def _register() -> None:
    """Import each command module; a module missing during development is skipped, not fatal."""
    import importlib

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"envbuilder.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"envbuilder.cli.{name}":
                continue
            raise
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)


COMMAND_MODULES = (
    "targets", "lock", "explain", "inspect", "gate", "export",
    "render", "build", "verify", "serve", "smoke", "doctor",
)


def main(argv: list[str] | None = None) -> None:
    _register()
    try:
        rc = cli.main(args=argv, standalone_mode=False)
    except EnvbuilderError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)
