"""Link an installed environment from its files: what `verify` checks inside a built image.

Why the installed files: they are the bytes the image will load, the same ELFs the lock's wheels
held, so the linker model gives the verdict `lock --link` and the gate gave, offline and with no
cache. Each distribution's RECORD says which files are its own; ELFs are read in place (no
inflating, no hashing: nothing is cached from here).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

from envbuilder.abi import loaders, systems
from envbuilder.abi.elf import ELF_MAGIC, NotElf
from envbuilder.abi.link import LinkPackage, LinkReport, link
from envbuilder.abi.linkage import WheelLinkage, is_elf_candidate, summarize_elf
from envbuilder.abi.linkcheck import marker_environment, requires_dist


def _summary(dist: metadata.Distribution, root: Path) -> WheelLinkage:
    elfs = []
    for file in dist.files or ():
        path = str(file)
        if not is_elf_candidate(path) or path.startswith(".."):
            continue
        full = root / path
        try:
            with full.open("rb") as stream:
                if stream.read(4) != ELF_MAGIC:
                    continue
                elfs.append(summarize_elf(stream, path, "", full.stat().st_size))
        except (OSError, NotElf):
            continue
    name = dist.metadata["Name"] or "?"
    return WheelLinkage(filename=f"{name}-{dist.version} (installed)", sha256="",
                        elfs=tuple(sorted(elfs, key=lambda e: e.path)))


def link_installed(site_packages: list[Path], manifest: str, python: str, target_arch: str | None = None) -> LinkReport:
    """Link every distribution installed in `site_packages` (the first folder holding each one)."""
    env = marker_environment(python)
    packages: dict[str, LinkPackage] = {}
    for root in site_packages:
        for dist in metadata.distributions(path=[str(root)]):
            name = canonicalize_name(dist.metadata["Name"] or "")
            if not name or name in packages:
                continue
            text = dist.read_text("METADATA") or ""
            packages[name] = LinkPackage(name=name, version=dist.version, depends=tuple(requires_dist(text, env)),
                                         linkage=_summary(dist, root))
    present = set(packages)
    closure = [LinkPackage(p.name, p.version, tuple(d for d in p.depends if d in present), p.linkage)
               for p in packages.values()]
    return link(closure, systems.load(manifest), loaders.shipped(), target_arch=target_arch)
