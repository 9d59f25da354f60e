"""`envbuilder build`: render into a context, pick a driver, pass host facts as build args, build.

Host facts (the user's index, their CA bundle, the builder's memory) enter only here, so the
rendered Dockerfile stays the same on every machine. The index URL (which may carry credentials)
and the CA bundle are BuildKit secrets, mounted for the install steps only; build arguments are
recorded in the image history, so only MAX_JOBS is one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from envbuilder.build import driver as drv
from envbuilder.build import engine, memory
from envbuilder.build.plan import BuildPlan
from envbuilder.build.render import Rendered, load, render, write_context
from envbuilder.errors import BadInput


@dataclass(frozen=True)
class BuildOptions:
    tags: tuple[str, ...] = ()
    stage: str | None = None
    driver: str | None = None
    docker: str | None = None
    secrets: tuple[str, ...] = ()
    network: str | None = None
    no_cache: bool = False
    max_jobs: int | None = None
    lock_file: Path | None = None
    context_dir: Path | None = None
    layers: str = "auto"  # auto | chain | link


@dataclass(frozen=True)
class BuildOutcome:
    plan: BuildPlan
    driver: drv.Driver
    request: drv.BuildRequest
    result: drv.BuildResult
    layer_mode: str = "chain"

    @property
    def tag(self) -> str:
        return self.request.tags[0]


def default_tag(plan: BuildPlan) -> str:
    return f"envbuilder/{plan.target}:{plan.lock_digest.removeprefix('sha256:')[:12]}"


def _secret_ids(secrets: tuple[str, ...]) -> set[str]:
    ids = set()
    for secret in secrets:
        fields = dict(part.split("=", 1) for part in secret.split(",") if "=" in part)
        if "id" not in fields:
            raise BadInput(f"--secret {secret!r}: expected id=NAME,src=FILE")
        if "src" in fields and not Path(fields["src"]).expanduser().is_file():
            raise BadInput(f"--secret {secret!r}: {fields['src']} is not a file")
        ids.add(fields["id"])
    return ids


def secrets(given: tuple[str, ...], secret_dir: Path | None = None) -> tuple[str, ...]:
    """The user's secrets, plus the CA bundle their pip trusts as `cacert` and their index URL as
    `index_url` (written to a 0600 file in `secret_dir`, outside the context) unless they gave one."""
    from envbuilder.index.config import ca_bundle, default_index_url

    out = list(given)
    ids = _secret_ids(given)
    bundle = ca_bundle()
    if "cacert" not in ids and bundle is not None and bundle.is_file():
        out.append(f"id=cacert,src={bundle}")
    if "index_url" not in ids and secret_dir is not None:
        path = secret_dir / "index_url"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(default_index_url())
        out.append(f"id=index_url,src={path}")
    return tuple(out)


def _cuda_threads(plan: BuildPlan) -> int | None:
    threads = [int(dict(b.env).get("NVCC_THREADS", memory.REFERENCE_THREADS)) for b in plan.builds if b.cuda]
    return max(threads) if threads else None


def max_jobs(plan: BuildPlan, forced: int | None) -> int | None:
    """--max-jobs, else the local engine's memory rule for nvcc builds, else None (the Dockerfile
    computes it on the builder)."""
    if forced is not None:
        if forced < 1:
            raise BadInput(f"--max-jobs {forced}: must be at least 1")
        return forced
    threads = _cuda_threads(plan)
    res = engine.resources() if threads is not None else None
    if res is None or not res.mem_bytes:
        return None
    return memory.max_jobs(res.mem_bytes, res.ncpu, threads)


def build_args(plan: BuildPlan, opts: BuildOptions) -> tuple[tuple[str, str], ...]:
    args = []
    jobs = max_jobs(plan, opts.max_jobs)
    if jobs is not None:
        args.append(("MAX_JOBS", str(jobs)))
    return tuple(args)


def prepare(target: str, lock_file: Path | None = None, link: bool = False) -> Rendered:
    lock, tgt = load(target, lock_file)
    return render(lock, tgt, link)


def layer_mode(wanted: str, engine_version: str | None) -> str:
    """`link` where asked or where the engine's frontend has `COPY --link` (auto), else `chain`."""
    if wanted not in ("auto", "chain", "link"):
        raise BadInput(f"--layers {wanted!r}: expected auto, chain or link")
    if wanted != "auto":
        return wanted
    return "link" if engine_version and drv.supports_link(engine_version) else "chain"


def build(target: str, opts: BuildOptions, echo: Callable[[str], None] | None = None) -> BuildOutcome:
    driver = drv.detect(opts.driver, opts.docker)
    mode = layer_mode(opts.layers, drv.check_engine(driver))
    rendered = prepare(target, opts.lock_file, link=mode == "link")
    if opts.stage is not None and opts.stage not in _stages(rendered):
        raise BadInput(f"--stage {opts.stage!r}: the Dockerfile has {', '.join(_stages(rendered))}")
    with ExitStack() as stack:
        out = opts.context_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="envbuilder-ctx-")))
        context = write_context(rendered, out)
        secret_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="envbuilder-secrets-")))
        request = drv.BuildRequest(
            context=context, tags=opts.tags or (default_tag(rendered.plan),), stage=opts.stage,
            build_args=build_args(rendered.plan, opts), secrets=secrets(opts.secrets, secret_dir), network=opts.network,
            no_cache=opts.no_cache)
        result = drv.run_build(driver, request, echo)
    return BuildOutcome(rendered.plan, driver, request, result, mode)


def _stages(rendered: Rendered) -> list[str]:
    return [line.split(" AS ", 1)[1].strip() for line in rendered.dockerfile.splitlines()
            if line.startswith("FROM ") and " AS " in line]
