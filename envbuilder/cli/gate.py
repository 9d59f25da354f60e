"""`envbuilder gate`: compare locks and say pass / warn / reject (exit 0 / 0 / 1; --strict: warn is 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envbuilder.console import make_console
from envbuilder.errors import BadInput
from envbuilder.gate import GateOptions, gate_files, gate_ref
from envbuilder.gate.render import render_github, render_json, render_markdown, render_text


@click.command("gate")
@click.option("--base", "base", type=click.Path(path_type=Path), help="The base lock file.")
@click.option("--base-ref", "base_ref", metavar="GITREF",
              help="Compare every locks/*.lock.toml at this git ref with the working tree's.")
@click.option("--head", "head", type=click.Path(path_type=Path),
              help="The head lock file (default: the project's lock for the base's target).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "github"]), default="text",
              show_default=True)
@click.option("--strict", is_flag=True, help="A warn verdict exits 1 too.")
@click.option("--offline", is_flag=True,
              help="Check new artifacts against cached index pages only (a page not cached: exit 3).")
@click.option("--require-validated", is_flag=True,
              help="Reject a head lock that no verified passing smoke record (matrices/TARGET.validated/) vouches for.")
@click.option("--link", is_flag=True,
              help="Link both locks from their binaries even when the head records no linkage (summaries by "
                   "range reads of the index, cached by sha256; docs/abi.md).")
def gate(base: Path | None, base_ref: str | None, head: Path | None, fmt: str, strict: bool, offline: bool,
         require_validated: bool, link: bool) -> None:
    """Judge a lock change: every artifact, toolchain, recipe and knowledge change, and the ABI rules.

    Files the base does not lock are checked against the index (name, size, sha256); an index
    that cannot be reached exits 3, never passes."""
    if (base is None) == (base_ref is None):
        raise BadInput("give exactly one of --base LOCK or --base-ref GITREF")
    if base_ref is not None and head is not None:
        raise BadInput("--head only goes with --base; --base-ref compares with the working tree's locks/")
    options = GateOptions(strict=strict, offline=offline, require_validated=require_validated, link=link)
    result = gate_ref(base_ref, options=options) if base_ref else gate_files(base, head, options=options)
    if fmt == "text":
        render_text(result, make_console(soft_wrap=True))
    else:
        render = {"json": render_json, "markdown": render_markdown, "github": render_github}[fmt]
        sys.stdout.write(render(result))
    if result.exit_code:
        sys.exit(result.exit_code)


COMMANDS = [gate]
