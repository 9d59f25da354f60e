"""`envbuilder explain TARGET PACKAGE`: why this version."""

from __future__ import annotations

import click
from rich.markup import escape

from envbuilder.console import make_console
from envbuilder.lock import lock_path
from envbuilder.lock.io import read_lock_for
from envbuilder.matrix import load_target, project_root
from envbuilder.resolve.explain import explain as explain_package
from envbuilder.resolve.locker import knowledge_for


@click.command()
@click.argument("target")
@click.argument("package")
def explain(target: str, package: str) -> None:
    """Why PACKAGE has its locked version in TARGET: paths, pins, overrides, rules."""
    root = project_root()
    loaded = load_target(target, root)
    lock = read_lock_for(lock_path(root, loaded.name), loaded.indexes)
    e = explain_package(loaded, lock, knowledge_for(loaded), package)
    out = make_console(soft_wrap=True)  # whole lines: the output is read and grepped
    p = e.package
    out.print(f"[bold]{escape(p.name)} {escape(p.version)}[/] in {escape(lock.target)}  "
              f"(source: {escape(str(p.source.to_dict()))})")
    if e.requested is not None:
        out.print(f"  matrix asks: {escape(e.requested or 'any')}" +
                  ("  [bold](override: replaces every dependent's ask)[/]" if e.override else ""))
    for dependent, ask in e.wanted_by:
        out.print(escape(f"  wanted by {dependent}: {ask}"))
    for ask in e.overridden:
        out.print(f"  [yellow]overridden[/] {escape(ask)}")
    for path in e.paths:
        out.print(escape("  path: matrix -> " + " -> ".join(path)))
    if p.facets is not None:
        out.print(escape(f"  facets: {p.facets.to_dict()}"))
    if p.build is not None:
        out.print(escape(f"  source build: {p.build.to_dict()}"))
    for rule in e.rules:
        out.print(escape(f"  rule {rule}"))


COMMANDS = [explain]
