"""PEP 517 metadata of an unpacked source tree: the build backend asked, in an isolated environment.

Shared by the sdist route (envbuilder.index.sourcemeta unpacks the archive first) and git sources
built at their commit (envbuilder.index.gitbuild materialises the tree first), so both run the
project's build code the same way, as `pip install` does. `install_build_env` is the one place that
says how the build environment gets its requirements.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Protocol

from packaging.utils import canonicalize_name

from envbuilder.errors import Unreachable
from envbuilder.index.errors import DynamicMetadata
from envbuilder.index.models import CoreMetadata

_ENV_LOCK = threading.Lock()  # backend runs set PIP_INDEX_URL in os.environ: one at a time
BUILD_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
_HINT = "give static metadata for it in the matrix (`metadata: {requires_dist: [...]}`)"


class BuildEnvInstaller(Protocol):
    def install(self, python: str, requires: list[str]) -> Any: ...

    def close(self) -> None: ...


def install_build_env(env: Any, builder: Any, installer: BuildEnvInstaller) -> None:
    """Install the PEP 517 build requirements into `env`, hashed (envbuilder.resolve.buildenv).

    The static `[build-system].requires` first; then the backend's own `get_requires_for_build_wheel`
    (it can only be asked once the backend imports), resolved together with the first set, which
    is kept where it fits, so only what the backend added is installed in the second step."""
    static = sorted(builder.build_system_requires)
    installer.install(env.python_executable, static)
    dynamic = sorted(set(builder.get_requires_for_build("wheel")) - set(static))
    if dynamic:
        installer.install(env.python_executable, static + dynamic)


def hashed_installer(index_url: str | None, where: str, cache: Any = None, offline: bool = False) -> BuildEnvInstaller:
    """A client of `index_url` (the user's default index when None) over `cache` (the default cache
    when None), offline when the lock is: the build environment then comes from cached wheels only."""
    from envbuilder.index.client import IndexClient
    from envbuilder.index.config import default_index_url
    from envbuilder.resolve.buildenv import HashedBuildEnv

    client = IndexClient({"pypi": index_url or default_index_url()}, cache=cache, offline=offline)
    return HashedBuildEnv(client, where, owns_client=True)


def backend_metadata(source: Path, where: str, index_url: str | None,
                     extra_env: dict[str, str] | None = None, installer: BuildEnvInstaller | None = None) -> str:
    """METADATA from `source`'s build backend (`prepare_metadata_for_build_wheel`).

    `where` names the source in errors (an sdist file name, a URL at a commit); `extra_env` is
    set for the backend run (a git source's setuptools-scm needs none: it sees the commit itself).
    `installer` installs the build requirements by hash (the index client passes one sharing its
    cache and offline mode); without one, a client of `index_url` is made.
    """
    if installer is None:
        with closing(hashed_installer(index_url, where)) as made:
            return backend_metadata(source, where, index_url, extra_env, made)
    try:
        from build import BuildBackendException, ProjectBuilder
        from build.env import DefaultIsolatedEnv
    except ImportError as exc:  # pragma: no cover - `build` is a dependency
        raise Unreachable(f"the `build` package is missing ({exc}): reinstall envbuilder") from None
    if not (source / "pyproject.toml").is_file() and not (source / "setup.py").is_file():
        raise DynamicMetadata(f"{where}: its dependencies are only known by building it, and it has neither "
                              f"pyproject.toml nor setup.py to build; {_HINT}")
    settings = {"PIP_NO_INPUT": "1", **({"PIP_INDEX_URL": index_url} if index_url else {}), **(extra_env or {})}
    with _ENV_LOCK, tempfile.TemporaryDirectory(prefix="envbuilder-meta-") as out, _environ(settings):
        try:
            with DefaultIsolatedEnv() as env:
                builder = ProjectBuilder.from_isolated_env(env, source)
                install_build_env(env, builder, installer)
                dist_info = Path(builder.metadata_path(Path(out)))
                return (dist_info / "METADATA").read_text("utf-8")
        except BuildBackendException as exc:
            raise DynamicMetadata(f"{where}: its build backend could not prepare metadata ({exc}); {_HINT}") from None
        except (subprocess.CalledProcessError, OSError) as exc:  # pip could not install the build requirements
            raise DynamicMetadata(f"{where}: its dependencies are only known by building it, and its build "
                                  f"requirements could not be installed from the index ({exc}); check the index, "
                                  f"or {_HINT}") from None


@contextmanager
def _environ(settings: dict[str, str]) -> Iterator[None]:
    """Set variables for the backend run and restore them after (callers hold _ENV_LOCK)."""
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def check_described(text: str, project: str, where: str) -> None:
    """The backend must describe the project asked for: a source that builds another is refused."""
    described = CoreMetadata.parse(text)
    if canonicalize_name(described.name) != canonicalize_name(project):
        raise DynamicMetadata(f"{where}: its build backend describes {described.name} {described.version}, "
                              f"not {project}; {_HINT}")
