"""`envbuilder doctor [TARGET]`: can this host (or a host's saved nvidia-smi output) run the target?"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

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
        console = Console(highlight=False)
        table = Table(show_header=True, header_style="bold", expand=False)
        for column in ("", "check", "found", "needed", "fix"):
            table.add_column(column, overflow="fold")
        for check in report.checks:
            table.add_row(_STYLE[check.status], check.id, check.found, check.needed, check.fix)
        title = f"doctor: {'this host' if saved is None else saved} against {report.target or 'no target'}"
        console.print(f"[bold]{title}[/]")
        console.print(table)
        console.print(f"verdict: {_STYLE[report.verdict]}")
    failed = [c.id for c in report.checks if c.status == "fail"]
    if failed:
        raise CheckFailed(f"{len(failed)} check(s) failed: {', '.join(failed)}")


COMMANDS = [doctor_command]
