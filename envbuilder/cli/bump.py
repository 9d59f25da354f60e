"""`envbuilder bump`: move one package of a target, re-lock, gate the change, write a PR body (exit 1 on reject)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from envbuilder.bump import BumpRequest, BumpResult, bump
from envbuilder.bump.model import Move
from envbuilder.console import make_console
from envbuilder.matrix import project_root

console = make_console(stderr=True, soft_wrap=True)


@click.command("bump")
@click.argument("target")
@click.argument("package")
@click.option("--branch", metavar="NAME", help="Git source: move to this branch's head (default: the repository's HEAD branch).")
@click.option("--commit", metavar="SHA", help="Git source: move to this full commit id.")
@click.option("--require-fix", metavar="URL|SHA",
              help="Git source: the new commit must contain this fix (a commit id, or a GitHub PR URL the knowledge "
                   "base or a merge subject maps to a commit); refused (exit 1) when no commit of the branch has it.")
@click.option("--version", "version", metavar="X", help="Index package: pin this version in the matrix (==X).")
@click.option("--body-file", type=click.Path(path_type=Path), metavar="FILE",
              help="Where the Markdown PR body goes (default: ./bump-TARGET-PACKAGE.md).")
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@click.option("--offline", is_flag=True, help="Use only the cache (cached clone, cached index pages).")
def bump_command(target: str, package: str, branch: str | None, commit: str | None, require_fix: str | None,
                 version: str | None, body_file: Path | None, dry_run: bool, offline: bool) -> None:
    """Move PACKAGE of TARGET, re-lock, gate the lock change, and write a PR body.

    Nothing is left half-written: the matrix edit is undone when the re-lock fails. On a gate
    reject the edits and the body stay for review and the exit code is 1."""
    request = BumpRequest(target, package, branch, commit, require_fix, version, dry_run, offline, body_file)
    result = bump(request, project_root())
    _report(result, dry_run)
    if result.exit_code:
        sys.exit(result.exit_code)


def _moved(move: Move) -> str:
    if move.kind == "git":
        via = f" (head of {move.branch})" if move.branch else ""
        return f"{move.package}: git {move.url} {(move.old or '')[:12]} -> {(move.new or '')[:12]}{via}, {move.total_commits} commit(s)"
    return f"{move.package}: index {move.old or '(not locked)'} -> {move.new or '(none on the index)'}"


def _shown(path: Path | None) -> str:
    """A path relative to the working directory when it lies below it (what the user typed), else as is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))  # type: ignore[arg-type]
    except ValueError:
        return str(path)


def _report(result: BumpResult, dry_run: bool) -> None:
    move = result.move
    if not move.moves or (not dry_run and not result.wrote):
        console.print(f"[green]nothing to bump[/] {escape(move.package)} stays at {escape(result.new_locked or move.old or '')}")
        return
    console.print(("[yellow]would move[/] " if dry_run else "[green]moved[/] ") + escape(_moved(move)))
    if move.edit is not None:
        console.print(f"  matrix {escape(_shown(move.edit.file))}:{move.edit.line} {'.'.join(move.edit.keys)}: "
                      f"{escape(move.edit.old)} -> {escape(move.edit.new)}")
    if move.fix:
        console.print(f"  contains the required fix {move.fix[:12]} ({escape(move.fix_ref or '')})")
    for commit in move.commits[:20]:
        console.print(f"  {commit.commit[:12]} {escape(commit.subject[:120])}", markup=True)
    if move.metadata is not None:
        console.print(f"  metadata: {escape(move.package)}'s source vs the matrix's `metadata:` override:")
        for line in move.metadata.lines():
            console.print(f"    {escape(line)}")
    for note in move.notes:
        console.print(f"  [yellow]note[/] {escape(note)}")
    if result.gate is not None:
        console.print(f"  locked {escape(result.old_locked or '-')} -> {escape(result.new_locked or '-')}; "
                      f"gate: {result.gate.verdict}; PR body: {escape(_shown(result.body_file))}")
        if result.exit_code:
            console.print("[bold red]the gate rejected this bump[/]: the matrix and lock edits stay for review; "
                          "the PR body lists the findings; do not open a pull request")


COMMANDS = [bump_command]
