"""The lock's target environment as the export formats spell it.

An export describes the target, never the host that ran `envbuilder export`: pylock's
`environments`/`requires-python`, conda-lock's platform and the wheel picked for it all come from
`Lock.environment`, which the resolver wrote from the matrix.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

from packaging.markers import Marker
from packaging.utils import parse_wheel_filename

from envbuilder.errors import BadInput
from envbuilder.lock.model import Artifact, Lock

if TYPE_CHECKING:
    from envbuilder.resolve.environment import TargetEnvironment

#: Markers that pin the target down; the lock may carry more (they are only informational here).
_MARKERS = ("sys_platform", "platform_machine", "implementation_name", "python_version")
_CONDA_PLATFORMS = {("linux", "x86_64"): "linux-64", ("linux", "aarch64"): "linux-aarch64"}


def _value(lock: Lock, *keys: str) -> str | None:
    for key in keys:
        value = lock.environment.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def python_version(lock: Lock) -> str:
    """'3.11': the interpreter's major.minor the lock was resolved for."""
    value = _value(lock, "python_version", "python")
    if value is None or not re.fullmatch(r"3\.\d+(\.\d+)?", value):
        raise BadInput(f"lock for {lock.target!r}: key 'environment.python_version' is missing or not "
                       f"a Python version ({value!r})")
    return ".".join(value.split(".")[:2])


def machine(lock: Lock) -> str:
    return _value(lock, "platform_machine", "machine") or "x86_64"


def system(lock: Lock) -> str:
    return _value(lock, "sys_platform", "os") or "linux"


def requires_python(lock: Lock) -> str:
    return f"=={python_version(lock)}.*"


def environment_marker(lock: Lock) -> str:
    """One PEP 508 marker that holds exactly on the target (and is checked by installers)."""
    values = {"sys_platform": system(lock), "platform_machine": machine(lock),
              "python_version": python_version(lock)}
    implementation = _value(lock, "implementation_name")
    if implementation:
        values["implementation_name"] = implementation
    marker = " and ".join(f"{key} == '{values[key]}'" for key in _MARKERS if key in values)
    Marker(marker)  # a lock value that breaks marker syntax must fail here, not in the user's installer
    return marker


def conda_platform(lock: Lock) -> str:
    key = (system(lock), machine(lock))
    if key not in _CONDA_PLATFORMS:
        raise BadInput(f"lock for {lock.target!r}: key 'environment': no conda platform for {key[0]} {key[1]}")
    return _CONDA_PLATFORMS[key]


def target(lock: Lock) -> TargetEnvironment:
    """The resolver's own view of the target, so wheel choice here matches the lock's."""
    # imported here: the resolver package is heavy, and only conda-lock's wheel choice needs it
    from pydantic import ValidationError

    from envbuilder.matrix.schema import Platform
    from envbuilder.resolve.environment import TargetEnvironment

    try:
        platform = Platform(os=system(lock), machine=machine(lock), libc=_value(lock, "libc") or "glibc_2.17",
                            python=python_version(lock))
    except ValidationError as exc:
        raise BadInput(f"lock for {lock.target!r}: key 'environment': {exc.errors()[0]['msg']}") from None
    return TargetEnvironment(platform)


def best_artifact(lock: Lock, artifacts: tuple[Artifact, ...]) -> Artifact:
    """The one file an installer would take on the target: the best-ranked wheel, else the sdist."""
    env = target(lock)
    worst = len(env.tag_priority) + 1

    def score(artifact: Artifact) -> int:
        if artifact.kind != "wheel":
            return worst + 1
        rank = env.wheel_rank(parse_wheel_filename(artifact.filename)[3])
        return worst if rank is None else rank

    return min(artifacts, key=lambda a: (score(a), a.filename))
