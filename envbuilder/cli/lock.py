"""`envbuilder lock`: resolve targets into locks, or check that the locks are current."""

from __future__ import annotations

import time

import click
from rich.markup import escape

from envbuilder.console import make_console
from envbuilder.errors import CheckFailed
from envbuilder.matrix import load_target, project_root, shipped_targets
from envbuilder.resolve.lockcheck import check_targets
from envbuilder.resolve.locker import LockOptions, lock_target

console = make_console(stderr=True, soft_wrap=True)


@click.command()
@click.argument("targets", nargs=-1, metavar="[TARGET|MATRIX.yaml]...")
@click.option("--check", is_flag=True,
              help="Exit 1 unless each lock is exactly what its matrix resolves to (re-resolved offline from the "
                   "cache, pins preferred); prints every difference.")
@click.option("--online", is_flag=True,
              help="With --check: fetch pages fresh and ask the index for every artifact's sha256 and size.")
@click.option("--offline", is_flag=True, help="Use only the local cache; say exactly what is missing.")
@click.option("--upgrade", "-U", is_flag=True, help="Ignore the existing lock's pins.")
@click.option("--refresh", is_flag=True, help="Resolve again even when the lock is current.")
@click.option("--upgrade-package", "-P", "upgrade_packages", multiple=True, metavar="NAME",
              help="Let this package move off its locked version (repeatable).")
@click.option("--link", is_flag=True,
              help="Link the closure from its binaries before writing (reads the wheels' ELF members by range "
                   "requests; a linkage failure makes the resolver try other versions).")
def lock(targets: tuple[str, ...], check: bool, online: bool, offline: bool, upgrade: bool, refresh: bool,
         upgrade_packages: tuple[str, ...], link: bool) -> None:
    """Resolve each TARGET into locks/<target>.lock.toml (default: every target in matrices/).

    A TARGET is a target name (matrices/<name>.yaml) or the path of a matrix file, e.g.
    `envbuilder lock docs/examples/hopper-vllm.yaml`; its lock is written under the name its `target:` key gives.
    """
    root = project_root()
    loaded = [load_target(t, root) for t in (targets or shipped_targets(root))]
    if online and (not check or offline):
        raise click.UsageError("--online goes with --check (and not with --offline)")
    if check:
        reports = check_targets(loaded, root, online)
        reasons = [reason for report in reports for reason in report.problems]
        for reason in reasons:
            console.print(f"[red]stale[/] {escape(reason)}")
        if reasons:
            raise CheckFailed(f"{len(reasons)} lock problem(s); run `envbuilder lock --refresh` (a content difference) "
                              "or `envbuilder lock` (a matrix or knowledge change), review the diff and commit it")
        how = "re-resolved online, every artifact confirmed by its index" if online else "re-resolved offline"
        console.print(f"[green]ok[/] {len(loaded)} lock(s) match their matrices ({how})")
        return
    options = LockOptions(offline, upgrade, frozenset(upgrade_packages), refresh, link)
    for target in loaded:
        for warning in target.warnings:
            console.print(f"[yellow]warning[/] {escape(warning)}")
        start = time.perf_counter()
        result = lock_target(target, root, options)
        if result.replaced:
            console.print(f"[yellow]replaced[/] an unreadable lock, re-resolved from scratch as with --upgrade: "
                          f"{escape(result.replaced)}")
        state = "wrote" if result.changed else ("unchanged" if result.resolved else "current")
        console.print(f"[green]{state}[/] {result.path.relative_to(root)}: {len(result.lock.packages)} packages "
                      f"in {time.perf_counter() - start:.1f}s")
        for finding in result.lock.findings:
            console.print(f"  [yellow]{escape(finding)}[/]")


COMMANDS = [lock]
