"""`envbuilder export`: the lock as requirements (--hash), PEP 751 pylock.toml or conda-lock YAML."""

from __future__ import annotations

from pathlib import Path

import click

from envbuilder.console import make_console
from envbuilder.export import FORMATS
from envbuilder.export.service import ExportRequest, run_export
from envbuilder.lock.io import write_atomic

console = make_console(stderr=True)


@click.command("export")
@click.argument("target", required=False)
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="What to write.")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Export this lock file instead of locks/<TARGET>.lock.toml.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write here (atomically) instead of standard output.")
@click.option("--skip-source-builds", is_flag=True,
              help="Leave out packages built from source (listed in the file as skipped).")
@click.option("--offline", is_flag=True, help="Take file URLs from the index cache only.")
def export_command(target: str | None, fmt: str, lock_file: Path | None, output: Path | None,
                   skip_source_builds: bool, offline: bool) -> None:
    """Write TARGET's lock in a format other installers read (pip, uv, conda-lock)."""
    request = ExportRequest(fmt, target, lock_file, output, skip_source_builds, offline)
    result = run_export(request)
    if output is None:
        click.echo(result.text, nl=False)
    else:
        write_atomic(output, result.text)
        console.print(f"[green]wrote[/] {output} ({fmt}, {result.exported} packages, target {result.lock.target})")
    if result.skipped:
        console.print(f"[yellow]skipped source builds[/] {', '.join(result.skipped)}: build them separately")


COMMANDS = [export_command]
