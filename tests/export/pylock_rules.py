"""The PEP 751 (packaging.python.org "pylock.toml Specification") MUSTs, checked independently.

`packaging.pylock` validates too, and the tests run both: this checker also covers rules packaging
leaves out (file name, unknown keys, full git commit, dependency references, version absent for
source trees, one entry per name in the target environment). Each rule returns a message naming
the key, so a failing test says which rule broke.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from packaging.markers import InvalidMarker, Marker
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import is_normalized_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

TOP_KEYS = {"lock-version", "environments", "requires-python", "extras", "dependency-groups", "default-groups",
            "created-by", "packages", "tool"}
PACKAGE_KEYS = {"name", "version", "marker", "requires-python", "dependencies", "vcs", "directory", "archive",
                "index", "sdist", "wheels", "attestation-identities", "tool"}
FILE_KEYS = {"name", "upload-time", "url", "path", "size", "hashes"}
VCS_KEYS = {"type", "url", "path", "requested-revision", "commit-id", "subdirectory"}
REGISTERED_VCS = {"git", "hg", "bzr", "svn"}
FILE_NAME = re.compile(r"^pylock\.([^.]+)\.toml$")


def _marker(value: Any, where: str, errors: list[str]) -> Marker | None:
    try:
        return Marker(value)
    except (InvalidMarker, TypeError):
        errors.append(f"{where}: not a valid environment marker: {value!r}")
        return None


def _specifier(value: Any, where: str, errors: list[str]) -> None:
    try:
        SpecifierSet(value)
    except (InvalidSpecifier, TypeError):
        errors.append(f"{where}: not a valid version specifier: {value!r}")


def _strings(doc: Mapping[str, Any], key: str, where: str, errors: list[str]) -> None:
    if key in doc and not (isinstance(doc[key], list) and all(isinstance(v, str) for v in doc[key])):
        errors.append(f"{where}{key}: must be an array of strings")


def _file_name(entry: Mapping[str, Any]) -> str | None:
    if entry.get("name"):
        return entry["name"]
    for key in ("path", "url"):
        if entry.get(key):
            return unquote(PurePosixPath(urlparse(entry[key]).path).name)
    return None


def _check_file(entry: Any, where: str, errors: list[str]) -> None:
    if not isinstance(entry, Mapping):
        errors.append(f"{where}: must be a table")
        return
    errors += [f"{where}.{k}: unknown key" for k in set(entry) - FILE_KEYS]
    if not (entry.get("url") or entry.get("path")):
        errors.append(f"{where}: needs `url` or `path`")
    hashes = entry.get("hashes")
    if not isinstance(hashes, Mapping) or not hashes:
        errors.append(f"{where}.hashes: required, with at least one entry")
    elif not all(isinstance(v, str) for v in hashes.values()):
        errors.append(f"{where}.hashes: values must be strings")
    elif "sha256" not in hashes or not re.fullmatch(r"[0-9a-f]{64}", hashes["sha256"]):
        errors.append(f"{where}.hashes: a sha256 (the recommended secure algorithm) is missing or malformed")
    if "size" in entry and (not isinstance(entry["size"], int) or isinstance(entry["size"], bool) or entry["size"] < 0):
        errors.append(f"{where}.size: must be a non-negative integer")
    if "upload-time" in entry and not isinstance(entry["upload-time"], datetime.datetime):
        errors.append(f"{where}.upload-time: must be a TOML datetime (UTC)")
    name = _file_name(entry)
    if entry.get("name") and entry.get("url") and _file_name({"url": entry["url"]}) != entry["name"]:
        errors.append(f"{where}: `name` {entry['name']!r} differs from the URL's last component")
    if name is None:
        errors.append(f"{where}: no file name (name, path or url)")


def _check_identity(package: Mapping[str, Any], where: str, errors: list[str]) -> None:
    name = package.get("name")
    version = Version(package["version"]) if isinstance(package.get("version"), str) else None
    for i, wheel in enumerate(package.get("wheels") or []):
        filename = _file_name(wheel) if isinstance(wheel, Mapping) else None
        try:
            w_name, w_version, _, _ = parse_wheel_filename(filename or "")
        except Exception:  # noqa: BLE001 - any parse failure is the violation
            errors.append(f"{where}.wheels[{i}]: invalid wheel file name {filename!r}")
            continue
        if w_name != name or (version and w_version != version):
            errors.append(f"{where}.wheels[{i}]: {filename!r} is not {name} {version}")
    if isinstance(package.get("sdist"), Mapping):
        filename = _file_name(package["sdist"])
        try:
            s_name, s_version = parse_sdist_filename(filename or "")
        except Exception:  # noqa: BLE001
            errors.append(f"{where}.sdist: invalid sdist file name {filename!r}")
            return
        if s_name != name or (version and s_version != version):
            errors.append(f"{where}.sdist: {filename!r} is not {name} {version}")


def _check_vcs(vcs: Any, where: str, errors: list[str]) -> None:
    if not isinstance(vcs, Mapping):
        errors.append(f"{where}.vcs: must be a table")
        return
    errors += [f"{where}.vcs.{k}: unknown key" for k in set(vcs) - VCS_KEYS]
    if vcs.get("type") not in REGISTERED_VCS:
        errors.append(f"{where}.vcs.type: {vcs.get('type')!r} is not a registered VCS")
    if not (vcs.get("url") or vcs.get("path")):
        errors.append(f"{where}.vcs: needs `url` or `path`")
    commit = vcs.get("commit-id")
    if not isinstance(commit, str):
        errors.append(f"{where}.vcs.commit-id: required")
    elif vcs.get("type") == "git" and not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        errors.append(f"{where}.vcs.commit-id: git supports commit hashes, so a full one MUST be used")
    sub = vcs.get("subdirectory")
    if sub is not None and (not isinstance(sub, str) or sub.startswith("/") or ".." in PurePosixPath(sub).parts):
        errors.append(f"{where}.vcs.subdirectory: must be relative to the source tree root")


def _check_package(package: Any, where: str, errors: list[str]) -> None:
    if not isinstance(package, Mapping):
        errors.append(f"{where}: must be a table")
        return
    errors += [f"{where}.{k}: unknown key" for k in set(package) - PACKAGE_KEYS]
    name = package.get("name")
    if not isinstance(name, str) or not is_normalized_name(name):
        errors.append(f"{where}.name: required and normalised, got {name!r}")
    if "version" in package:
        try:
            Version(package["version"])
        except (InvalidVersion, TypeError):
            errors.append(f"{where}.version: not a version: {package['version']!r}")
    if "marker" in package:
        _marker(package["marker"], f"{where}.marker", errors)
    if "requires-python" in package:
        _specifier(package["requires-python"], f"{where}.requires-python", errors)
    direct = [k for k in ("vcs", "directory", "archive") if k in package]
    dists = [k for k in ("sdist", "wheels") if k in package]
    if len(direct) > 1 or (direct and dists):
        errors.append(f"{where}: {', '.join(direct + dists)} are mutually exclusive")
    if not direct and not dists:
        errors.append(f"{where}: no source (vcs, directory, archive, sdist or wheels)")
    if ("vcs" in package or "directory" in package) and "version" in package:
        errors.append(f"{where}.version: MUST NOT be given for a source tree (vcs/directory)")
    if "vcs" in package:
        _check_vcs(package["vcs"], where, errors)
    for key in ("archive", "sdist"):
        if key in package:
            _check_file(package[key], f"{where}.{key}", errors)
    if "wheels" in package:
        if not isinstance(package["wheels"], list) or not package["wheels"]:
            errors.append(f"{where}.wheels: must be a non-empty array of tables")
        for i, wheel in enumerate(package.get("wheels") or []):
            _check_file(wheel, f"{where}.wheels[{i}]", errors)
    if "index" in package and not (isinstance(package["index"], str) and urlparse(package["index"]).scheme):
        errors.append(f"{where}.index: must be the index's base URL")
    tool = package.get("tool", {})
    if not isinstance(tool, Mapping) or not all(isinstance(v, Mapping) for v in tool.values()):
        errors.append(f"{where}.tool: must be a table of tables")
    _check_identity(package, where, errors)


def _check_dependencies(packages: list[Mapping[str, Any]], errors: list[str]) -> None:
    for i, package in enumerate(packages):
        for j, dep in enumerate(package.get("dependencies") or []):
            matches = [p for p in packages if all(p.get(k) == v for k, v in dep.items())]
            if len(matches) != 1:
                errors.append(f"packages[{i}].dependencies[{j}]: {dep!r} matches {len(matches)} entries, "
                              "not exactly one")


def _check_single_entry(doc: Mapping[str, Any], environment: Mapping[str, str] | None, errors: list[str]) -> None:
    """All packages installed in the target environment narrow down to one entry per name."""
    if environment is None:
        return
    seen: dict[str, int] = {}
    for package in doc.get("packages", []):
        if "marker" in package and not Marker(package["marker"]).evaluate(dict(environment)):
            continue
        seen[package["name"]] = seen.get(package["name"], 0) + 1
    errors += [f"packages: {n!r} has {c} entries for the target environment" for n, c in seen.items() if c > 1]


def violations(doc: Mapping[str, Any], file_name: str | None = None,
               environment: Mapping[str, str] | None = None) -> list[str]:
    """Every PEP 751 rule `doc` breaks (empty when valid); `environment`: marker values of the target."""
    errors: list[str] = []
    if file_name is not None and not (file_name == "pylock.toml" or FILE_NAME.fullmatch(file_name)):
        errors.append(f"file name {file_name!r}: must be pylock.toml or pylock.<name>.toml")
    errors += [f"{k}: unknown top-level key" for k in set(doc) - TOP_KEYS]
    if doc.get("lock-version") != "1.0":
        errors.append(f"lock-version: must be the string '1.0', got {doc.get('lock-version')!r}")
    if not isinstance(doc.get("created-by"), str) or not doc.get("created-by"):
        errors.append("created-by: required string")
    for key in ("environments", "extras", "dependency-groups", "default-groups"):
        _strings(doc, key, "", errors)
    markers = [_marker(m, "environments", errors) for m in doc.get("environments", [])]
    if "requires-python" in doc:
        _specifier(doc["requires-python"], "requires-python", errors)
    packages = doc.get("packages")
    if not isinstance(packages, list):
        return [*errors, "packages: required array of tables"]
    for i, package in enumerate(packages):
        _check_package(package, f"packages[{i}]", errors)
    if not errors:
        _check_dependencies(packages, errors)
        _check_single_entry(doc, environment, errors)
    if environment is not None and markers and not any(m and m.evaluate(dict(environment)) for m in markers):
        errors.append("environments: no marker holds in the target environment")
    tool = doc.get("tool", {})
    if not isinstance(tool, Mapping) or not all(isinstance(v, Mapping) for v in tool.values()):
        errors.append("tool: must be a table of tables")
    return errors
