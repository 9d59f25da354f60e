"""The difference between two locks of one target, as lines a reviewer reads.

`lock --check` compares the committed lock with what the matrix resolves to now; a lock whose form
is valid can still lie in its content (a zeroed sha256, a version nobody resolved), and these lines
say where, with both values. Packages are matched by name, artifacts by file name.
"""

from __future__ import annotations

from typing import Any

from envbuilder.lock.model import Lock


def differences(locked: Lock, resolved: Lock) -> list[str]:
    """Every key whose value differs, as 'where: lock has X, the matrix resolves to Y'."""
    old, new = locked.to_dict(), resolved.to_dict()
    lines = []
    for section, key in (("package", "name"), ("build-package", "pin")):
        before = {_key(p, key): p for p in old.pop(section, [])}
        after = {_key(p, key): p for p in new.pop(section, [])}
        lines += _entries(section, before, after)
    return _diff(old, new, "") + lines


def _key(entry: dict[str, Any], key: str) -> str:
    """Packages match by name; build packages by name==version (two builds may need two versions)."""
    return entry["name"] if key == "name" else f"{entry['name']}=={entry['version']}"


def _entries(section: str, old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    lines = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a is None:
            lines.append(f"{section} {name} {b['version']}: the matrix resolves to it, the lock lacks it")
        elif b is None:
            lines.append(f"{section} {name} {a['version']}: in the lock, but the matrix does not resolve to it")
        else:
            a, b = dict(a), dict(b)
            files_a = {f["file"]: f for f in a.pop("artifacts")}
            files_b = {f["file"]: f for f in b.pop("artifacts")}
            where = f"{section} {name}"
            lines += _diff(a, b, where)
            for file in sorted(files_a.keys() | files_b.keys()):
                lines += _diff(files_a.get(file), files_b.get(file), f"{where}, artifact {file}")
    return lines


def _diff(a: Any, b: Any, label: str, keys: tuple[str, ...] = ()) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [line for key in sorted(a.keys() | b.keys(), key=str)
                for line in _diff(a.get(key), b.get(key), label, (*keys, str(key)))]
    if a == b:
        return []
    where = ", ".join(part for part in (label, ".".join(keys)) if part)
    return [f"{where}: lock has {_show(a)}, the matrix resolves to {_show(b)}"]


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict) and "file" in value:
        return f"{value['file']} (sha256 {value.get('sha256')}, size {value.get('size')})"
    return repr(value)
