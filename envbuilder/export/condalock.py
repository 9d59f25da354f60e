"""The lock as a conda-lock unified lockfile, written with conda-lock's own models and writer.

Every package is a `manager: pip` entry for the target's conda platform with its file URL (from
the user's index at export time) and sha256, which is what `conda-lock install` hands to pip.
The interpreter is *not* a conda entry: the lock pins Python only to major.minor and takes it from
the base image, and a conda entry needs an exact conda build, its URL and its md5 -- facts
envbuilder never resolved. Writing one would be a guess, so the Python version is recorded in the
metadata instead and the user's environment supplies the interpreter.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from conda_lock.lockfile import write_conda_lock_file
from conda_lock.lockfile.v2prelim.models import DependencySource, HashModel, LockedDependency, Lockfile, LockMeta

from envbuilder.export import environment
from envbuilder.export.selection import Entry, Selection
from envbuilder.export.urls import Located

CATEGORY = "main"


def _git_url(entry: Entry) -> str:
    source = entry.package.source
    url = f"git+{source.git}@{source.commit}"
    return url + (f"#subdirectory={source.subdirectory}" if source.subdirectory else "")


def _dependency(entry: Entry, selection: Selection, located: Mapping[str, Located]) -> LockedDependency:
    lock = selection.lock
    names = {str(n) for n in selection.names}
    deps = {d: spec for d, spec in entry.dependency_specs().items() if d in names}
    common = dict(name=entry.name, version=entry.version, manager="pip", platform=environment.conda_platform(lock),
                  dependencies=deps, categories={CATEGORY})
    if entry.is_git:
        url = _git_url(entry)
        return LockedDependency(**common, url=url, hash=HashModel(), source=DependencySource(type="url", url=url))
    # conda-lock keys entries by (manager, name, platform): one file each, the one the target installs.
    artifact = environment.best_artifact(lock, entry.artifacts)
    return LockedDependency(**common, url=located[entry.name].url(artifact), hash=HashModel(sha256=artifact.sha256))


def _metadata(selection: Selection, origin: str) -> LockMeta:
    lock = selection.lock
    platform = environment.conda_platform(lock)
    custom = {
        "envbuilder.target": lock.target,
        "envbuilder.lock-digest": lock.digest,
        "envbuilder.python": environment.python_version(lock),
        "envbuilder.environment": environment.environment_marker(lock),
        "envbuilder.interpreter": "not locked as a conda package: supply Python "
                                  f"{environment.python_version(lock)} (the target's base image does)",
    }
    if selection.skipped:
        custom["envbuilder.skipped-source-builds"] = " ".join(e.pin for e in selection.skipped)
    return LockMeta(content_hash={platform: lock.digest.removeprefix("sha256:")}, channels=[],
                    platforms=[platform], sources=[origin], custom_metadata=custom)


def build(selection: Selection, located: Mapping[str, Located], origin: str = "<lock>") -> Lockfile:
    packages = [_dependency(e, selection, located) for e in selection.entries]
    return Lockfile(package=packages, metadata=_metadata(selection, origin))


def _comment_safe(text: str) -> str:
    """A value shown in a YAML comment: one line of plain characters, so it cannot end the comment."""
    return re.sub(r"[^\w.\-/+@:<>]", "_", text)


def header(selection: Selection, origin: str, file_name: str) -> str:
    """Our own help text: conda-lock's would suggest `conda-lock -f <our lock>`, which it cannot read."""
    lock = selection.lock
    target, origin, name = (_comment_safe(v) for v in (lock.target, origin, file_name))
    return (f"# Exported by envbuilder from {origin} (target {target}, lock {_comment_safe(lock.digest)}).\n"
            "# DO NOT EDIT: change the matrix, re-lock and export again.\n"
            "#\n"
            "# Install this environment as \"YOURENV\" with:\n"
            f"#     conda-lock install -n YOURENV {name}\n"
            "# To update a package (conda-lock cannot re-solve an envbuilder lock):\n"
            f"#     envbuilder lock {target} --upgrade-package PACKAGE\n"
            f"#     envbuilder export {target} --format conda-lock -o {name}\n")


def render(selection: Selection, located: Mapping[str, Located], origin: str = "<lock>",
           file_name: str = "conda-lock.yml") -> str:
    """YAML text from conda-lock's own writer, under envbuilder's header instead of conda-lock's help text."""
    lockfile = build(selection, located, origin)
    with tempfile.TemporaryDirectory(prefix="envbuilder-conda-lock-") as tmp:
        path = Path(tmp) / "conda-lock.yml"
        write_conda_lock_file(lockfile, path, metadata_choices=None, include_help_text=False)
        return header(selection, origin, file_name) + path.read_text(encoding="utf-8")
