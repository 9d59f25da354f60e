"""The locked venv as image layers, ordered by how rarely each part changes.

One `RUN pip install` of the whole venv makes one layer: bumping the served application (or tqdm)
then rewrites the CUDA libraries and torch too, and every node pulls gigabytes again. Here the lock
alone decides the layers (Jib's dependencies/application split and Nix's most-shared-first order
are the models), from its structure, never from package names:

- native libraries: binary wheels that another binary wheel depends on and that depend on no
  binary themselves (CUDA libraries, triton): the biggest and the rarest to change;
- native core: binary wheels between the two (torch: it needs the libraries, kernels need it);
- native consumers: binary wheels built against another binary (kernels, vision/audio extensions);
- binaries: every other compiled wheel (numpy, pydantic-core, markupsafe: small, bumped often);
- source-built: wheels the image compiles from locked sources in their own stages;
- pure: the pure-Python dependencies;
- application: what the matrix asks for that nothing in the lock depends on (the served program).

A change in one group leaves every group below it byte-identical and cached. A matrix may move a
package to another group (`layers.assign`) and cap the number of layers (`layers.max`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envbuilder.lock.model import Lock, LockedPackage

#: Groups, lowest (rarest change) first; the order of the layers in the image.
GROUPS = ("native-libraries", "native-core", "native-consumers", "binaries", "source-built", "pure",
          "application")
DEFAULT_MAX_LAYERS = len(GROUPS)
#: A binary wheel with this share of the lock's bytes or more anchors the native base.
HEAVY_SHARE = 0.01


@dataclass(frozen=True)
class Layer:
    """One image layer of the venv: its packages and their predicted size from the lock."""

    index: int
    group: str
    packages: tuple[LockedPackage, ...]

    @property
    def name(self) -> str:
        return f"layer-{self.index}-{self.group}"

    @property
    def size(self) -> int:
        """Compressed bytes of the artifacts installed (the lock's sizes; 0 where a size is absent)."""
        return sum(artifact_size(p) for p in self.packages)

    @property
    def source_built(self) -> bool:
        return all(p.build is not None for p in self.packages)


def artifact_size(pkg: LockedPackage) -> int:
    return sum(a.size or 0 for a in pkg.artifacts)


def is_binary(pkg: LockedPackage) -> bool:
    """A wheel with a platform tag other than `any` carries compiled code."""
    for artifact in pkg.artifacts:
        if artifact.kind != "wheel":
            continue
        try:
            tags = parse_wheel_filename(artifact.filename)[3]
        except InvalidWheelFilename:
            continue
        if any(tag.platform != "any" for tag in tags):
            return True
    return False


def _dependency_names(pkg: LockedPackage) -> set[str]:
    names = set()
    for text in pkg.dependencies:
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
    return names


def _closure(start: Iterable[str], edges: Mapping[str, set[str]]) -> set[str]:
    """Every package reachable from `start` along dependency edges (start included)."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += edges.get(name, ())
    return seen


def classify(lock: Lock, heavy_share: float = HEAVY_SHARE) -> dict[str, str]:
    """Package (normalised name) -> group, from the lock's files, sizes and dependency edges alone.

    The native base is every heavy binary (at least `heavy_share` of the lock's bytes) and the
    binaries those need; consumers are binaries built on top of a heavy one that no heavy binary
    needs. Within the base, what needs no other base binary is a library, the rest is core.
    """
    packages = {canonicalize_name(p.name): p for p in lock.packages}
    edges = {name: _dependency_names(p) & packages.keys() for name, p in packages.items()}
    binaries = {n for n, p in packages.items() if p.build is None and is_binary(p)}
    total = sum(artifact_size(p) for p in packages.values()) or 1
    heavy = {n for n in binaries if artifact_size(packages[n]) >= heavy_share * total}
    needed_by_heavy = {d for h in heavy for d in _closure(edges[h], edges)} & binaries
    consumers = {n for n in binaries if _closure(edges[n], edges) & heavy} - needed_by_heavy
    base = (heavy | needed_by_heavy) - consumers
    dependents = {d for deps in edges.values() for d in deps}
    groups: dict[str, str] = {}
    for name, pkg in packages.items():
        if pkg.build is not None:
            groups[name] = "source-built"
        elif name in base:
            below = _closure(edges[name], edges) & (base - {name})
            groups[name] = "native-core" if below else "native-libraries"
        elif name in consumers:
            groups[name] = "native-consumers"
        elif name in binaries:
            groups[name] = "binaries"
        elif pkg.requested is not None and name not in dependents:
            groups[name] = "application"
        else:
            groups[name] = "pure"
    return groups


def _merge_smallest(groups: list[tuple[str, list[LockedPackage]]], cap: int) -> list[tuple[str, list[LockedPackage]]]:
    """Join the adjacent pair with the fewest bytes until the cap holds (order kept; the upper
    group's name stays, since its packages change more often)."""
    groups = list(groups)
    while len(groups) > max(cap, 1):
        sizes = [sum(artifact_size(p) for p in pkgs) for _, pkgs in groups]
        i = min(range(len(groups) - 1), key=lambda k: (sizes[k] + sizes[k + 1], k))
        groups[i:i + 2] = [(groups[i + 1][0], groups[i][1] + groups[i + 1][1])]
    return groups


def plan_layers(lock: Lock, packages: Iterable[LockedPackage], assign: Mapping[str, str] | None = None,
                max_layers: int = DEFAULT_MAX_LAYERS) -> tuple[Layer, ...]:
    """Layers for `packages` (the ones the venv installs), lowest first, empty groups left out."""
    groups = classify(lock)
    groups.update({canonicalize_name(k): v for k, v in (assign or {}).items()})
    by_group: dict[str, list[LockedPackage]] = {g: [] for g in GROUPS}
    for pkg in sorted(packages, key=lambda p: canonicalize_name(p.name)):
        by_group[groups[canonicalize_name(pkg.name)]].append(pkg)
    filled = _merge_smallest([(g, pkgs) for g, pkgs in by_group.items() if pkgs], max_layers)
    return tuple(Layer(i, group, tuple(pkgs)) for i, (group, pkgs) in enumerate(filled, start=1))


def changed_bytes(before: tuple[Layer, ...], after: tuple[Layer, ...], chain: bool) -> int:
    """Predicted bytes a node pulls after a change: the layers whose packages changed, and in a
    chain every layer above the lowest changed one (their instructions re-run; identical content
    may still dedupe, which this upper bound ignores)."""
    old = {layer.group: _identity(layer) for layer in before}
    changed = [i for i, layer in enumerate(after) if old.get(layer.group) != _identity(layer)]
    if not changed:
        return 0
    moved = after[changed[0]:] if chain else [after[i] for i in changed]
    return sum(layer.size for layer in moved)


def _identity(layer: Layer) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return tuple((p.name, p.version, tuple(sorted(a.sha256 for a in p.artifacts))) for p in layer.packages)
