"""System manifests: which libraries and symbol versions a base image gives every process.

Why data: the same wheel links on Ubuntu 24.04 (GLIBCXX up to 3.4.33) and fails on Debian 12
(3.4.30). Each manifest is a YAML file in `envbuilder/knowledge/systems/`, with its `source:`
(public data, or the image it was generated from). Libraries the driver mounts at run time
(`libcuda.so.1`) are declared by every manifest that targets a GPU, never found on the host.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import orjson
from pydantic import ValidationError
from ruamel.yaml import YAML

from envbuilder.errors import BadInput
from envbuilder.model import StrictModel

_ID = re.compile(r"^[a-z0-9][a-z0-9.\-]*$")
_VERSION = re.compile(r"^([A-Z][A-Z_]*?)_([0-9][0-9.]*|[A-Z][A-Z0-9_]*)$")
# Versions the loader accepts from any glibc (private, internal) without listing them.
_ALWAYS = {"GLIBC_PRIVATE"}
# Libraries a CUDA process gets from the host driver (the NVIDIA container toolkit mounts them).
DRIVER_LIBRARIES = ("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1")


class SystemLibrary(StrictModel):
    families: tuple[str, ...] = ()
    # Digests of the exported symbols when generated from a real image; absent: opaque.
    defined: str | None = None
    any_version: bool = False  # added by an apt package: its symbol versions are not recorded


class AptPackage(StrictModel):
    sonames: tuple[str, ...]
    source: str


class _AptFile(StrictModel):
    packages: dict[str, AptPackage]


class SystemManifest(StrictModel):
    id: str
    source: str
    glibc: str
    images: tuple[str, ...] = ()
    libraries: dict[str, SystemLibrary]
    versions: dict[str, tuple[str, ...]]
    driver: tuple[str, ...] = DRIVER_LIBRARIES

    def has(self, soname: str) -> bool:
        return soname in self.libraries or soname in self.driver

    def provides_version(self, soname: str, version: str) -> bool:
        """Does the system's `soname` define symbol version `version` (GLIBC_2.34, GLIBCXX_3.4.32)?"""
        if version in _ALWAYS or soname in self.driver:
            return True
        if soname in self.libraries and self.libraries[soname].any_version:
            return True
        match = _VERSION.match(version)
        library = self.libraries.get(soname)
        if match is None or library is None:
            return False
        family, number = match.groups()
        return family in library.families and number in self.versions.get(family, ())


    def with_apt(self, apt: tuple[str, ...] | list[str]) -> "SystemManifest":
        """This manifest plus the libraries the target's apt packages install (knowledge/apt-libraries.yaml)."""
        known = apt_packages()
        extra = {soname: SystemLibrary(any_version=True) for name in apt if name in known
                 for soname in known[name].sonames if soname not in self.libraries}
        return self.model_copy(update={"libraries": {**self.libraries, **extra}}) if extra else self


@lru_cache(maxsize=1)
def apt_packages() -> dict[str, AptPackage]:
    text = (resources.files("envbuilder.knowledge") / "apt-libraries.yaml").read_text()
    try:
        return _AptFile.model_validate(YAML(typ="safe").load(text)).packages
    except (ValidationError, ValueError) as exc:
        raise BadInput(f"envbuilder/knowledge/apt-libraries.yaml: {exc}") from exc


def available() -> list[str]:
    folder = resources.files("envbuilder.knowledge") / "systems"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=None)
def load(system_id: str) -> SystemManifest:
    """The shipped manifest `system_id` (e.g. 'debian-12', 'ubuntu-24.04')."""
    if not _ID.match(system_id) or system_id not in available():
        raise BadInput(f"unknown system manifest {system_id!r}; known: {', '.join(available())}")
    path = resources.files("envbuilder.knowledge") / "systems" / f"{system_id}.yaml"
    try:
        text = path.read_text()
        data = YAML(typ="safe").load(text) if not text.lstrip("# \n").startswith("{") and "\n{" not in text \
            else orjson.loads(text[text.index("{"):])
        return SystemManifest.model_validate(data)
    except (ValidationError, ValueError, orjson.JSONDecodeError) as exc:
        raise BadInput(f"envbuilder/knowledge/systems/{system_id}.yaml: invalid manifest: {exc}") from exc


def for_image(base_image: str | None) -> SystemManifest | None:
    """The manifest whose `images` patterns match the base image reference (tag or digest form)."""
    import fnmatch

    if not base_image:
        return None
    reference = base_image.split("@")[0].lower()
    best: tuple[int, SystemManifest] | None = None
    for system_id in available():
        manifest = load(system_id)
        for pattern in manifest.images:
            if fnmatch.fnmatch(reference, f"*{pattern}*") and (best is None or len(pattern) > best[0]):
                best = (len(pattern), manifest)  # the most specific pattern wins (bookworm-slim over bookworm)
    return best[1] if best else None
