"""Read the pinned versions of an environment a user already has, whatever file holds them.

Why every package becomes a pin in the matrix: the promise of `init` is a lock with the *same*
versions as the working machine, and a resolver given only the top-level names would pick newer
ones. Inputs are hostile text: every name and version is parsed by `packaging` before it goes
anywhere, and lines that name no index package (editable installs, direct URLs) are reported, not
guessed at.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.errors import BadInput


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    specifier: str  # "==2.9.1", or what a requirements line asked for


@dataclass(frozen=True)
class Found:
    """What one input file gave: pins, the Python it names (if any), and lines left out (with why)."""

    pins: tuple[Pin, ...]
    python: str | None = None
    skipped: tuple[str, ...] = field(default=())


def _pin(name: str, version: str, where: str) -> Pin:
    try:
        Version(version)
    except InvalidVersion:
        raise BadInput(f"{where}: {name} has version {version!r}, which is not a version") from None
    return Pin(canonicalize_name(name), f"=={version}")


def read_requirements(path: Path, text: str) -> Found:
    """A requirements file or `pip freeze` output: one requirement a line; options and hashes ignored."""
    pins, skipped = {}, []
    lines = text.replace("\\\n", " ").splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):  # -r, -c, -i, -e, --hash on its own line: not a package pin
            skipped.append(f"{path}:{number}: {line.split()[0]} (an option, not a package)")
            continue
        text_part = line.split(" --", 1)[0].strip()  # `name==1.0 --hash=sha256:...`
        try:
            req = Requirement(text_part)
        except InvalidRequirement as exc:
            raise BadInput(f"{path}:{number}: not a requirement: {text_part!r} ({exc})") from None
        if req.url:
            skipped.append(f"{path}:{number}: {req.name} @ a direct URL (add it to the matrix as a git source)")
            continue
        spec = str(req.specifier)
        if not spec:
            skipped.append(f"{path}:{number}: {req.name} has no version (left to the resolver)")
        marker = f"; {req.marker}" if req.marker else ""
        pins[canonicalize_name(req.name)] = Pin(canonicalize_name(req.name), spec + marker if spec else "")
    return Found(tuple(pins.values()), skipped=tuple(skipped))


def _toml(path: Path, text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not TOML: {exc}") from None


def _python_of(requires_python: object) -> str | None:
    """">=3.12" -> "3.12": the lowest Python a lock says it supports."""
    if not isinstance(requires_python, str):
        return None
    for part in requires_python.split(","):
        part = part.strip()
        if part.startswith((">=", "==", "~=")):
            digits = part.lstrip(">=~").strip().split(".")
            if len(digits) >= 2 and digits[0].isdigit() and digits[1].isdigit():
                return f"{digits[0]}.{digits[1]}"
    return None


def read_uv_lock(path: Path, text: str) -> Found:
    """uv.lock: every `[[package]]` from a registry; the project itself (virtual/editable) is left out."""
    data = _toml(path, text)
    pins, skipped = {}, []
    for i, package in enumerate(data.get("package", [])):
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            raise BadInput(f"{path}: package[{i}] has no name")
        source = package.get("source", {}) if isinstance(package.get("source"), dict) else {}
        if "registry" not in source:
            kind = next(iter(source), "unknown")
            skipped.append(f"{path}: {package['name']} from a {kind} source (not an index package)")
            continue
        version = package.get("version")
        if not isinstance(version, str):
            raise BadInput(f"{path}: package[{i}] ({package['name']}) has no version")
        pin = _pin(package["name"], version, f"{path}: package[{i}]")
        pins[pin.name] = pin
    return Found(tuple(pins.values()), python=_python_of(data.get("requires-python")), skipped=tuple(skipped))


def read_pylock(path: Path, text: str) -> Found:
    """PEP 751 pylock.toml: every `[[packages]]` with a version; VCS and directory entries reported."""
    data = _toml(path, text)
    pins, skipped = {}, []
    for i, package in enumerate(data.get("packages", [])):
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            raise BadInput(f"{path}: packages[{i}] has no name")
        version = package.get("version")
        if not isinstance(version, str) or "vcs" in package or "directory" in package:
            skipped.append(f"{path}: {package['name']} has no index version (a VCS or directory entry)")
            continue
        pin = _pin(package["name"], version, f"{path}: packages[{i}]")
        pins[pin.name] = pin
    return Found(tuple(pins.values()), python=_python_of(data.get("requires-python")), skipped=tuple(skipped))


def read_any(path: Path) -> Found:
    """By file name: uv.lock, pylock*.toml, else a requirements / pip freeze file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"option --from: cannot read {path}: {exc}") from None
    name = path.name
    if name == "uv.lock":
        return read_uv_lock(path, text)
    if name.startswith("pylock") and name.endswith(".toml"):
        return read_pylock(path, text)
    return read_requirements(path, text)
