"""`envbuilder render` (Dockerfile + context for one target) and `envbuilder bake` (all targets)."""

from __future__ import annotations

from pathlib import Path

import click

from envbuilder.build.bake import bake_file
from envbuilder.build.render import write_context
from envbuilder.build.service import prepare
from envbuilder.console import make_console
from envbuilder.errors import BadInput
from envbuilder.lock import lock_path
from envbuilder.matrix import project_root, shipped_targets

out = make_console(soft_wrap=True)
err = make_console(stderr=True, soft_wrap=True)


def _target_name(positional: str | None, option: str | None) -> str:
    if positional and option and positional != option:
        raise BadInput(f"two targets given: {positional!r} and --target {option!r}")
    name = positional or option
    if not name:
        raise BadInput("which target? pass TARGET or --target (see `envbuilder targets`)")
    return name


@click.command("render")
@click.argument("target", required=False)
@click.option("--target", "target_opt", metavar="TARGET", help="The matrix target (same as TARGET).")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Context directory [build/TARGET].")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path), help="Lock file [locks/TARGET.lock.toml].")
def render_cmd(target: str | None, target_opt: str | None, output: Path | None, lock_file: Path | None) -> None:
    """Write the Dockerfile and build context of TARGET, from its lock only (no network)."""
    name = _target_name(target, target_opt)
    rendered = prepare(name, lock_file)
    dest = write_context(rendered, output or project_root() / "build" / name)
    for note in rendered.plan.notes:
        err.print(f"[yellow]note:[/] {note}")
    out.print(f"wrote {dest}/Dockerfile and {len(rendered.files) - 1} context files "
              f"(lock {rendered.plan.lock_digest[:19]})")


@click.command("bake")
@click.argument("targets", nargs=-1)
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("docker-bake.json"),
              show_default=True, help="Bake file to write.")
@click.option("--contexts", type=click.Path(path_type=Path), help="Where contexts go [build/].")
def bake_cmd(targets: tuple[str, ...], output: Path, contexts: Path | None) -> None:
    """Render every target (default: all with a lock) and write a bake file for `docker buildx bake`."""
    root = project_root()
    names = list(targets) or [t for t in shipped_targets(root) if lock_path(root, t).exists()]
    if not names:
        raise BadInput("no target has a lock yet: run `envbuilder lock` first")
    base = contexts or root / "build"
    rendered = {}
    for name in names:
        r = prepare(name)
        rendered[name] = (r, write_context(r, base / name))
    output.write_text(bake_file(rendered, output))
    out.print(f"wrote {output}: {len(names)} target(s): {', '.join(sorted(names))}")
    out.print("build: INDEX_URL=<your index> docker buildx bake -f "
              f"{output} --set '*.secrets=id=cacert,src=<CA bundle>'")


COMMANDS = [render_cmd, bake_cmd]
