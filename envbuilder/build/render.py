"""Render: lock + matrix -> Dockerfile and build context, with no network and no host facts.

The same lock and matrix render to the same bytes anywhere, which is what lets a reviewer diff a
Dockerfile and lets BuildKit's cache key on content.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2
from ruamel.yaml import YAML

import envbuilder
from envbuilder import quoting
from envbuilder.build import context, memory, plan as planmod
from envbuilder.build.plan import BuildPlan, make_plan
from envbuilder.errors import BadInput
from envbuilder.lock import lock_path
from envbuilder.lock.io import read_lock_for
from envbuilder.lock.model import Lock
from envbuilder.matrix import Target, load_target, project_root

MARKER = ".envbuilder-context"
TEMPLATE = "Dockerfile.j2"


@dataclass(frozen=True)
class Rendered:
    plan: BuildPlan
    dockerfile: str
    files: dict[str, bytes]


def templates_dir() -> Path:
    """dockerfiles/ beside the envbuilder package (a checkout), else in the project root."""
    override = os.environ.get("ENVBUILDER_DOCKERFILES")
    candidates = [Path(override)] if override else []
    candidates += [Path(envbuilder.__file__).resolve().parents[1] / "dockerfiles"]
    for candidate in candidates:
        if (candidate / TEMPLATE).is_file():
            return candidate
    fallback = project_root() / "dockerfiles"
    if (fallback / TEMPLATE).is_file():
        return fallback
    raise BadInput(f"no {TEMPLATE} found (looked in {', '.join(map(str, candidates))} and {fallback}); "
                   "set ENVBUILDER_DOCKERFILES to the templates directory")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    # Every value from the lock or the matrix goes through one of these (see envbuilder.quoting).
    env.filters.update(env_quote=quoting.dockerfile_string, word=quoting.dockerfile_word,
                       comment=quoting.dockerfile_comment, json_string=quoting.dockerfile_json,
                       shell=quoting.shell_word)  # one word of a RUN line (recipes are data: quoted)
    env.filters["format_glob"] = lambda stage: f"/mnt/{stage}/*.whl"
    return env


def dockerfile(plan: BuildPlan, link: bool = False) -> str:
    """`link`: join the venv layers with `COPY --link` (an engine whose Dockerfile frontend has it)."""
    text = _environment().get_template(TEMPLATE).render(
        plan=plan, link=link, venv=planmod.VENV, tool_venv=planmod.TOOL_VENV, pip_venv=planmod.PIP_VENV,
        image_home=planmod.IMAGE_HOME, project_dir=planmod.PROJECT_DIR, manifest_path=planmod.MANIFEST_PATH,
        max_jobs_fallback=memory.shell_fallback(),
    )
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def matrix_files(target: Target) -> dict[str, bytes]:
    """The target's matrix file and every file it `extends`, so `envbuilder serve` works inside."""
    files: dict[str, bytes] = {}
    path = target.source_path
    while path is not None and path.name not in files:
        data = path.read_bytes()
        files[path.name] = data
        parent = (YAML(typ="safe").load(data) or {}).get("extends")
        path = (path.parent / parent).with_suffix(".yaml") if isinstance(parent, str) else None
    return files


def render(lock: Lock, target: Target, link: bool = False) -> Rendered:
    matrices = matrix_files(target)
    plan = make_plan(lock, target, tuple(sorted(matrices)))
    text = dockerfile(plan, link)
    return Rendered(plan, text, context.context_files(plan, text, matrices))


def load(target_name: str, lock_file: Path | None = None) -> tuple[Lock, Target]:
    """The target's matrix and its lock (locks/<target>.lock.toml unless given)."""
    target = load_target(target_name)
    path = lock_file or lock_path(project_root(), target.name)
    return read_lock_for(path, target.indexes), target


def write_context(rendered: Rendered, out: Path) -> Path:
    """Write the context to `out`, replacing an earlier render but never a directory it did not make."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise BadInput(f"{out}: exists and is not an envbuilder build context; choose an empty or new directory")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(f"{rendered.plan.target} {rendered.plan.lock_digest}\n")
    for rel, data in sorted(rendered.files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (out / ".dockerignore").write_text(f"{MARKER}\n")
    return out
