"""Git sources with dynamic metadata, built by their own backend at the locked commit.

The repositories are real: real projects' source (their sdists, fetched once from the default
index: `pytest -m network`, minus PKG-INFO and the files their build generates) committed into
local repositories: python-dateutil 2.9.0.post0 (setup.cfg, setuptools-scm) tagged `2.9.0`, then
moved on by a commit that changes `install_requires`; httpx 0.28.1 (hatchling, a version file)
under `python/`; platformdirs 4.3.6 (hatch-vcs); a second repository used as a submodule. They are
cloned bare and served over file:// with `uploadpack.allowFilter`, so the partial clone, the
sparse checkout of one commit and the backends' `git describe` all run for real. The build
requirements (setuptools, wheel, setuptools_scm, hatchling, hatch-vcs...: real wheels) come from
the local index server only, the host's pip configuration switched off. The target is Python
3.12; the backend runs on the Python at hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envbuilder.index.backend import BUILD_PYTHON
from envbuilder.index.cache import Cache
from envbuilder.errors import BadInput
from envbuilder.index.git import GitSources
from envbuilder.index.gitcheckout import checkout
from envbuilder.index.gitsubmodules import check_path, check_url, resolve_url
from tests.conftest import needs_tool
from tests.resolve.project import publish
from tests.support.realdists import fetch, sdist_files, serve

pytestmark = [pytest.mark.network, needs_tool("git", shutil.which("git"), "apt-get install git")]
GENERATED = ("PKG-INFO", "src/dateutil/_version.py", "src/python_dateutil.egg-info/")  # not in upstream git
REQUIRES = "install_requires = six >= 1.5\n"
MOVED_ON = ('install_requires =\n    six >= 1.5\n    tzdata; python_version >= "3.12"\n'
            '    backports.zoneinfo; python_version < "3.12"\n')


@pytest.fixture(scope="module")
def dists() -> dict[str, Path]:
    """Real sdists by project, fetched before pip is pointed at the local index."""
    sdists = fetch("python-dateutil==2.9.0.post0", "httpx==0.28.1", "platformdirs==4.3.6")
    return {p.name.rsplit("-", 1)[0]: p for p in sdists}


@pytest.fixture(scope="module")
def build_wheels() -> list[Path]:
    """The backends' build requirements, real wheels (hatch-vcs needs setuptools_scm>=8, dateutil <8)."""
    fetch("setuptools", "wheel", "setuptools_scm<8", binary=True, deps=True)
    return fetch("hatchling", "hatch-fancy-pypi-readme", "hatch-vcs", binary=True, deps=True)


@pytest.fixture
def index(default_index, build_wheels, monkeypatch: pytest.MonkeyPatch):
    """The build requirements (real wheels) and the runtime dependencies on the one local index."""
    for wheel in build_wheels:
        serve(default_index, wheel)
    for name, version in (("six", "1.16.0"), ("tzdata", "2024.1"), ("backports-zoneinfo", "0.2.1"),
                          ("anyio", "4.0"), ("certifi", "1.3"), ("idna", "1.3"), ("httpcore", "1.0.9")):
        publish(default_index, name, version)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.setenv("PIP_CONSTRAINT", "")
    return default_index


def _serve_bare(work, bare: Path) -> str:
    subprocess.run(["git", "clone", "-q", "--bare", str(work.path), str(bare)], check=True)
    subprocess.run(["git", "--git-dir", str(bare), "config", "uploadpack.allowFilter", "true"], check=True)
    return bare.as_uri()


@pytest.fixture
def dateutil_repo(dists, make_git_repo, tmp_path: Path):
    """Tagged 2.9.0 at the first commit; `main` then moves on to a commit that changes install_requires."""
    tree = sdist_files(dists["python-dateutil"], skip=GENERATED)
    setup_cfg = tree["setup.cfg"].decode()
    assert REQUIRES in setup_cfg
    work = make_git_repo("dateutil-work", [tree])
    work.tag("2.9.0")
    work.commit({"setup.cfg": setup_cfg.replace(REQUIRES, MOVED_ON)}, message="depend on tzdata")
    return work, _serve_bare(work, tmp_path / "git" / "dateutil.git")


def _lock(project, target: str, url: str, rev: str, *flags: str, name: str = "python-dateutil", **spec: str):
    project.write_matrix(target, {name: {"git": url, "rev": rev, **spec}})
    result = project.run("lock", *flags, target)
    assert result.rc == 0, result.text
    return project.read_lock(target)


def test_a_dynamic_git_source_is_built_at_its_commit_and_follows_the_branch(project, index, dateutil_repo):
    work, url = dateutil_repo
    tagged, moved = work.commits
    lock = _lock(project, "gitdyn", url, tagged)
    dateutil = lock.package("python-dateutil")
    assert dateutil.version == "2.9.0"  # setuptools-scm saw the tag at that commit
    assert dateutil.metadata_from == "backend" and set(dateutil.dependencies) == {"six>=1.5"}
    assert dateutil.source.tree == work.git("rev-parse", f"{tagged}^{{tree}}")
    assert BUILD_PYTHON != "3.12" and dateutil.metadata_python == BUILD_PYTHON
    assert f'metadata-python = "{BUILD_PYTHON}"' in project.lock_bytes("gitdyn").decode()
    assert any("setuptools_scm" in r.path for r in index.log)  # its build requirements came from the index

    # main moved on: the re-lock shows the new version and dependencies, markers read for the 3.12 target
    assert work.git("rev-parse", "main") == moved
    lock = _lock(project, "gitdyn", url, moved)
    dateutil = lock.package("python-dateutil")
    assert dateutil.version == f"2.9.1.dev1+g{moved[:7]}"
    assert {p.name for p in lock.packages} == {"python-dateutil", "six", "tzdata"}


def test_a_version_file_in_a_subdirectory_is_read_by_the_backend(project, index, dists, make_git_repo, tmp_path):
    """httpx 0.28.1 (hatchling, version from httpx/__version__.py) under python/: bumping the file moves the lock."""
    tree = sdist_files(dists["httpx"], "python", skip=("PKG-INFO",))
    work = make_git_repo("httpx-work", [tree])
    version_py = tree["python/httpx/__version__.py"].decode()
    work.commit({"python/httpx/__version__.py": version_py.replace('"0.28.1"', '"0.28.2"')}, message="release")
    url = _serve_bare(work, tmp_path / "git" / "httpx.git")
    for commit, version in zip(work.commits, ("0.28.1", "0.28.2")):
        httpx = _lock(project, "gitverfile", url, commit, name="httpx", subdirectory="python").package("httpx")
        assert httpx.version == version and httpx.metadata_from == "backend"
        assert set(httpx.dependencies) == {"anyio", "certifi", "httpcore==1.*", "idna"}


def test_a_hatch_vcs_version_comes_from_the_tag(project, index, dists, make_git_repo, tmp_path):
    """platformdirs 4.3.6 (hatchling + hatch-vcs, setuptools_scm 8+): the tag, then a dev version after it."""
    tree = sdist_files(dists["platformdirs"], skip=("PKG-INFO", "src/platformdirs/version.py"))
    work = make_git_repo("platformdirs-work", [tree])
    work.tag("4.3.6")
    moved = work.commit({"README.rst": tree["README.rst"] + b"\nmoved on\n"})
    url = _serve_bare(work, tmp_path / "git" / "platformdirs.git")
    tagged = _lock(project, "gitvcs", url, work.commits[0], name="platformdirs").package("platformdirs")
    assert tagged.version == "4.3.6" and tagged.metadata_from == "backend"
    after = _lock(project, "gitvcs", url, moved, name="platformdirs").package("platformdirs")
    assert after.version.startswith("4.3.7.dev1+g") and moved.startswith(after.version.split("+g")[1])


def test_built_metadata_is_cached_by_commit_and_offline_works(project, index, dateutil_repo):
    work, url = dateutil_repo
    _lock(project, "gitcache", url, work.commits[1])
    before = project.lock_bytes("gitcache")
    index.clear_log()
    _lock(project, "gitcache", url, work.commits[1], "--refresh")
    assert not [r for r in index.log if r.path.endswith(".whl") and "setuptools" in r.path]  # nothing built again
    _lock(project, "gitcache", url, work.commits[1], "--offline", "--refresh")
    assert project.lock_bytes("gitcache") == before
    clone = Cache().git_dir(url)
    assert not list((clone / "worktrees").glob("*"))  # the checkout was removed, its record pruned


def test_a_subdirectory_checkout_fetches_that_part_of_one_commit_and_sees_the_tags(dateutil_repo, tmp_path):
    work, url = dateutil_repo
    sources = GitSources(Cache())
    with checkout(sources, url, work.commits[1], "src", tmp_path / "tree") as source:
        assert (source / "dateutil" / "parser" / "_parser.py").is_file()
        assert not (tmp_path / "tree" / "docs").exists()
        described = subprocess.run(["git", "describe", "--tags", "--long"], cwd=source, capture_output=True,
                                   text=True, check=True).stdout.strip()
        assert described == f"2.9.0-1-g{work.commits[1][:7]}"
    assert not (tmp_path / "tree").exists()
    clone = Cache().git_dir(url)
    def fetched(path: str) -> bool:
        blob = work.git("rev-parse", f"{work.commits[1]}:{path}")
        probe = ["git", "-c", "protocol.allow=never", "--git-dir", str(clone), "cat-file", "-e", blob]
        return subprocess.run(probe, capture_output=True).returncode == 0
    assert fetched("src/dateutil/parser/_parser.py") and fetched("setup.cfg")  # the cone: src/ and top-level files
    assert not fetched("docs/conf.py")


@pytest.fixture
def with_submodule(dateutil_repo, make_git_repo, tmp_path: Path):
    """dateutil reading install_requires from a file of a submodule (a second real repository)."""
    work, _ = dateutil_repo
    deps = make_git_repo("deps-work", [{"requirements.txt": "six >= 1.5\ntzdata\n"}])
    _serve_bare(deps, tmp_path / "git" / "deps.git")
    setup_cfg = (work.path / "setup.cfg").read_text()
    work.git("update-index", "--add", "--cacheinfo", f"160000,{deps.head},vendor/deps")
    gitmodules = '[submodule "deps"]\n\tpath = vendor/deps\n\turl = ../deps.git\n'
    work.commit({".gitmodules": gitmodules,
                 "setup.cfg": setup_cfg.replace(MOVED_ON, "install_requires = file: vendor/deps/requirements.txt\n")},
                message="dependencies from a submodule")
    shutil.rmtree(tmp_path / "git" / "dateutil.git")
    return work, _serve_bare(work, tmp_path / "git" / "dateutil.git")


def test_a_submodule_is_fetched_at_its_recorded_commit(project, index, with_submodule):
    work, url = with_submodule
    lock = _lock(project, "gitsub", url, work.commits[-1])
    dateutil = lock.package("python-dateutil")
    assert dateutil.metadata_from == "backend" and dateutil.version.startswith("2.9.1.dev2+g")
    assert set(dateutil.dependencies) == {"six>=1.5", "tzdata"}  # read from the submodule's file


def test_a_submodule_url_with_a_command_transport_is_refused(project, index, dateutil_repo, tmp_path):
    work, _ = dateutil_repo
    marker = tmp_path / "pwned"
    work.git("update-index", "--add", "--cacheinfo", f"160000,{work.commits[0]},vendor/x")
    work.commit({".gitmodules": f'[submodule "x"]\n\tpath = vendor/x\n\turl = ext::sh -c touch% {marker}\n'})
    url = _serve_bare(work, tmp_path / "git" / "hostile.git")
    project.write_matrix("gitext", {"python-dateutil": {"git": url, "rev": work.commits[-1]}})
    result = project.run("lock", "gitext")
    assert result.rc == 2 and "ext::" in result.err and work.commits[-1] in result.err, result.text
    assert "Traceback" not in result.text and not marker.exists()


@pytest.mark.parametrize("path", ["../escape", "/abs", "a/../../b", "vendor/.git/hooks", "-opt", "a\\b", ""])
def test_submodule_paths_that_leave_the_work_folder_are_refused(path):
    with pytest.raises(BadInput, match="leave the work folder"):
        check_path(path, "repo at c")


@pytest.mark.parametrize("url", ["ext::sh -c id", "-uhttps://x/y", "fd::17", "http://host/r.git",
                                 "/srv/repo.git", "https://h/r\nx"])
def test_submodule_urls_other_than_the_allowed_transports_are_refused(url):
    with pytest.raises(BadInput, match="refused"):
        check_url(url, "repo at c")


def test_relative_submodule_urls_resolve_against_the_superproject():
    assert resolve_url("../deps.git", "file:///srv/git/main.git") == "file:///srv/git/deps.git"
    assert resolve_url("./sub", "https://h/org/main") == "https://h/org/main/sub"
    assert check_url("git@host.example:org/r.git", "w") == "git@host.example:org/r.git"
    assert os.sep == "/"  # git paths are POSIX paths on the machines this runs on


def test_a_matrix_git_url_with_a_command_transport_runs_nothing(project, tmp_path):
    marker = tmp_path / "pwned"
    project.write_matrix("gitcmd", {"x": {"git": f"ext::sh -c touch% {marker}", "rev": "0" * 40}})
    result = project.run("lock", "gitcmd")
    assert result.rc == 2 and "is not a git URL" in result.err and "Traceback" not in result.text, result.text
    assert not marker.exists()


def test_a_commit_with_nothing_to_build_is_bad_input_naming_url_and_commit(project, make_git_repo, tmp_path):
    work = make_git_repo("empty-work", [{"README": "no build files here\n"}])
    url = _serve_bare(work, tmp_path / "git" / "empty.git")
    project.write_matrix("gitnone", {"x": {"git": url, "rev": work.head}})
    result = project.run("lock", "gitnone")
    assert result.rc == 2 and url in result.err and work.head in result.err, result.text
    assert "metadata:" in result.err and "Traceback" not in result.text
