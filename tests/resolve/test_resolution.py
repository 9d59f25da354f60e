"""`envbuilder lock` against a local index: the target's markers and tags, overrides, static metadata,
git sources, yanked files, pre-releases, and conflicts told in words."""

from __future__ import annotations

import sys

import pytest

from tests.resolve.project import publish
from tests.support.dists import make_sdist, make_wheel

CP312_28 = "cp312-cp312-manylinux_2_28_x86_64"


def _names(lock) -> dict[str, str]:
    return {p.name: p.version for p in lock.packages}


def test_markers_and_tags_come_from_the_target_not_the_host(project, default_index):
    assert sys.version_info[:2] != (3, 12), "this test shows a 3.12 target locked from another Python"
    publish(default_index, "app", "1.0", ["lib>=1", 'old; python_version < "3.12"', 'win; sys_platform == "win32"',
                                          'onlylinux; sys_platform == "linux" and platform_machine == "x86_64"'])
    for name in ("old", "win", "onlylinux"):
        publish(default_index, name, "1.0")
    publish(default_index, "lib", "1.0")
    publish(default_index, "lib", "2.0", tags="cp311-cp311-manylinux_2_28_x86_64")      # this host's wheel
    publish(default_index, "lib", "2.0", tags=CP312_28)                                 # the target's
    publish(default_index, "lib", "2.0", tags="cp312-cp312-manylinux_2_28_aarch64")     # another machine
    publish(default_index, "lib", "3.0", tags="cp312-cp312-manylinux_2_40_x86_64")      # glibc too new
    default_index.add(make_wheel("lib", "2.5", tags=CP312_28), requires_python=">=3.13")  # python too old
    project.write_matrix("t312", {"app": "==1.0"})

    result = project.run("lock", "t312")
    assert result.rc == 0, result.text
    lock = project.read_lock("t312")
    assert _names(lock) == {"app": "1.0", "lib": "2.0", "onlylinux": "1.0"}
    lib = lock.package("lib")
    assert [a.filename for a in lib.artifacts] == [f"lib-2.0-{CP312_28}.whl"]
    assert lock.environment["python"] == "3.12" and lock.environment["platform-tag"] == "manylinux_2_39_x86_64"
    assert "old" not in lock.package("app").dependencies and "onlylinux" in lock.package("app").dependencies

    project.write_matrix("t311", {"app": "==1.0"}, python="3.11", libc="glibc_2.40")  # the other way round
    assert project.run("lock", "t311").rc == 0
    lock = project.read_lock("t311")
    assert _names(lock) == {"app": "1.0", "lib": "2.0", "old": "1.0", "onlylinux": "1.0"}
    assert [a.filename for a in lock.package("lib").artifacts] == ["lib-2.0-cp311-cp311-manylinux_2_28_x86_64.whl"]


def test_override_replaces_a_dependents_pin_and_is_recorded(project, default_index):
    publish(default_index, "top", "1.0", ["dep==1.0"])
    publish(default_index, "other", "1.0", ["dep<3"])
    for version in ("1.0", "2.0", "3.0"):
        publish(default_index, "dep", version)
    project.write_matrix("ovr", {"top": "==1.0", "other": "", "dep": {"version": ">=2,<3", "override": True}})
    result = project.run("lock", "ovr")
    assert result.rc == 0, result.text
    dep = project.read_lock("ovr").package("dep")
    assert dep.version == "2.0" and dep.requested == ">=2,<3"
    assert dep.overridden == ("other 1.0: dep<3", "top 1.0: dep==1.0")

    project.write_matrix("plain", {"top": "==1.0", "dep": ">=2"})  # without override: a conflict
    result = project.run("lock", "plain")
    assert result.rc == 1 and "dep==1.0 (from top 1.0 <- the matrix)" in result.err, result.text


def test_sdist_static_metadata_from_the_matrix_needs_no_download(project, default_index):
    sdist = make_sdist("fa", "2.8.3", requires_dist=["never-used"], metadata_version="2.1")  # dynamic PKG-INFO
    default_index.add(sdist)
    default_index.add(make_wheel("fa", "2.8.3", tags=CP312_28))  # a wheel that `from: sdist` must not take
    publish(default_index, "einops", "0.8.0")
    project.write_matrix("src", {"fa": {"version": "==2.8.3", "build": {"from": "sdist", "env": {"ARCHS": "120"}},
                                        "metadata": {"requires_dist": ["einops"],
                                                     "build_requires": ["setuptools>=40.8.0"]}}})
    result = project.run("lock", "src")
    assert result.rc == 0, result.text
    assert default_index.requests(sdist.filename) == []  # not one byte of the sdist body
    fa = project.read_lock("src").package("fa")
    (artifact,) = fa.artifacts
    assert (artifact.filename, artifact.kind, artifact.sha256, artifact.size) == (
        sdist.filename, "sdist", sdist.sha256, sdist.size)
    assert fa.dependencies == ("einops",)
    assert fa.build is not None and fa.build.env == {"ARCHS": "120"} and fa.build.inputs_digest.startswith("sha256:")
    assert fa.build.tools == ("setuptools==75.0.0",)  # the override's build requirements, resolved by hash


def test_sdist_with_static_pkg_info(project, default_index):
    sdist = make_sdist("pk", "1.0", requires_dist=["lib>=1"], metadata_version="2.2")
    default_index.add(sdist)
    publish(default_index, "lib", "1.5")
    project.write_matrix("pkginfo", {"pk": "==1.0"})
    result = project.run("lock", "pkginfo")
    assert result.rc == 0, result.text
    lock = project.read_lock("pkginfo")
    assert _names(lock) == {"pk": "1.0", "lib": "1.5"}
    assert lock.package("pk").dependencies == ("lib>=1",)
    assert [a.kind for a in lock.package("pk").artifacts] == ["sdist"]


def test_sdist_with_dynamic_metadata_and_none_in_the_matrix_is_bad_input(project, default_index):
    default_index.add(make_sdist("dyn", "1.0", metadata_version="2.1"))
    project.write_matrix("dyn", {"dyn": "==1.0"})
    result = project.run("lock", "dyn")
    assert result.rc == 2 and "static metadata" in result.err and "Traceback" not in result.text, result.text


def test_git_source_by_full_commit_with_static_metadata(project, default_index, make_git_repo):
    repo = make_git_repo("engine", [{"python/pyproject.toml": "[project]\nname = 'engine'\n"}, {"README": "fix\n"}])
    publish(default_index, "lib", "1.0")
    spec = {"git": repo.url, "rev": repo.commits[-1], "subdirectory": "python",
            "metadata": {"version": "0.5.9+g1234", "requires_dist": ["lib>=1"]}}
    project.write_matrix("gitsrc", {"engine": spec})
    result = project.run("lock", "gitsrc")
    assert result.rc == 0, result.text
    engine = project.read_lock("gitsrc").package("engine")
    assert engine.version == "0.5.9+g1234" and engine.artifacts == ()
    assert engine.source.to_dict() == {"git": repo.url, "commit": repo.commits[-1], "subdirectory": "python",
                                       "tree": repo.git("rev-parse", f"{repo.commits[-1]}^{{tree}}")}
    assert engine.metadata_from == "matrix"
    assert engine.dependencies == ("lib>=1",) and engine.build is not None


def test_yanked_versions_are_skipped_unless_pinned(project, default_index):
    publish(default_index, "y", "1.0")
    publish(default_index, "y", "2.0", yanked="broken build")
    project.write_matrix("yank", {"y": ">=1"})
    assert project.run("lock", "yank").rc == 0
    assert project.read_lock("yank").package("y").version == "1.0"
    project.write_matrix("yankpin", {"y": "==2.0"})
    assert project.run("lock", "yankpin").rc == 0
    assert project.read_lock("yankpin").package("y").version == "2.0"


def test_prereleases_only_when_asked(project, default_index):
    for version in ("1.0", "2.0rc1"):
        publish(default_index, "p", version)
    publish(default_index, "onlypre", "1.0b1")
    project.write_matrix("stable", {"p": ">=1", "onlypre": ""})
    assert project.run("lock", "stable").rc == 0
    lock = project.read_lock("stable")
    assert lock.package("p").version == "1.0"
    assert lock.package("onlypre").version == "1.0b1"  # nothing else exists (PEP 440's fallback)
    project.write_matrix("pre", {"p": ">=2.0rc1"})
    assert project.run("lock", "pre").rc == 0
    assert project.read_lock("pre").package("p").version == "2.0rc1"


def test_conflict_is_explained_in_words(project, default_index):
    publish(default_index, "web", "1.0", ["core==1.0"])
    publish(default_index, "worker", "1.0", ["mid>=1"])
    publish(default_index, "mid", "1.0", ["core>=2"])
    for version in ("1.0", "2.0"):
        publish(default_index, "core", version)
    project.write_matrix("clash", {"web": "==1.0", "worker": "==1.0"})
    result = project.run("lock", "clash")
    assert result.rc == 1, result.text
    assert "clash: no set of versions satisfies" in result.err
    assert "core==1.0 (from web 1.0 <- the matrix)" in result.err, result.err
    assert "core>=2 (from mid 1.0 <- worker 1.0 <- the matrix)" in result.err, result.err
    assert "Traceback" not in result.text and not project.lock_path("clash").exists()


def test_unknown_package_is_explained(project, default_index):
    project.write_matrix("ghost", {"no-such-thing": ">=1"})
    result = project.run("lock", "ghost")
    assert result.rc == 1 and "no-such-thing" in result.err and "the matrix" in result.err, result.text


def test_conflict_through_an_extra_keeps_the_extra_in_the_message(project, default_index):
    default_index.add(make_wheel("app", "1.0", requires_dist=['core==1.0; extra == "gpu"'], provides_extra=["gpu"]))
    publish(default_index, "core", "2.0")
    project.write_matrix("extra", {"app": {"version": "==1.0", "extras": ["gpu"]}, "core": ">=2"})
    result = project.run("lock", "extra")
    assert result.rc == 1
    assert "app[gpu] 1.0" in result.err, result.err


def test_extras_markers_and_name_spellings(project, default_index):
    default_index.add(make_wheel("Web_App", "1.0", requires_dist=["Core.Lib>=1", 'gpu-lib; extra == "gpu"'],
                                 provides_extra=["gpu"]))
    publish(default_index, "core-lib", "1.0")
    publish(default_index, "gpu-lib", "1.0")
    publish(default_index, "legacy", "1.0")
    project.write_matrix("shapes", {"web-app": {"version": "==1.0", "extras": ["gpu"]},
                                    "legacy": {"version": "", "marker": "python_version < '3.12'"}})
    result = project.run("lock", "shapes")
    assert result.rc == 0, result.text
    lock = project.read_lock("shapes")
    assert _names(lock) == {"web-app": "1.0", "core-lib": "1.0", "gpu-lib": "1.0"}
    assert lock.package("web-app").dependencies == ("core-lib>=1", "gpu-lib")


def test_a_git_source_must_satisfy_its_dependents(project, default_index, make_git_repo):
    repo = make_git_repo("engine")
    publish(default_index, "plugin", "1.0", ["engine>=1.0"])
    spec = {"git": repo.url, "rev": repo.head, "metadata": {"version": "0.5.9+g1234", "requires_dist": []}}
    project.write_matrix("gitclash", {"engine": spec, "plugin": "==1.0"})
    result = project.run("lock", "gitclash")
    assert result.rc == 1, result.text
    assert "engine>=1.0 (from plugin 1.0 <- the matrix)" in result.err, result.err
    publish(default_index, "plugin", "0.9", ["engine==0.5.9"])  # a local version matches its public one
    project.write_matrix("gitok", {"engine": spec, "plugin": "==0.9"})
    assert project.run("lock", "gitok").rc == 0



def test_dependencies_recorded_are_the_pinned_candidates_not_a_backtracked_attempt(project, default_index):
    """`app 2.0` asks for `lib[fast]>=2`; resolvelib tries `lib[fast] 2.0` (recording its
    requirements), fails against the matrix's `lib==1.0` and backtracks to `app 1.0`. The lock must
    list only what the pinned candidates require: no `fastdep` under lib, no trace of the attempt."""
    default_index.add(make_wheel("lib", "2.0", requires_dist=['fastdep; extra == "fast"'], provides_extra=["fast"]))
    default_index.add(make_wheel("lib", "1.0", requires_dist=['fastdep; extra == "fast"'], provides_extra=["fast"]))
    publish(default_index, "app", "2.0", ["lib[fast]>=2"])
    publish(default_index, "app", "1.0", ["lib>=1"])
    publish(default_index, "fastdep", "1.0")
    project.write_matrix("bt", {"lib": "==1.0", "app": ">=1"})
    result = project.run("lock", "bt")
    assert result.rc == 0, result.text
    lock = project.read_lock("bt")
    assert {p.name: (p.version, p.dependencies) for p in lock.packages} == {
        "app": ("1.0", ("lib>=1",)), "lib": ("1.0", ())}
