"""The ONE CPU-target image that every docker test shares: built once per pytest session.

Building `cpu-llamacpp` compiles llama.cpp (minutes on 2 cores), so no test builds its own first
image: ask for the session fixture `cpu_image` and get a `CpuImage`:

- `cpu_image.first`: the built image (`.tag`, `.lock_file` it was built from, `.log` = the build's
  BuildKit output, `.progress` = that output parsed into steps, cached or not).
- `cpu_image.build(tag, *extra_args, lock=None)`: another build of the same project (same cache).
- `cpu_image.bumped(tag, package, spec)`: re-lock with one matrix requirement changed and build it
  (the cache keeps every stage the change does not touch).
- `cpu_image.envbuilder(*args)`: the real CLI in the image's project folder.
- `cpu_image.token` / `.netrc` / `.ca_bundle`: the secrets the builds were given, to look for in layers.
- `cpu_image.lock` / `.matrix`: the project's current lock and matrix; `.docker_lock`: /tmp/eb-docker.lock.
  The token is also the password in the index URL every lock and build uses (the default index with
  `ci-reader:TOKEN@` added: an index that ignores unasked-for basic auth), so a leak of index
  credentials anywhere in the image shows up as the token.

Each build is `envbuilder build cpu-llamacpp --network host` with a fake netrc secret; tags live under
`envbuilder-e2e/cpu-llamacpp`. Docker work on a shared machine runs under
`flock /tmp/eb-docker.lock` (DOCKER_LOCK): wrap the pytest command, the fixture does not take it
itself (a flock taken by the wrapper would deadlock a second one taken in-process).
Without an engine and the base image the fixture skips, or fails under ENVBUILDER_CI=1.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from envbuilder.build import driver, engine
from envbuilder.build.progress import Progress
from envbuilder.errors import EnvbuilderError

REPO = Path(__file__).resolve().parents[2]
TARGET = "cpu-llamacpp"
BASE = "debian:bookworm-slim"
TAG = "envbuilder-e2e/cpu-llamacpp"
DOCKER_LOCK = Path("/tmp/eb-docker.lock")
HOW = "bash .ci/parts/10-docker.sh installs docker.io, starts the engine and imports the base image"


def engine_problem() -> str | None:
    """Why no image can be built here (no BuildKit CLI, engine down, base image missing), or None."""
    try:
        driver.check_engine(driver.detect())
        engine.client().images.get(BASE)
    except EnvbuilderError as exc:
        return str(exc)
    except Exception as exc:  # docker.errors.ImageNotFound, DockerException
        return f"{BASE} is not in the engine ({exc.__class__.__name__})"
    return None


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    lock_file: Path  # a copy of the lock the image was built from
    log: str  # the build's stderr: BuildKit's plain progress
    seconds: float

    @property
    def progress(self) -> Progress:
        progress = Progress()
        for line in self.log.splitlines():
            progress.feed(line)
        return progress


@dataclass
class CpuImage:
    project: Path
    workdir: Path
    ca_bundle: Path
    token: str
    netrc: Path
    index_url: str = ""  # the default index with ci-reader:TOKEN@ credentials
    first: BuiltImage = field(init=False)
    docker_lock: Path = DOCKER_LOCK  # the flock(1) file docker work on a shared machine runs under

    @property
    def matrix(self) -> Path:
        return self.project / "matrices" / f"{TARGET}.yaml"

    @property
    def lock(self) -> Path:
        return self.project / "locks" / f"{TARGET}.lock.toml"

    def envbuilder(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True,
                                cwd=self.project, env={**os.environ, "ENVBUILDER_ROOT": str(self.project),
                                                       **({"PIP_INDEX_URL": self.index_url} if self.index_url else {})})
        if check:
            assert result.returncode == 0, f"envbuilder {' '.join(args)}: {result.stderr[-4000:]}"
        return result

    def build(self, tag: str, *extra: str, lock: Path | None = None) -> BuiltImage:
        """`envbuilder build` of `lock` (default: the project's current lock) tagged `tag`."""
        saved = self.workdir / f"{re.sub(r'[^A-Za-z0-9.-]', '_', tag)}.lock.toml"
        shutil.copy(lock or self.lock, saved)
        started = time.monotonic()
        result = self.envbuilder("build", TARGET, "--network", "host", "-t", tag, "--lock", str(saved),
                                 "--secret", f"id=netrc,src={self.netrc}", *extra)
        return BuiltImage(tag, saved, result.stderr, time.monotonic() - started)

    def bumped(self, tag: str, package: str, spec: str) -> BuiltImage:
        """Set the matrix requirement of `package` to `spec` (e.g. "==4.67.0"), re-lock, build `tag`.

        The matrix keeps the change for later callers; restore it with `restore_matrix()`.
        """
        text = self.matrix.read_text()
        line = re.compile(rf'^(\s*){re.escape(package)}:\s*"[^"]*"\s*$', re.M)
        assert line.search(text), f"{package} has no requirement line in {self.matrix.name}"
        self.matrix.write_text(line.sub(lambda m: f'{m[1]}{package}: "{spec}"', text, count=1))
        self.envbuilder("lock", TARGET)
        return self.build(tag)

    def restore_matrix(self) -> None:
        shutil.copy(REPO / "matrices" / f"{TARGET}.yaml", self.matrix)
        shutil.copy(self.first.lock_file, self.lock)


@pytest.fixture(scope="session")
def cpu_image(tmp_path_factory: pytest.TempPathFactory) -> CpuImage:
    """The cpu-llamacpp image, locked against the default index and built once for the session."""
    from envbuilder.index.config import ca_bundle
    from tests.conftest import require_tool

    problem = engine_problem()
    require_tool("a docker engine with BuildKit and the base image", problem is None, f"{problem}; {HOW}")
    work = tmp_path_factory.mktemp("cpu-image")
    project = work / "project"
    (project / "matrices").mkdir(parents=True)
    shutil.copy(REPO / "matrices" / f"{TARGET}.yaml", project / "matrices")
    token = "envbuilder-fake-token-" + secrets.token_hex(16)
    netrc = work / "netrc"
    netrc.write_text(f"machine hub.invalid login ci password {token}\n")
    from envbuilder.index.config import default_index_url

    scheme, _, rest = default_index_url().partition("://")
    index_url = f"{scheme}://ci-reader:{token}@{rest.rpartition('@')[2]}"
    image = CpuImage(project, work, ca_bundle() or Path("/etc/ssl/certs/ca-certificates.crt"), token, netrc, index_url)
    image.envbuilder("lock", TARGET)
    image.first = image.build(f"{TAG}:first")
    return image


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses `cpu_image` is a docker and network test, and may wait for the cold build
    (llama.cpp compiled on 2 cores: ~10-25 min) in its setup: past the suite's 900 s default."""
    for item in items:
        if "cpu_image" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.docker)
            item.add_marker(pytest.mark.network)
            mark = item.get_closest_marker("timeout")
            seconds = (mark.args[0] if mark.args else mark.kwargs.get("timeout")) if mark else None
            if seconds is None or seconds < 3600:
                item.add_marker(pytest.mark.timeout(3600), append=False)
