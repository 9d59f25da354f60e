"""`envbuilder init TARGET --from FILE`: start a target from the environment a user already has."""

from __future__ import annotations

from pathlib import Path

import click

from envbuilder.console import make_console


@click.command("init")
@click.argument("target")
@click.option("--from", "sources", multiple=True, required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="requirements.txt, `pip freeze` output, uv.lock or pylock.toml (repeatable)")
@click.option("--python", help="target Python, e.g. 3.12 (default: uv.lock/pylock's requires-python, else this one)")
@click.option("--libc", help="target glibc, e.g. glibc_2.39 (default: the base image's)")
@click.option("--machine", type=click.Choice(["x86_64", "aarch64"]), help="target machine (default: this one)")
@click.option("--base-image", help="base image (default: one whose Python is the target's)")
@click.option("--cuda", help="CUDA toolkit for builds, e.g. 12.8 (default: from torch's +cuXYZ)")
@click.option("--probe", is_flag=True, help="take the GPU from this host (doctor's probe)")
@click.option("--gpu-arch", help="the target's GPU arch, e.g. sm_90")
@click.option("--gpu-name", help="the target's GPU model, e.g. 'NVIDIA H200'")
@click.option("--gpu-count", type=int, default=1, show_default=True)
@click.option("--gpu-memory-gib", type=float, help="memory of one GPU in GiB")
@click.option("--driver-min", help="minimum NVIDIA driver, e.g. 570.26")
@click.option("--force", is_flag=True, help="replace matrices/TARGET.yaml if it exists")
def init_cmd(target: str, sources: tuple[Path, ...], **kw) -> None:
    """Write matrices/TARGET.yaml pinning every package of FILE, for the GPU given (or probed)."""
    from envbuilder.init.service import InitRequest, run_init
    from envbuilder.matrix import project_root

    root = project_root()
    result = run_init(InitRequest(target=target, sources=sources, **kw), root)
    shown = result.path.relative_to(root) if result.path.is_relative_to(root) else result.path
    err = make_console(stderr=True)
    for line in result.skipped:
        err.print(f"skipped {line}", markup=False)
    gpu = f"{result.gpu.count}x {result.gpu.name} ({result.gpu.arch})" if result.gpu else "CPU only"
    make_console().print(f"wrote {shown}: {len(result.pins)} packages pinned, {gpu}; next: "
                         f"envbuilder lock {target}", markup=False)


COMMANDS = [init_cmd]
