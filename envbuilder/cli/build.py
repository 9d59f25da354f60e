"""`envbuilder build`: a locked image through BuildKit; `--dry-run` prints the plan and Dockerfile."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envbuilder.build import engine
from envbuilder.build.driver import push as push_tag
from envbuilder.build.plan import BuildPlan
from envbuilder.build.service import BuildOptions, build, default_tag, layer_mode, prepare
from envbuilder.cli.render import _target_name
from envbuilder.console import make_console
from envbuilder.errors import CheckFailed

out = make_console(soft_wrap=True)
err = make_console(stderr=True, soft_wrap=True)


def _layer_lines(plan: BuildPlan, mode: str) -> list[str]:
    total = sum(layer.size for layer in plan.layers) or 1
    how = ("COPY --link: each layer independent" if mode == "link"
           else "ordered chain: a change rebuilds its layer and re-copies those above")
    lines = [f"layers      {len(plan.layers)} venv layers, {mode} ({how}); sizes are the lock's compressed wheels"]
    for layer in plan.layers:
        lines.append(f"  {layer.index}  {layer.group:<17} {len(layer.packages):>4} pkgs  "
                     f"{layer.size / 1e6:>9.1f} MB  {100 * layer.size / total:5.1f}%")
    return lines


def _plan_text(plan: BuildPlan, tag: str, mode: str = "chain") -> str:
    lines = [f"target      {plan.target}", f"lock        {plan.lock_digest}", f"image       {tag}",
             f"base        {plan.base_image}{'' if plan.base_pinned else '  (a tag, not a digest)'}",
             f"python      {plan.python}  venv /opt/venv (hashes required, no resolution)"]
    if plan.cuda:
        lines.append(f"cuda        {plan.cuda}  CUDA_HOME={plan.cuda_home}  arch {plan.gpu_arch or '-'}")
    for b in plan.builds:
        roots = ", ".join(b.package.build.requires) if b.package.build and b.package.build.requires else ""
        inputs = f"{roots} + {len(b.inputs) - len(b.package.build.requires)} deps, hashed" if roots else "its sdist only"
        lines.append(f"stage       {b.stage}: {b.package.name} {b.package.version} -> {b.product} (inputs: {inputs})")
        if b.tools:
            lines.append(f"            build tools (locked, hashed): {', '.join(t.pin for t in b.tools)}")
    lines.append("stage       tool: envbuilder in /opt/envbuilder/tool (outside the locked venv)")
    lines.append("stage       installer, layer-N-*, python, runtime")
    lines += _layer_lines(plan, mode)
    if plan.serve_command:
        lines.append(f"serve       {plan.serve_command}")
    lines.append("build args  MAX_JOBS (from the builder's memory); "
                 "secrets: index_url (your pip/uv index), cacert (your CA bundle), netrc")
    lines += [f"note        {n}" for n in plan.notes]
    return "\n".join(lines)


def _engine_version(driver: str | None, docker_cli: str | None) -> str | None:
    """The engine's version for `--layers auto`, or None where no engine answers (a dry run needs none)."""
    from envbuilder.build import driver as drv
    from envbuilder.errors import EnvbuilderError

    try:
        return drv.check_engine(drv.detect(driver, docker_cli))
    except EnvbuilderError:
        return None


@click.command("build")
@click.argument("target", required=False)
@click.option("--target", "target_opt", metavar="TARGET", help="The matrix target (same as TARGET).")
@click.option("-t", "--tag", "tags", multiple=True, help="Image tag [envbuilder/TARGET:<lock digest>].")
@click.option("--dry-run", is_flag=True, help="Print the plan and the whole Dockerfile; build nothing.")
@click.option("--secret", "secrets", multiple=True, metavar="id=NAME,src=FILE",
              help="BuildKit secret (cacert: a CA bundle; netrc: index credentials). Repeatable.")
@click.option("--driver", type=click.Choice(["buildx", "docker"]), help="Force a build driver.")
@click.option("--docker", "docker_cli", metavar="PATH", help="The docker CLI to use.")
@click.option("--network", metavar="MODE", help="RUN network mode, e.g. host.")
@click.option("--no-cache", is_flag=True, help="Ignore BuildKit's layer cache.")
@click.option("--max-jobs", type=int, help="Parallel compile jobs [from the builder's memory].")
@click.option("--stage", help="Build only up to this Dockerfile stage.")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path), help="Lock file [locks/TARGET.lock.toml].")
@click.option("--context", "context_dir", type=click.Path(path_type=Path), help="Keep the build context here.")
@click.option("--verify", "run_verify", is_flag=True, help="Run `envbuilder verify` in the image afterwards.")
@click.option("--push", is_flag=True, help="Push the tags after a successful build (and verify).")
@click.option("--layers", "layers", type=click.Choice(["auto", "chain", "link"]), default="auto", show_default=True,
              help="Join the venv layers with COPY --link (link), as an ordered chain (chain), or as the "
                   "engine allows (auto: probes the engine; a dry run without an engine renders chain).")
def build_cmd(target, target_opt, tags, dry_run, secrets, driver, docker_cli, network, no_cache, max_jobs,
              stage, lock_file, context_dir, run_verify, push, layers) -> None:
    """Build TARGET's locked image through BuildKit."""
    name = _target_name(target, target_opt)
    if dry_run:
        mode = layer_mode(layers, _engine_version(driver, docker_cli) if layers == "auto" else None)
        rendered = prepare(name, lock_file, link=mode == "link")
        click.echo(_plan_text(rendered.plan, tags[0] if tags else default_tag(rendered.plan), mode) + "\n")
        sys.stdout.write(rendered.dockerfile)
        return
    opts = BuildOptions(tags=tuple(tags), stage=stage, driver=driver, docker=docker_cli, secrets=tuple(secrets),
                        network=network, no_cache=no_cache, max_jobs=max_jobs, lock_file=lock_file,
                        context_dir=context_dir, layers=layers)
    outcome = build(name, opts, echo=lambda line: click.echo(line, err=True))
    cached = sum(1 for s in outcome.result.progress.steps.values() if s.cached)
    out.print(f"built {outcome.tag} with {outcome.driver.describe()} ({cached} steps cached; "
              f"{len(outcome.plan.layers)} venv layers, {outcome.layer_mode})")
    if run_verify:
        result = engine.run(outcome.tag, ["envbuilder", "verify"])
        out.print(result.output.rstrip(), markup=False)
        if result.returncode != 0:
            raise CheckFailed(f"verify failed in {outcome.tag} (exit {result.returncode})")
    for tag in outcome.request.tags if push else ():
        push_tag(outcome.driver, tag)
        out.print(f"pushed {tag}")


COMMANDS = [build_cmd]
