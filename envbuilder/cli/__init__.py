"""The thin command-line layer: each command lives in its own module and calls one service.

Command modules are imported only when their command runs (conda-lock alone costs a second of
imports that `gate` or `lock --check` should not pay). `main` turns every EnvbuilderError into its
message and exit code; no traceback reaches a user.
"""

from __future__ import annotations

import importlib
import sys

import click
from rich.markup import escape

from envbuilder import __version__
from envbuilder.console import make_console
from envbuilder.errors import EnvbuilderError

err_console = make_console(stderr=True)

# command name -> module under envbuilder.cli that defines it (in its COMMANDS list)
COMMAND_MODULES = {
    "targets": "targets", "lock": "lock", "explain": "explain", "inspect": "inspect", "gate": "gate",
    "export": "export", "render": "render", "bake": "render", "build": "build", "verify": "verify",
    "serve": "serve", "smoke": "smoke", "doctor": "doctor", "init": "init", "validated": "validated", "link": "link", "bump": "bump",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMAND_MODULES.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"envbuilder.cli.{module_name}")
        return next((c for c in module.COMMANDS if c.name == cmd_name), None)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envbuilder")
def cli() -> None:
    """Reproducible GPU inference stacks: matrix -> lock -> image -> serve -> smoke."""


def main(argv: list[str] | None = None) -> None:
    try:
        rc = cli.main(args=argv, standalone_mode=False)
    except EnvbuilderError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
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
