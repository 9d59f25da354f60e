"""`envbuilder doctor [TARGET]`: can this host (or a host's saved nvidia-smi output) run the target?"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from envbuilder.console import make_console
from envbuilder.doctor import run_doctor
from envbuilder.errors import CheckFailed

_STYLE = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]", "fail": "[bold red]fail[/]"}


@click.command("doctor")
@click.argument("target", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the checks and the host facts as JSON.")
@click.option("--nvidia-smi", "saved", type=click.Path(path_type=Path),
              help="Judge another host from its saved `nvidia-smi --query-gpu=name,memory.total,driver_version,"
                   "compute_cap --format=csv` or `nvidia-smi -q` output.")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path), help="Lock to check binaries from [locks/TARGET.lock.toml].")
def doctor_command(target: str | None, as_json: bool, saved: Path | None, lock_file: Path | None) -> None:
    """Check the NVIDIA driver, GPUs, CUDA toolkits, build capacity and container runtime against TARGET."""
    report = run_doctor(target, saved_smi=saved, lock_file=lock_file)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        console = make_console()
        title = f"doctor: {'this host' if saved is None else saved} against {report.target or 'no target'}"
        console.print(f"[bold]{escape(title)}[/]")
        if console.is_terminal:
            console.print(_table(report))
        else:
            _plain(console, report)
        console.print(f"verdict: {_STYLE[report.verdict]}")
    failed = [c.id for c in report.checks if c.status == "fail"]
    if failed:
        raise CheckFailed(f"{len(failed)} check(s) failed: {', '.join(failed)}")


def _table(report) -> Table:
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("", "check", "found", "needed", "fix"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        table.add_row(_STYLE[check.status], escape(check.id), escape(check.found), escape(check.needed),
                      escape(check.fix))
    return table


def _plain(console, report) -> None:
    """Not a terminal (a pipe, a log): one block per check, every value on one whole line."""
    for check in report.checks:
        console.print(f"{check.status} {check.id}", markup=False)
        for label, value in (("found", check.found), ("needed", check.needed), ("fix", check.fix)):
            if value:
                console.print(f"  {label + ':':7} {value}", markup=False)


COMMANDS = [doctor_command]
