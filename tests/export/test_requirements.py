"""requirements export: exact text, and real pip / uv installs from a local index with hashes required."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from envbuilder.export import export, requirements, select
from envbuilder.lock.model import BuildRecipe
from tests.export.helpers import (
    clean_env, installed, locked_versions, make_lock, make_venv, must, pip, package, run, source_tree, uv,
)
from tests.support.dists import make_sdist, make_wheel

RECIPE = BuildRecipe(env={"DEMO_BUILD_FLAG": "from recipe"}, inputs_digest="sha256:" + "3" * 64)


@pytest.fixture
def demo(index_server):
    """alpha -> beta (wheels) and gamma (an sdist built with a recipe), all served by the test index."""
    alpha = make_wheel("alpha", "1.0", requires_dist=["beta>=2"])
    beta = make_wheel("beta", "2.0")
    gamma = make_sdist("gamma", "0.5", files=source_tree("gamma", "0.5"))
    for dist in (alpha, beta, gamma):
        index_server.add(dist)
    lock = make_lock([
        package("gamma", "0.5", [gamma], build=RECIPE),
        package("alpha", "1.0", [alpha], deps=["beta>=2"]),
        package("beta", "2.0", [beta]),
    ])
    return lock, {"alpha": alpha, "beta": beta, "gamma": gamma}


def test_text_is_sorted_hashed_line_continued_and_marks_source_builds(demo):
    lock, dists = demo
    text = export(lock, "requirements", origin="locks/demo.lock.toml")
    body = [line for line in text.splitlines() if not line.startswith("# ") or "built from" in line or "#   " in line]
    assert body == [
        "alpha==1.0 \\",
        f"    --hash=sha256:{dists['alpha'].sha256}",
        "beta==2.0 \\",
        f"    --hash=sha256:{dists['beta'].sha256}",
        f"# gamma: built from its sdist by the installer (envbuilder recipe {RECIPE.inputs_digest}); "
        "set for the build:",
        "#   DEMO_BUILD_FLAG='from recipe'",
        "gamma==0.5 \\",
        f"    --hash=sha256:{dists['gamma'].sha256}",
    ]
    assert f"# target: demo  lock: {lock.digest}" in text
    assert "http" not in text  # the user's installer brings its own index


def test_same_lock_same_bytes_whatever_the_package_order(demo):
    lock, _ = demo
    shuffled = replace(lock, packages=tuple(reversed(lock.packages)))
    assert export(lock, "requirements") == export(shuffled, "requirements")


def test_skipped_source_builds_are_named_not_dropped_silently(demo):
    lock, dists = demo
    text = requirements.render(select(lock, skip_source_builds=True))
    assert "\ngamma==" not in text
    assert f"# skipped source build: gamma==0.5 (sdist sha256:{dists['gamma'].sha256})" in text


def test_every_artifact_of_a_package_is_hashed(index_server):
    wheels = [make_wheel("multi", "1.0", tags=t) for t in ("cp311-cp311-manylinux_2_17_x86_64", "py3-none-any")]
    sdist = make_sdist("multi", "1.0")
    text = export(make_lock([package("multi", "1.0", [*wheels, sdist])]), "requirements")
    hashes = {line.split("sha256:")[1].rstrip(" \\") for line in text.splitlines() if "--hash=" in line}
    assert hashes == {d.sha256 for d in (*wheels, sdist)}


def test_git_source_is_a_direct_reference_at_the_full_commit():
    commit = "a" * 40
    lock = make_lock([package("sglang", "0.5.9", git=("https://example.invalid/sglang.git", commit, "python"))])
    line = f"sglang @ git+https://example.invalid/sglang.git@{commit}#subdirectory=python"
    assert line in export(lock, "requirements")


def test_markers_are_kept(demo):
    lock, _ = demo
    marked = replace(lock, packages=tuple(replace(p, marker="python_version >= '3.8'") if p.name == "beta" else p
                                          for p in lock.packages))
    assert "beta==2.0 ; python_version >= '3.8' \\" in export(marked, "requirements")


def _write(tmp_path: Path, lock) -> Path:
    path = tmp_path / "requirements.lock.txt"
    path.write_text(export(lock, "requirements"))
    return path


def test_pip_installs_it_with_require_hashes_and_the_recipe_env(demo, index_server, tmp_path):
    lock, _ = demo
    python = make_venv(tmp_path / "venv")
    req = _write(tmp_path, lock)
    env = clean_env(index_server.url, DEMO_BUILD_FLAG="from recipe")
    must(run([*pip(python), "install", "--require-hashes", "--no-deps", "-r", str(req)], env))
    got = installed(python)
    assert {k: got[k] for k in locked_versions(lock)} == locked_versions(lock)
    built = subprocess.run([str(python), "-c", "import gamma; print(gamma.BUILT_WITH)"], capture_output=True, text=True)
    assert built.stdout.strip() == "from recipe"


def test_uv_installs_it_with_require_hashes(demo, index_server, tmp_path):
    lock, _ = demo
    python = make_venv(tmp_path / "venv")
    req = _write(tmp_path, lock)
    must(run([uv(), "pip", "install", "--python", str(python), "--require-hashes", "-r", str(req)],
             clean_env(index_server.url, UV_CACHE_DIR=str(tmp_path / "uv-cache"))))
    got = installed(python)
    assert {k: got[k] for k in locked_versions(lock)} == locked_versions(lock)


def test_a_file_whose_bytes_differ_from_the_lock_is_refused(demo, index_server, tmp_path):
    lock, _ = demo
    forged = replace(lock, packages=tuple(
        replace(p, artifacts=tuple(replace(a, sha256="0" * 64) for a in p.artifacts)) if p.name == "beta" else p
        for p in lock.packages))
    python = make_venv(tmp_path / "venv")
    proc = run([*pip(python), "install", "--require-hashes", "--no-deps", "-r", str(_write(tmp_path, forged))],
               clean_env(index_server.url))
    assert proc.returncode != 0
    assert "HASHES" in proc.stderr.upper() and "beta" in proc.stderr
    assert "beta" not in installed(python)
