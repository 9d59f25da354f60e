"""`envbuilder verify`: inside an image, installed distributions == the lock, extensions import."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.build.verify import load_subject, verify
from envbuilder.console import make_console
from envbuilder.errors import CheckFailed

out = make_console(soft_wrap=True)


@click.command("verify")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path), help="Lock file [the image's].")
@click.option("--venv", type=click.Path(path_type=Path), help="The locked venv [the image's, /opt/venv].")
@click.option("--manifest", type=click.Path(path_type=Path), help="Image manifest [$ENVBUILDER_IMAGE_MANIFEST].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report on stdout.")
def verify_cmd(lock_file: Path | None, venv: Path | None, manifest: Path | None, as_json: bool) -> None:
    """Check that this environment is exactly its lock (run inside the built image)."""
    report = verify(load_subject(manifest, lock_file, venv))
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        out.print(f"target {report.target}  lock {report.lock_digest}")
        out.print(f"{report.checked} locked distributions checked, {report.extensions} compiled extension modules imported")
        for note in report.notes:
            out.print(f"note: {note}")
        for problem in report.problems:
            out.print(f"[red]FAIL[/] {problem}")
        out.print("[green]verify: OK[/]" if report.ok else f"[red]verify: {len(report.problems)} problem(s)[/]")
    if not report.ok:
        raise CheckFailed(f"the image does not match lock {report.lock_digest} ({len(report.problems)} problem(s))")


COMMANDS = [verify_cmd]
