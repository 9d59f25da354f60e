"""`envbuilder targets`: the shipped targets, one line each."""

from __future__ import annotations

import json

import click
from rich.table import Table

from envbuilder.console import make_console
from envbuilder.matrix import load_target, project_root, shipped_targets


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def targets(as_json: bool) -> None:
    """List the shipped targets."""
    loaded = [load_target(name) for name in shipped_targets(project_root())]
    rows = [{"target": t.name, "gpu": _gpu(t), "driver_min": t.hardware.driver.min if t.hardware.driver else None,
             "cuda": t.toolchain.cuda, "python": t.platform.python, "description": t.description} for t in loaded]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("target", "gpu", "driver", "cuda", "python", "description"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["target"], r["gpu"], r["driver_min"] or "-", r["cuda"] or "-", r["python"], r["description"])
    make_console().print(table)


def _gpu(target) -> str:
    gpu = target.hardware.gpu
    return f"{gpu.count}x {gpu.arch}" if gpu else "cpu"


COMMANDS = [targets]
