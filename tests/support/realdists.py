"""Real distribution files from the user's default index, downloaded once into a cache outside the repo.

Tests that need a project's real sdist (its own PKG-INFO, pyproject.toml, setup.py) serve it from the
local `IndexServer`; this module fetches it with pip the first time (`pytest -m network`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from packaging.utils import parse_sdist_filename, parse_wheel_filename
from platformdirs import user_cache_dir

from envbuilder.index.distmeta import read_sdist_pkg_info, read_wheel_metadata
from tests.conftest import require_tool
from tests.support.dists import BuiltDist
from tests.support.index_server import IndexServer

CACHE = Path(os.environ.get("ENVBUILDER_TEST_DISTS", user_cache_dir("envbuilder-test-dists")))


def fetch(*specs: str, binary: bool = False, deps: bool = False) -> list[Path]:
    """The files for `specs` (sdists unless `binary`), downloaded by pip into the cache if missing."""
    folder = CACHE / ("wheels" if binary else "sdists")
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PIP_CONSTRAINT": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PIP_FIND_LINKS", None)
    args = [sys.executable, "-m", "pip", "download", "-q", "-d", str(folder),
            "--only-binary" if binary else "--no-binary", ":all:", *(() if deps else ("--no-deps",)), *specs]
    result = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=600)
    require_tool("the default package index", result.returncode == 0, f"pip download failed: {result.stderr[-500:]}")
    return sorted(folder.iterdir())


def serve(server: IndexServer, path: Path) -> None:
    """Publish a real file (its bytes and its PKG-INFO / METADATA) on the local index server."""
    name = path.name
    if name.endswith(".whl"):
        project = str(parse_wheel_filename(name)[0])
        meta = read_wheel_metadata(path, project, name)
    else:
        project = str(parse_sdist_filename(name)[0])
        meta = read_sdist_pkg_info(path, project, name)
    server.add(BuiltDist(name, path.read_bytes(), meta), project=project)


def sdist_files(sdist: Path, under: str = "", skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The sdist's files as a repository would hold them: top directory stripped, placed below `under`,
    without the files whose path starts with one of `skip` (PKG-INFO and what the build generates)."""
    out = {}
    with tarfile.open(sdist) as tf:
        for member in tf.getmembers():
            rel = member.name.split("/", 1)[1] if "/" in member.name else ""
            if member.isfile() and not rel.startswith(skip or ("\0",)):
                out[f"{under}/{rel}" if under else rel] = tf.extractfile(member).read()  # type: ignore[union-attr]
    return out
