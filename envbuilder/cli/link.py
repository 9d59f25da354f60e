"""`envbuilder link WHEEL...`: link a set of wheel files before installing them (docs/abi.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from envbuilder.console import make_console
from envbuilder.errors import CheckFailed

console = make_console(stderr=False)


@click.command()
@click.argument("wheels", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--system", "manifest", default="debian-12-slim", show_default=True,
              help="System manifest of the target image (envbuilder/knowledge/systems/).")
@click.option("--python", default="3.12", show_default=True, help="Target Python (for Requires-Dist markers).")
@click.option("--arch", "target_arch", help="Also check every CUDA binary for this GPU arch (e.g. sm_120).")
@click.option("--json", "as_json", is_flag=True, help="The LinkReport as JSON.")
def link(wheels: tuple[Path, ...], manifest: str, python: str, target_arch: str | None, as_json: bool) -> None:
    """Link WHEELS (a closure: the consumer and what it imports) as ld.so will at import; exit 1 on a break."""
    from envbuilder.abi.linkcheck import check_wheels

    report = check_wheels(wheels, manifest=manifest, python=python, target_arch=target_arch)
    if as_json:
        console.print_json(json.dumps(report.model_dump(mode="json")))
    else:
        for name, verdict in sorted(report.packages.items()):
            if verdict.evidence == "none":
                state = "[yellow]no binary evidence[/]"
            else:
                state = "[green]links[/]" if verdict.links else "[red]does not link[/]"
            console.print(f"{escape(name)} {escape(verdict.version)}: {state} ({verdict.elf_count} ELF)")
        for finding in report.findings:
            if finding.kind != "no-binary-evidence":
                console.print(f"  {finding.severity} {finding.kind}: {escape(finding.message)}", soft_wrap=True)
    if report.errors:
        raise CheckFailed(f"{len(report.errors)} linkage error(s) against {manifest}")


COMMANDS = [link]
