"""`envbuilder explain TARGET PACKAGE`: why this version."""

from __future__ import annotations

import click
from rich.console import Console

from envbuilder.knowledge import load_knowledge
from envbuilder.lock import lock_path, read_lock
from envbuilder.matrix import load_target, project_root
from envbuilder.resolve.explain import explain as explain_package


@click.command()
@click.argument("target")
@click.argument("package")
def explain(target: str, package: str) -> None:
    """Why PACKAGE has its locked version in TARGET: paths, pins, overrides, rules."""
    root = project_root()
    loaded = load_target(target, root)
    lock = read_lock(lock_path(root, loaded.name))
    e = explain_package(loaded, lock, load_knowledge(), package)
    out = Console(highlight=False, width=160)
    p = e.package
    out.print(f"[bold]{p.name} {p.version}[/] in {lock.target}  (source: {p.source.to_dict()})")
    if e.requested is not None:
        out.print(f"  matrix asks: {e.requested or 'any'}" + ("  [bold](override: replaces every dependent's ask)[/]"
                                                            if e.override else ""))
    for dependent, ask in e.wanted_by:
        out.print(f"  wanted by {dependent}: {ask}")
    for ask in e.overridden:
        out.print(f"  [yellow]overridden[/] {ask}")
    for path in e.paths:
        out.print("  path: matrix -> " + " -> ".join(path))
    if p.facets is not None:
        out.print(f"  facets: {p.facets.to_dict()}")
    if p.build is not None:
        out.print(f"  source build: {p.build.to_dict()}")
    for rule in e.rules:
        out.print(f"  rule {rule}")


COMMANDS = [explain]
