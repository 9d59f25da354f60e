"""Credentials in the index URL are used, never written: every command is run against a real
index that demands them (pypiserver with basic auth), and every output, written file and cache
entry is searched for the secret in plain, percent-encoded and base64 spellings."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.conftest import require_tool
from tests.resolve.project import Project, wide_consoles
from tests.support.authindex import AuthIndex, pypiserver_problem
from tests.support.dists import make_wheel


@pytest.fixture
def auth_index(tmp_path: Path):
    require_tool("pypiserver", pypiserver_problem() is None, pypiserver_problem() or "")
    folder = tmp_path / "packages"
    folder.mkdir()
    for dist in (make_wheel("app", "1.0", requires_dist=["lib>=1"]), make_wheel("lib", "1.0"),
                 make_wheel("lib", "2.0")):
        (folder / dist.filename).write_bytes(dist.data)
    with AuthIndex(folder) as index:
        yield index


@pytest.fixture
def secret_project(tmp_path: Path, auth_index: AuthIndex, monkeypatch: pytest.MonkeyPatch, capsys) -> Project:
    root = tmp_path / "project"
    (root / "matrices").mkdir(parents=True)
    (root / "locks").mkdir()
    (root / "matrices" / "app.yaml").write_text(
        'schema: 1\ntarget: app\nplatform: {os: linux, machine: x86_64, libc: glibc_2.39, python: "3.12"}\n'
        'toolchain: {base_image: "debian@sha256:' + "0" * 64 + '"}\n'
        'indexes:\n  pypi: {default: true}\n  private: {url_env: PRIVATE_INDEX_URL}\n'
        'packages:\n  app: ">=1"\n  lib: {version: ">=1", index: private}\n'
        'serve: {kind: llama.cpp, model: /models/m.gguf, env: {LLAMA_ARG_THREADS: hf-config-value}}\n')
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    monkeypatch.setenv("PIP_INDEX_URL", auth_index.url)
    monkeypatch.setenv("PRIVATE_INDEX_URL", auth_index.url)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("ENVBUILDER_HTTP_RETRIES", "1")
    monkeypatch.setenv("ENVBUILDER_PAGE_TTL", "0")
    monkeypatch.setenv("ENVBUILDER_HTTP_BACKOFF", "0.01")
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    wide_consoles(monkeypatch)
    return Project(root, capsys)


def _leaks(text: str, index: AuthIndex) -> list[str]:
    return [form for form in index.forms() if form in text]


def _tree_leaks(folder: Path, index: AuthIndex) -> dict[str, list[str]]:
    found = {}
    forms = [f.encode() for f in index.forms()]
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [f.decode() for f in forms if f in data]
        if hits or any(f.encode() in str(path).encode() for f in index.forms()):
            found[str(path.relative_to(folder))] = hits or ["in the path"]
    return found


def test_the_index_really_demands_the_credentials(auth_index: AuthIndex):
    assert httpx.get(auth_index.bare_url + "app/").status_code == 401
    assert httpx.get(auth_index.url + "app/").status_code == 200


def test_every_command_uses_the_credentials_and_writes_them_nowhere(secret_project: Project, auth_index: AuthIndex,
                                                                   tmp_path: Path):
    p = secret_project
    runs = {}

    def run(*args: str, expect: int = 0):
        result = p.run(*args)
        runs[" ".join(args)] = result
        assert result.rc == expect, (args, result.text)
        assert "Traceback" not in result.text
        return result

    run("lock", "app")
    lock = p.lock_path("app").read_text()
    assert "app" in lock and "127.0.0.1" not in lock
    run("lock", "app", "--check")
    run("explain", "app", "lib")
    run("targets", "--json")
    out = tmp_path / "out"
    out.mkdir()
    for fmt, name in (("requirements", "req.txt"), ("pylock", "pylock.toml"), ("conda-lock", "conda-lock.yml")):
        run("export", "app", "--format", fmt, "-o", str(out / name))
    assert "127.0.0.1" in (out / "pylock.toml").read_text()  # URLs are written, their credentials are not
    run("render", "app", "-o", str(out / "ctx"))
    plan = run("build", "app", "--dry-run")
    assert "LLAMA_ARG_THREADS=***" in plan.out and "hf-config-value" not in plan.out  # as the image label shows it
    run("bake", "-o", str(out / "bake.json"), "--contexts", str(out / "bake-ctx"))
    run("gate", "--base", str(p.lock_path("app")), "--head", str(p.lock_path("app")), "--format", "json")
    # failures print URLs too: a file the index no longer serves, and an unreachable index
    (auth_index.folder / "lib-2.0-py3-none-any.whl").unlink()
    failed = p.run("export", "app", "--format", "pylock", "-o", str(out / "pylock.again.toml"))
    runs["export after a file vanished"] = failed
    assert failed.rc == 1 and "***" in failed.err and "lib-2.0" in failed.err
    auth_index.stop()
    unreachable = p.run("lock", "app", "--upgrade-package", "lib")
    runs["lock against a stopped index"] = unreachable
    assert unreachable.rc == 3 and "ci-reader:***@127.0.0.1" in unreachable.err

    assert {cmd: _leaks(r.text, auth_index) for cmd, r in runs.items() if _leaks(r.text, auth_index)} == {}
    assert _tree_leaks(p.root, auth_index) == {}
    assert _tree_leaks(out, auth_index) == {}
    cache = Path(__import__("os").environ["ENVBUILDER_CACHE_DIR"])
    assert any(cache.rglob("*")) and _tree_leaks(cache, auth_index) == {}
    bake = json.loads((out / "bake.json").read_text())
    assert all("INDEX_URL" not in t["args"] for t in bake["target"].values())
