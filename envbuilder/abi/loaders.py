"""What a package's import code loads by itself, from `knowledge/loaders.yaml`.

Why data: torch dlopens libtorch_global_deps RTLD_GLOBAL and torchaudio loads libtorchaudio
through torch.ops.load_library before its extension; neither shows in any DT_NEEDED. Which
package does what is a sourced fact, not code.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable
from importlib import resources

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError
from ruamel.yaml import YAML

from envbuilder.errors import BadInput
from envbuilder.model import StrictModel


class Loader(StrictModel):
    package: str
    versions: str
    global_: tuple[str, ...] = Field((), alias="global")
    preload: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    alternatives: bool = False
    optional: tuple[str, ...] = ()
    source: str

    def is_optional(self, path: str) -> bool:
        """Whether `path` is one of the modules the import code loads inside a try and runs without."""
        import fnmatch

        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.optional)

    def preloaded(self, paths) -> list[str]:
        """Install paths the `preload` globs name, in the order the loader code opens them."""
        import fnmatch

        out: list[str] = []
        for pattern in self.preload:
            out += [p for p in sorted(paths) if fnmatch.fnmatchcase(p, pattern) and p not in out]
        return out

    def matches(self, name: str, version: str) -> bool:
        if canonicalize_name(name) != canonicalize_name(self.package):
            return False
        try:
            return Version(version) in SpecifierSet(self.versions)
        except (InvalidVersion, InvalidSpecifier):
            return False


class _File(StrictModel):
    loaders: tuple[Loader, ...]


@lru_cache(maxsize=1)
def shipped() -> tuple[Loader, ...]:
    text = (resources.files("envbuilder.knowledge") / "loaders.yaml").read_text()
    try:
        return _File.model_validate(YAML(typ="safe").load(text)).loaders
    except (ValidationError, ValueError) as exc:
        raise BadInput(f"envbuilder/knowledge/loaders.yaml: {exc}") from exc


def optional_module(name: str, version: str) -> Callable[[str], bool]:
    """For `linkage_facets`: which of the package's files its import survives without (none unless
    `loaders.yaml` says so with a source)."""
    loader = loader_for(shipped(), name, version)
    return loader.is_optional if loader is not None else (lambda _path: False)


def loader_for(loaders: tuple[Loader, ...], name: str, version: str) -> Loader | None:
    return next((loader for loader in loaders if loader.matches(name, version)), None)
