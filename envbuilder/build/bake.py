"""A bake file: every target's rendered context as one `docker buildx bake` target.

The file carries no host facts: MAX_JOBS is a bake variable read from the environment at bake
time, the index URL a secret read from the INDEX_URL environment variable (never a build arg:
those are kept in the image history), and other secrets are added on the command line
(`--set '*.secrets=...'`), so the file can be committed and run on any BuildKit, local or remote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from envbuilder.build.render import Rendered
from envbuilder.build.service import default_tag


def _target(rendered: Rendered, context: str, cache_dir: str) -> dict:
    plan = rendered.plan
    cache = f"{cache_dir}/{plan.target}"
    return {
        "context": context,
        "dockerfile": "Dockerfile",
        "target": "runtime",
        "tags": [default_tag(plan)],
        "labels": dict(plan.labels()),
        "args": {"MAX_JOBS": "${MAX_JOBS}"},
        "secret": ["id=index_url,env=INDEX_URL"],
        "cache-from": [f"type=local,src={cache}"],
        "cache-to": [f"type=local,dest={cache},mode=max"],
    }


def bake_file(contexts: dict[str, tuple[Rendered, Path]], bake_path: Path, cache_dir: str = ".buildx-cache") -> str:
    """JSON text; context paths are relative to the bake file, as bake resolves them."""
    targets = {}
    for name, (rendered, context) in sorted(contexts.items()):
        rel = os.path.relpath(Path(context).resolve(), Path(bake_path).resolve().parent)
        targets[name] = _target(rendered, rel, cache_dir)
    doc = {
        "variable": {"MAX_JOBS": {"default": ""}},
        "group": {"default": {"targets": sorted(targets)}},
        "target": targets,
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
