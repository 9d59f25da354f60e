"""Git sources locked from their own tree: the commit verified, its pyproject read from a partial clone.

The repositories are real: made in the test from a real project's sdist (httpx 0.28.1, fetched once
from the default index: `pytest -m network`), with several commits and a dependency change between
them, then cloned bare and served over file:// with `uploadpack.allowFilter`, so the lock's
`--filter=blob:none` fetch and the one-blob read of pyproject.toml are the real code path.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from envbuilder.index.buildsystem import build_system_requires
from envbuilder.index.cache import Cache
from envbuilder.index.models import CoreMetadata
from envbuilder.index.sourcemeta import pep621_metadata
from envbuilder.matrix import load_target
from tests.conftest import needs_tool
from tests.resolve.project import publish
from tests.support.realdists import fetch, sdist_files

pytestmark = [pytest.mark.network, needs_tool("git", shutil.which("git"), "apt-get install git")]
REPO = Path(__file__).resolve().parents[2]
HTTPX_DEPS = {"anyio", "certifi", "httpcore==1.*", "idna"}


@pytest.fixture(scope="module")
def httpx_sdist() -> Path:
    """Fetched before any test's fixtures point pip at the local index."""
    (sdist,) = [p for p in fetch("httpx==0.28.1") if p.name == "httpx-0.28.1.tar.gz"]
    return sdist


@pytest.fixture
def httpx_repo(httpx_sdist: Path, make_git_repo, tmp_path: Path):
    """A bare repository: httpx 0.28.1 under python/, then sniffio added, then a README edit."""
    tree = sdist_files(httpx_sdist, "python")
    work = make_git_repo("httpx-work", [tree])
    pyproject = tree["python/pyproject.toml"].decode()
    assert '"idna",\n' in pyproject
    work.commit({"python/pyproject.toml": pyproject.replace('"idna",\n', '"idna",\n    "sniffio>=1.3",\n')},
                message="depend on sniffio")
    work.commit({"python/README.md": "moved on\n"}, message="docs")
    bare = tmp_path / "git" / "httpx.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work.path), str(bare)], check=True)
    subprocess.run(["git", "--git-dir", str(bare), "config", "uploadpack.allowFilter", "true"], check=True)
    return work, bare.as_uri()


@pytest.fixture
def index_with_httpx_deps(default_index):
    for name in ("anyio", "certifi", "idna", "sniffio"):
        publish(default_index, name, "4.0" if name == "anyio" else "1.3")
    publish(default_index, "httpcore", "1.0.9")
    for name, version in (("hatchling", "1.27.0"), ("hatch-fancy-pypi-readme", "24.1.0")):  # its [build-system]
        publish(default_index, name, version)
    return default_index


def _spec(url: str, rev: str, **more) -> dict:
    return {"git": url, "rev": rev, "subdirectory": "python", "metadata": {"version": "0.28.1"}, **more}


def test_git_source_locks_what_its_commit_declares_and_follows_a_dependency_change(
        project, index_with_httpx_deps, httpx_repo):
    work, url = httpx_repo
    first, second, _ = work.commits
    project.write_matrix("gitmeta", {"httpx": _spec(url, first)})
    result = project.run("lock", "gitmeta")
    assert result.rc == 0, result.text
    httpx = project.read_lock("gitmeta").package("httpx")
    assert httpx.metadata_from == "pyproject" and set(httpx.dependencies) == HTTPX_DEPS
    assert httpx.source.commit == first and httpx.source.tree == work.git("rev-parse", f"{first}^{{tree}}")
    assert httpx.build.tools == ("hatch-fancy-pypi-readme==24.1.0", "hatchling==1.27.0")  # read from the commit

    # the partial clone holds the commit's trees and the one blob it read, not the project's files
    clone = Cache().git_dir(url)
    def has(rev_path: str) -> bool:
        blob = work.git("rev-parse", rev_path)
        probe = ["git", "-c", "protocol.allow=never", "--git-dir", str(clone), "cat-file", "-e", blob]
        return subprocess.run(probe, capture_output=True).returncode == 0
    assert has(f"{first}:python/pyproject.toml")
    assert not has(f"{first}:python/httpx/_api.py") and not has(f"{first}:python/README.md")

    project.write_matrix("gitmeta", {"httpx": _spec(url, second)})
    assert project.run("lock", "gitmeta").rc == 0
    assert set(project.read_lock("gitmeta").package("httpx").dependencies) == HTTPX_DEPS | {"sniffio>=1.3"}


def test_offline_relock_uses_the_cached_clone(project, index_with_httpx_deps, httpx_repo):
    work, url = httpx_repo
    project.write_matrix("gitoff", {"httpx": _spec(url, work.commits[1])})
    assert project.run("lock", "gitoff").rc == 0
    before = project.lock_bytes("gitoff")
    result = project.run("lock", "--offline", "--refresh", "gitoff")
    assert result.rc == 0, result.text
    assert project.lock_bytes("gitoff") == before


def test_an_absent_commit_is_bad_input_naming_url_and_commit(project, index_with_httpx_deps, httpx_repo):
    _, url = httpx_repo
    missing = "0123456789abcdef0123456789abcdef01234567"
    project.write_matrix("gitabsent", {"httpx": _spec(url, missing)})
    result = project.run("lock", "gitabsent")
    assert result.rc == 2, result.text
    assert url in result.err and missing in result.err and "Traceback" not in result.text


def test_an_absent_subdirectory_is_bad_input(project, index_with_httpx_deps, httpx_repo):
    work, url = httpx_repo
    project.write_matrix("gitsub", {"httpx": _spec(url, work.commits[0], subdirectory="nope")})
    result = project.run("lock", "gitsub")
    assert result.rc == 2 and "no directory 'nope'" in result.err, result.text


def test_the_matrix_override_wins_over_the_source(project, index_with_httpx_deps, httpx_repo):
    work, url = httpx_repo
    spec = _spec(url, work.commits[0], metadata={"version": "0.28.1", "requires_dist": ["idna"]})
    project.write_matrix("gitover", {"httpx": spec})
    assert project.run("lock", "gitover").rc == 0
    httpx = project.read_lock("gitover").package("httpx")
    assert httpx.metadata_from == "matrix" and httpx.dependencies == ("idna",)


def test_sglang_source_says_what_blackwell_sm120_main_overrides():
    """SGLang 0.5.9's sdist carries python/pyproject.toml of that release; the shipped matrix keeps a
    hand-copied override only because GitHub is out of reach here: the source route reads the same."""
    (sdist,) = [p for p in fetch("sglang==0.5.9") if p.name == "sglang-0.5.9.tar.gz"]
    with tarfile.open(sdist) as tf:
        data = tf.extractfile("sglang-0.5.9/pyproject.toml").read()  # type: ignore[union-attr]
    source = CoreMetadata.parse(pep621_metadata(data, "sglang", "0.5.9", sdist.name))  # type: ignore[arg-type]
    override = load_target(REPO / "matrices" / "blackwell-sm120-main.yaml").packages["sglang"].metadata
    assert override is not None
    base = {r for r in source.requires_dist if "extra ==" not in r}
    assert base == set(override.requires_dist)
    assert source.requires_python == override.requires_python
    assert override.build_requires == build_system_requires(data, sdist.name)
